import t, { type Test } from 'tap'
import pino from 'pino'
import { eventsIn, eventsOut, R, type EventsMessage, type Observed } from '../../src/http/door-events.ts'
import type { HandedBatch } from '../../src/apply/enqueue.ts'
import type { Logger } from '../../src/host/contract.ts'
import type { InstructionBatch } from '../../src/contract/instruction.ts'

// What the door's worker tells the solver's thread: every line, receipt and programme
// arrives as it was told, and costs that thread as little as the protocol can make it.

const ALL: Observed = { answered: true, handshakes: true, programmes: true }

/** Both ends in this thread: each message cloned as postMessage would, read by the solver's side. */
function pair (t: Test, o: { observed?: Observed; handOver?: (b: HandedBatch[], done: () => void) => void } = {}) {
  const lines: any[] = []
  const log = pino({ level: 'debug' }, { write: (l: string) => { lines.push(JSON.parse(l)) } }) as unknown as Logger
  const receipts: unknown[][] = []
  const answered: unknown[][] = []
  const programmes: unknown[] = []
  let handshakes = 0
  const handed: HandedBatch[][] = []
  const cell = new SharedArrayBuffer(4)
  const messages: EventsMessage[] = []
  const main = eventsIn({
    log,
    observer: { answered: (...a) => { answered.push(a) }, handshake: () => { handshakes++ } },
    receipts: { record: (...a) => { receipts.push(a) } },
    tokens: { touch () {} },
    programme: c => { programmes.push(c) },
    handOver: o.handOver ?? ((b, done) => { handed.push(b); done() }),
    handed: cell,
  })
  const door = eventsOut((m, transfer) => {
    const copy = structuredClone(m, { transfer })
    messages.push(copy)
    main.read(copy)
  }, { observed: o.observed ?? ALL, handed: cell, flushMs: 60_000, maxRecords: 1000, errorJson: err => pino.stdSerializers.err(err) })
  t.teardown(() => door.flush())
  return { door, lines, receipts, answered, programmes, handed, messages, handshakes: () => handshakes, main }
}

const records = (m: EventsMessage) => JSON.parse(m.text) as unknown[][]

t.test('a log line reaches the host\'s logger with its child bindings, level, fields and message', async t => {
  const p = pair(t)
  const caller = p.door.log.child({ area: 'inbound' }).child({ companyId: 'acme', tokenId: 'tok_1' })
  caller.info({ method: 'GET', path: '/x', status: 200, durationMs: 0.4, aborted: undefined }, 'api request')
  caller.error({ err: Object.assign(new Error('boom'), { code: 'E_BOOM' }) }, 'api request failed')
  caller.warn({ err: new TypeError('not a function') }, 'odd')
  p.door.flush()
  t.match(p.lines[0], { level: 30, area: 'inbound', companyId: 'acme', tokenId: 'tok_1', method: 'GET', path: '/x', status: 200, durationMs: 0.4, msg: 'api request' })
  t.notOk('aborted' in p.lines[0], 'an undefined field is left out, as pino leaves it')
  t.match(p.lines[1], { level: 50, err: { type: 'Error', message: 'boom', code: 'E_BOOM', stack: /boom\n\s+at / }, msg: 'api request failed' }, 'an error as pino prints it, with its stack from the door')
  t.match(p.lines[2], { err: { type: 'TypeError', message: 'not a function' } }, 'with its type')
})

t.test('a line\'s field names, level and message cross once; each further line of that shape is its values alone', async t => {
  const p = pair(t)
  const log = p.door.log.child({ companyId: 'acme' })
  for (let i = 0; i < 3; i++) log.info({ method: 'GET', path: `/x${i}`, status: 200, durationMs: i }, 'api request')
  p.door.flush()
  log.info({ method: 'GET', path: '/y', status: 304, durationMs: 1 }, 'api request')
  p.door.flush()
  t.same(p.lines.map(l => l.path), ['/x0', '/x1', '/x2', '/y'])
  const [first, second] = p.messages.map(records)
  t.equal(first!.filter(r => r[0] === R.SHAPE).length, 1, 'one shape for the three lines')
  t.equal(first!.filter(r => r[0] === R.LOGGER).length, 1, 'the child logger\'s bindings once')
  t.same(second, [[R.LINE, 1, 1, 'GET', '/y', 304, 1]], 'the next batch: the values alone')
  t.equal(p.messages.length, 2, 'one message per flush, not one per line')
})

t.test('a field JSON cannot carry does not lose its line', async t => {
  const p = pair(t)
  p.door.log.warn({ big: 10n, note: 'kept' }, 'odd')
  p.door.flush()
  t.match(p.lines[0], { level: 40, note: 'kept', msg: 'odd', big: /not serializable/ })
})

