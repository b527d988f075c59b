import t from 'tap'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { startEpx } from '../helpers/epx.ts'
import type { Door } from '../../src/door/supervisor.ts'
import { until } from '../helpers/eventually.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'

// docs/plugin-contract.md "Guarantees": a host's close() ends every thread epx started. The
// door's supervisor starts threads in several states (serving, a standby loading or waiting,
// a successor starting after a fault, one failing to start): once close() resolves, none
// of them runs, whatever state close() found the door in.

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))

t.test('close() while a worker started after a fault fails to start: its thread has ended when close() resolves', async t => {
  let door!: Door
  const epx = await startEpx(t, { config: { api: { inWorker: true, standbyWorker: false } }, onDoor: d => { door = d } })
  // A worker started afresh cannot read its certificate: its start fails, and it ends itself.
  rmSync(join(epx.dataDir, 'pki', 'server.crt'))
  await door.worker!.terminate()
  await until('the successor started', () => door.threads === 1 && !door.up, { ms: 20_000, everyMs: 2 })
  await door.close()
  t.equal(door.threads, 0, 'no thread of the door runs once close() resolved')
  t.notOk(door.worker, 'no worker')
})

t.test('close() at a fault, with the standby open: the serving worker, its successor and the standby have all ended when close() resolves', async t => {
  for (const after of [0, 5, 50]) {
    let door!: Door
    const epx = await startEpx(t, { config: { api: { inWorker: true, standbyWorker: true } }, onDoor: d => { door = d } })
    await until('the standby door waiting', () => door.standing, { ms: 20_000, everyMs: 2 })
    void door.worker!.terminate()
    await sleep(after)
    await door.close()
    t.equal(door.threads, 0, `close() ${after} ms after the fault: no thread of the door runs once it resolved`)
    await epx.close()
  }
})

t.test('a first worker that ends before it listens and tells nothing is started again, twice at most; a third such end fails the activation with its exit code', async t => {
  let door!: Door
  const epx = await startEpx(t, { config: { api: { inWorker: true, standbyWorker: false } }, doorSilentStarts: 2, onDoor: d => { door = d } })
  t.ok(door.up, 'the third start listens')
  const warned = epx.logs().filter(l => l.msg === 'the api worker ended before it listened and told no error; starting it again')
  t.same(warned.map(l => [l.level, l.attempt, l.exitCode]), [[40, 1, 0], [40, 2, 0]], 'each silent end logged at warn')
  const { cert } = await epx.addCompany('acme')
  t.equal((await epx.request({ path: OUTBOUND_PATH, cert })).status, 401, 'and it serves (a request without a token: 401)')
  await epx.close()

  await t.rejects(startEpx(t, { config: { api: { inWorker: true, standbyWorker: false } }, doorSilentStarts: 3 }),
    { message: 'the api worker exited with code 0 before it listened' }, 'three silent ends: the activation fails, saying so')
})
