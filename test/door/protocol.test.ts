import t from 'tap'
import { MessageChannel, Worker } from 'node:worker_threads'
import { answerClock, bindFaults, clockOf, errorData, errorFrom, shareFaults, systemOffset } from '../../src/door/protocol.ts'
import { ManualClock, systemClock } from '../../src/host/reference-host.ts'
import { EpxError, isEpxError } from '../../src/errors.ts'
import type { StoreFaults } from '../../src/store/open-store.ts'

// What crosses between the host's thread and the door's worker keeps its meaning.

t.test('a catalogue error crosses with its code, status, message and details', async t => {
  const sent = new EpxError('INVALID_PROGRAMME_SOUTIRAGE_REQUEST', ['bad slots'], { details: { '/sites/0': 'overlaps' } })
  const back = errorFrom(structuredClone(errorData(sent)))
  t.ok(isEpxError(back))
  t.match(back, { code: sent.code, status: 400, message: sent.message, details: { '/sites/0': 'overlaps' } })
})

t.test('any other error crosses as an Error with its message and stack (an INTERNAL for the door)', async t => {
  const back = errorFrom(structuredClone(errorData(new TypeError('boom'))))
  t.notOk(isEpxError(back))
  t.equal(back.message, 'boom')
  t.match(back.stack, /TypeError: boom/)
  t.equal(errorFrom(errorData('a string')).message, 'a string')
})

t.test('the system clock is read in the worker; a clock that stands still is asked of the host', async t => {
  t.type(systemOffset(systemClock), 'number')
  t.equal(systemOffset(new ManualClock('2026-11-21T12:30:00Z')), undefined)
  t.equal(systemOffset(new ManualClock(new Date())), undefined, 'even one set to now')
  const shifted = clockOf({ kind: 'system', offsetMs: 60_000 }).now().getTime() - Date.now()
  t.ok(shifted >= 59_000 && shifted <= 61_000, 'the offset is kept')
})

t.test('an asked clock gives the host clock\'s exact time, as it moves', async t => {
  const clock = new ManualClock('2026-11-21T12:30:00Z')
  const { port1, port2 } = new MessageChannel()
  const cell = new SharedArrayBuffer(16)
  answerClock(clock, port1, cell)
  t.teardown(() => port1.close())
  const asker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads')
    const flag = new Int32Array(workerData.cell, 0, 1)
    const ms = new Float64Array(workerData.cell, 8, 1)
    parentPort.on('message', () => {
      Atomics.store(flag, 0, 0); workerData.port.postMessage(0); Atomics.wait(flag, 0, 0, 1000)
      parentPort.postMessage(new Date(ms[0]).toISOString())
    })`, { eval: true, workerData: { cell, port: port2 }, transferList: [port2] })
  t.teardown(() => asker.terminate())
  const ask = () => new Promise<string>(resolve => { asker.once('message', resolve); asker.postMessage(0) })
  t.equal(await ask(), '2026-11-21T12:30:00.000Z')
  clock.advance(3_600_000)
  t.equal(await ask(), '2026-11-21T13:30:00.000Z', 'an advance is seen at once')
})

t.test('the fault switches a test holds are the ones the door\'s store reads', async t => {
  const held: StoreFaults = { failWriteAfter: 3 }
  const cell = shareFaults(held)
  const door = bindFaults({}, cell)
  t.equal(door.failWriteAfter, 3, 'a value set before sharing is kept')
  t.equal(door.unavailable, undefined)
  held.unavailable = true
  t.equal(door.unavailable, true)
  door.failWriteAfter = undefined   // what the store does once it failed a write
  t.equal(held.failWriteAfter, undefined)
  held.unavailable = false
  t.notOk(door.unavailable)
})