t.test('receipts: the last of a company, site and day in a flush is the one sent (the receipts keep only it)', async t => {
  const p = pair(t)
  for (let i = 0; i < 50; i++) p.door.receipt('acme', 'PRM1', '2026-11-22', 1000, 200, i)
  p.door.receipt('acme', 'PRM2', '2026-11-22', 1000, 304, 7)
  p.door.flush()
  t.same(p.receipts, [['acme', 'PRM1', '2026-11-22', 1000, 200, 49], ['acme', 'PRM2', '2026-11-22', 1000, 304, 7]])
})

t.test('metrics\' events are recorded only when the solver\'s thread has metrics', async t => {
  const on = pair(t)
  on.door.answered('outbound', 'GET', 200, undefined, 0.001)
  on.door.answered('outbound', 'GET', 200, undefined, 0.002)
  on.door.answered('inbound', 'POST', 400, 'INVALID', 0.003)
  on.door.handshake()
  on.door.handshake()
  on.door.event({ e: 'programme', c: { accepted: false, companyId: 'acme', atMs: 1 } })
  on.door.flush()
  t.same(on.answered, [['outbound', 'GET', 200, undefined, 0.001], ['outbound', 'GET', 200, undefined, 0.002], ['inbound', 'POST', 400, 'INVALID', 0.003]])
  t.equal(on.handshakes(), 2)
  t.equal(on.programmes.length, 1)

  const off = pair(t, { observed: { answered: false, handshakes: false, programmes: false } })
  off.door.answered('outbound', 'GET', 200, undefined, 0.001)
  off.door.handshake()
  off.door.event({ e: 'programme', c: { accepted: false, companyId: 'acme', atMs: 1 } })
  off.door.flush()
  t.equal(off.messages.length, 0, 'nothing to send, no message')
})

/** A batch of `sites` sites, each with its own slots. */
function batch (id: string, sites: string[], slotsEach: number): InstructionBatch {
  const n = sites.length * slotsEach
  const starts = new Float64Array(n)
  const kwh = new Float64Array(n)
  for (let k = 0; k < n; k++) { starts[k] = Date.UTC(2026, 10, 21, 23) + (k % slotsEach) * 900_000; kwh[k] = k }
  return {
    instructionId: id, targetDate: '2026-11-22', emittedAt: '2026-11-21T12:00:00Z', emittedAtMs: 0, emittedAtNanos: 0, slotDurationSecs: 900,
    siteIds: sites, records: new Uint8Array(0), recordEnds: new Uint32Array(sites.length),
    starts, kwh, slotEnds: Uint32Array.from(sites, (_, i) => (i + 1) * slotsEach),
  }
}

t.test('a saved programme\'s hand-over: the chosen sites and their slots alone; its POST waits until the solver\'s thread has queued it', async t => {
  let release!: () => void
  const p = pair(t, { handOver: (b, done) => { p.handed.push(b); release = done } })
  const b = batch('P1', ['S0', 'S1', 'S2'], 4)
  let answered = false
  const waiting = p.door.handOver(b, [0, 2]).then(() => { answered = true })
  await new Promise(r => setImmediate(r))
  t.equal(p.handed.length, 1, 'handed over on the next turn, not after the log flush')
  const [h] = p.handed[0]!
  t.same(h!.siteIds, ['S0', 'S2'])
  t.same(Array.from(h!.slotEnds), [4, 8])
  t.same([...h!.starts], [...b.starts.subarray(0, 4), ...b.starts.subarray(8, 12)])
  t.same([...h!.kwh], [...b.kwh.subarray(0, 4), ...b.kwh.subarray(8, 12)])
  await new Promise(r => setTimeout(r, 20))
  t.notOk(answered, 'not acknowledged before the solver\'s thread has it')
  release()
  await waiting
  t.ok(answered, 'acknowledged through the shared cell, without a message back')
})

t.test('hand-overs reach the solver\'s thread in the order they were saved, and every POST of a flush is answered', async t => {
  const p = pair(t)
  const waits = [p.door.handOver(batch('A', ['S0'], 2), [0]), p.door.handOver(batch('B', ['S0'], 2), [0])]
  await Promise.all(waits)
  await p.door.handOver(batch('C', ['S0'], 2), [0])
  t.same(p.handed.flat().map(h => h.instructionId), ['A', 'B', 'C'])
  t.equal(p.messages.length, 2, 'two saves of one turn share a message')
  await p.main.settled()
})

t.test('past its shapes, a line still crosses whole (its keys with it)', async t => {
  const p = pair(t)
  for (let i = 0; i <= 1000; i++) p.door.log.info({ i }, `message ${i}`)
  p.door.flush()
  t.equal(p.lines.length, 1001)
  t.match(p.lines[1000], { i: 1000, msg: 'message 1000' })
})

t.test('a solver\'s thread that fails to queue a hand-over still acknowledges it (it is durable; the next activation queues it) and says so', async t => {
  const p = pair(t, { handOver: () => { throw new Error('solver gone') } })
  await p.door.handOver(batch('P', ['S0'], 2), [0])
  t.match(p.lines.find(l => l.level === 50), { msg: /could not hand/, err: { message: 'solver gone' } })
})
