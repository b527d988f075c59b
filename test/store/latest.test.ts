/**
 * `Store.latest()`: a thread told of another thread's commit within one turn of its loop
 * (the event bell, a message) reads that commit, not the snapshot lmdb-js keeps for the
 * turn. The other thread here is a worker writing into the same LMDB environment, as the
 * door's and the deliverer's do; the main thread blocks in `Atomics.wait` until that
 * commit is made, so both reads are in one turn. `Store.fresh()`: a thread that read
 * within lmdb-js's snapshot window reads another thread's durable write all the same.
 */
import t, { type Test } from 'tap'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { execFileSync } from 'node:child_process'
import { openStore, type Store } from '../../src/store/open-store.ts'
import type { StoreDb } from '../../src/store/guarded-db.ts'
import { openEventBell } from '../../src/store/event-bell.ts'
import { until } from '../helpers/eventually.ts'

/** Opens the environment of `data.path` with lmdb-js itself and commits 'after' to `k`: in a worker, or in a process of its own. */
const commitAfter = (data: string) => `
const workerData = ${data}
const { open } = require(workerData.lmdb)
const root = open({ path: workerData.path, noSubdir: false, maxDbs: 32, compression: false })
const db = root.openDB({ name: 'latest-test', encoding: 'binary' })
db.putSync('k', Buffer.from('after'))
`
/** The worker's: it then tells this thread, which waits blocked in its turn. */
const WRITER = commitAfter("require('node:worker_threads').workerData") + `
const flag = new Int32Array(workerData.flag)
Atomics.store(flag, 0, 1)
Atomics.notify(flag, 0)
`
const LMDB = createRequire(import.meta.url).resolve('lmdb')

/** A store whose `k` holds 'before', durably. */
async function storeWithBefore (t: Test): Promise<{ path: string; store: Store; db: StoreDb<Buffer> }> {
  const path = t.testdir()
  const store = openStore(path)
  t.teardown(() => store.close())
  const db = store.db<Buffer>('latest-test', { binary: true })
  await store.writeDurable(() => db.putSync('k', Buffer.from('before')))
  return { path, store, db }
}

/** Reads `k`, lets a worker commit 'after' to it (a synchronous write transaction), and reads it again in the same turn: the second read's value. */
async function readAcrossCommit (t: Test, fresh: (store: Store) => void): Promise<string | undefined> {
  const { path, store, db } = await storeWithBefore(t)
  await new Promise(resolve => setTimeout(resolve, 5))   // a turn of its own: the write's own reset is past
  const flag = new Int32Array(new SharedArrayBuffer(4))
  const worker = new Worker(WRITER, { eval: true, workerData: { path, lmdb: LMDB, flag: flag.buffer } })
  const ended = new Promise((resolve, reject) => { worker.once('exit', resolve); worker.once('error', reject) })
  t.equal(db.get('k')?.toString(), 'before', 'the first read, which takes the turn\'s snapshot')
  t.equal(Atomics.wait(flag, 0, 0, 30_000), 'ok', 'the worker committed while this turn went on')
  fresh(store)
  const second = db.get('k')?.toString()
  await ended
  return second
}

t.test('without latest(), a read later in the same turn sees the snapshot from before another thread\'s commit', async t => {
  t.equal(await readAcrossCommit(t, () => {}), 'before', 'the turn\'s snapshot still')
})

t.test('after latest(), the same read sees that commit', async t => {
  t.equal(await readAcrossCommit(t, store => store.latest()), 'after', 'the other thread\'s commit')
})

t.test('the event bell reads afresh before it tells a waiter of a ring: on a ring it waited for, and on one it missed', async t => {
  let fresh = 0
  const bell = openEventBell(undefined, () => { fresh++ })
  const since = bell.count()
  const waiting = bell.wait(30_000, since)
  const other = openEventBell(bell.cell)
  other.ring()
  await waiting.rung
  t.equal(fresh, 1, 'once before the waiter woke')
  const missed = bell.wait(30_000, since)
  await missed.rung
  t.equal(fresh, 2, 'a waiter whose count is already behind is told at once, after a fresh read too')
})

/**
 * A store opened in a worker reads `k`, then waits (blocking its turn) while this thread
 * commits 'after' through its own store and that commit is durable, then reads again: the
 * door's case, a request right after the host changed something (a revocation, a pin).
 */
async function readAcrossDurableWrite (t: Test, fresh: boolean): Promise<{ first?: string; second?: string }> {
  const { path, store, db } = await storeWithBefore(t)
  const flag = new Int32Array(new SharedArrayBuffer(4))
  const reader = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads')
    import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(m => { m.register(); return import(${JSON.stringify(new URL('../../src/store/open-store.ts', import.meta.url).href)}) }).then(async ({ openStore }) => {
      const store = openStore(workerData.path, { openInThisProcess: true })
      const db = store.db('latest-test', { binary: true })
      const flag = new Int32Array(workerData.flag)
      const first = db.get('k')?.toString()
      Atomics.store(flag, 0, 1)
      Atomics.notify(flag, 0)
      Atomics.wait(flag, 0, 1, 30000)
      if (workerData.fresh) store.fresh()
      const second = db.get('k')?.toString()
      await store.close()
      parentPort.postMessage({ first, second })
    })`, { eval: true, workerData: { path, flag: flag.buffer, fresh } })
  const answer = new Promise<{ first?: string; second?: string }>((resolve, reject) => { reader.once('message', resolve); reader.once('error', reject) })
  await until('the reader\'s first read', () => Atomics.load(flag, 0) === 1, { ms: 30_000 })
  await store.writeDurable(() => db.putSync('k', Buffer.from('after')))
  Atomics.store(flag, 0, 2)
  Atomics.notify(flag, 0)
  const read = await answer
  await new Promise(resolve => reader.once('exit', resolve))
  return read
}

t.test('without fresh(), a thread that read just before another thread\'s durable write still reads from before it', async t => {
  t.same(await readAcrossDurableWrite(t, false), { first: 'before', second: 'before' })
})

t.test('fresh(): a thread reads what another thread of the process has committed, whenever it last read', async t => {
  t.same(await readAcrossDurableWrite(t, true), { first: 'before', second: 'after' })
})

/**
 * The CLI's case: another process commits (a revocation, a suspension) while this thread's
 * turn goes on, so lmdb-js's timer has not renewed the snapshot this thread read from. Its
 * commit moves no count of this process; the snapshot's age renews it.
 */
t.test('fresh(): a thread reads what another process committed, once its snapshot is more than a millisecond old', async t => {
  const { path, store, db } = await storeWithBefore(t)
  await new Promise(resolve => setTimeout(resolve, 5))   // a turn of its own: the write's own reset is past
  store.fresh()
  t.equal(db.get('k')?.toString(), 'before', 'the first read, which takes the turn\'s snapshot')
  // Blocks this turn: lmdb-js's timer cannot renew the snapshot meanwhile.
  execFileSync(process.execPath, ['-e', commitAfter(JSON.stringify({ path, lmdb: LMDB }))])
  t.equal(db.get('k')?.toString(), 'before', 'without fresh(), the same turn reads its snapshot still')
  store.fresh()
  t.equal(db.get('k')?.toString(), 'after', 'after fresh(), the other process\'s commit')
})
