// This process's commits, as every thread notes them and the change feed reads them
// (src/store/postgres/own-writes.ts): in shared memory, so another thread's note counts.
import t from 'tap'
import { Worker } from 'node:worker_threads'
import { OwnWrites } from '../../../src/store/postgres/own-writes.ts'

const mine = (own: OwnWrites, after: number, seqs: number[]) => { const is = own.mineAbove(after); return seqs.filter(is) }

t.test('a range noted through another handle on the same buffer is this process\'s; the seqs between ranges are not', async t => {
  const feed = new OwnWrites()
  const door = new OwnWrites(feed.buffer)
  door.begin(); door.note(10, 12); door.settle()
  feed.begin(); feed.note(15, 15); feed.settle()
  t.same(mine(feed, 0, [9, 10, 11, 12, 13, 14, 15, 16]), [10, 11, 12, 15])
  t.same(mine(feed, 12, [13, 14, 15]), [15], 'ranges the feed reported past are not read again')
})

t.test('the feed waits for a commit begun before it read, and for none begun after', async t => {
  const feed = new OwnWrites()
  const door = new OwnWrites(feed.buffer)
  door.begin()
  let settled = false
  const waiting = feed.settled().then(() => { settled = true })
  await new Promise(resolve => setTimeout(resolve, 50))
  t.notOk(settled, 'not before the commit settles')
  door.begin()   // begun after the feed read: not waited for
  door.note(1, 3)
  door.settle()
  await waiting
  t.ok(settled, 'once it has')
  t.same(mine(feed, 0, [1, 2, 3, 4]), [1, 2, 3], 'its range noted first')
})

t.test('a commit that never settles (its thread ended) is waited for once, then not again; settling late, it counts again', async t => {
  const feed = new OwnWrites()
  const door = new OwnWrites(feed.buffer)
  door.begin()
  const start = Date.now()
  await feed.settled()
  t.ok(Date.now() - start >= 1900, 'waited the whole wait')
  const again = Date.now()
  await feed.settled()
  t.ok(Date.now() - again < 1000, 'not again')
  door.settle()
  door.begin()
  let settled = false
  const waiting = feed.settled().then(() => { settled = true })
  await new Promise(resolve => setTimeout(resolve, 50))
  t.notOk(settled, 'the next commit is waited for')
  door.settle()
  await waiting
})

t.test('the ring keeps the last 1,024 ranges: older ones are forgotten, never mistaken', async t => {
  const own = new OwnWrites()
  for (let i = 0; i < 1100; i++) { own.begin(); own.note(10 * i, 10 * i + 1); own.settle() }
  t.same(mine(own, 0, [0, 1, 750, 760, 761, 762, 10990, 10991, 10992]), [760, 761, 10990, 10991])
})

t.test('a writer that takes the slot of one long gone (a door restarted 64 times) does not inherit its unsettled commit', async t => {
  const feed = new OwnWrites()
  const gone = new OwnWrites(feed.buffer)
  gone.begin()   // its thread ends mid-commit
  for (let i = 0; i < 63; i++) new OwnWrites(feed.buffer)
  const successor = new OwnWrites(feed.buffer)   // the 65th writer: the slot of `gone`
  let settled = false
  const waiting = feed.settled().then(() => { settled = true })
  await new Promise(resolve => setTimeout(resolve, 50))
  t.ok(settled, 'nothing waited for')
  successor.begin()
  settled = false
  const next = feed.settled().then(() => { settled = true })
  await new Promise(resolve => setTimeout(resolve, 50))
  t.notOk(settled, 'the successor\'s own commit is')
  successor.settle()
  await Promise.all([waiting, next])
})

t.test('another thread noting as fast as it can: each range it has noted is this process\'s at the next read, no seq between them ever is', async t => {
  const feed = new OwnWrites()
  // [noted, checked]: the door notes at most AHEAD past what the feed has checked, so
  // what the feed checks is always within the ring's 1,024 (the ring forgets older ones).
  const progress = new Int32Array(new SharedArrayBuffer(8))
  const AHEAD = 400
  const NOTES = 30_000
  // The door's side in a real thread, so the feed reads slots as they are being written.
  const door = new Worker(`
    const { workerData } = require('node:worker_threads')
    // TypeScript through tsx, as the door's worker loads it from src/ (apply/read-programme.ts workerSource).
    import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(m => { m.register(); return import(${JSON.stringify(new URL('../../../src/store/postgres/own-writes.ts', import.meta.url).href)}) }).then(({ OwnWrites }) => {
      const own = new OwnWrites(workerData.buffer)
      for (let i = 0; i < ${NOTES}; i++) {
        for (let checked; i >= (checked = Atomics.load(workerData.progress, 1)) + ${AHEAD};) Atomics.wait(workerData.progress, 1, checked, 100)
        own.begin(); own.note(10 * i, 10 * i + 1); own.settle()
        Atomics.store(workerData.progress, 0, i + 1)
      }
    })`, { eval: true, workerData: { buffer: feed.buffer, progress } })
  const ended = new Promise(resolve => door.once('exit', resolve))
  let reads = 0
  let wrong = ''
  for (let done = 0; done < NOTES && !wrong;) {
    done = Atomics.load(progress, 0)
    // The last 500 noted: well inside the ring, so none of them may be forgotten.
    const first = Math.max(0, done - 500)
    const is = feed.mineAbove(10 * first - 1)
    reads++
    for (let i = first; i < done + 2 && !wrong; i++) {
      if (i < done && !(is(10 * i) && is(10 * i + 1))) wrong = `note ${i} (${10 * i}-${10 * i + 1}) not recognised after ${done} noted`
      if (is(10 * i + 5)) wrong = `seq ${10 * i + 5}, between two ranges, taken for this process's`
    }
    Atomics.store(progress, 1, done)
    Atomics.notify(progress, 1)
    if (reads % 64 === 0) await new Promise(resolve => setImmediate(resolve))
  }
  if (wrong) await door.terminate()
  await ended
  t.equal(wrong, '', `${reads} reads while ${NOTES} ranges were noted`)
  t.ok(reads > 100, 'the reads interleaved with the notes')
})

t.test('the feed skips its catch-up only when every seq up to the one notified is in a range this process noted', async t => {
  const feed = new OwnWrites()
  const door = new OwnWrites(feed.buffer)
  door.begin(); door.note(11, 14); door.settle()
  feed.begin(); feed.note(15, 15); feed.settle()
  door.begin(); door.note(16, 20); door.settle()
  t.ok(feed.coverAll(10, 20), 'three ranges end to end, of two threads')
  t.ok(feed.coverAll(12, 16), 'from inside a range, to inside another')
  t.notOk(feed.coverAll(9, 20), 'seq 10, before them, may be another writer\'s')
  t.notOk(feed.coverAll(10, 21), 'seq 21, after them, may be another writer\'s (or a commit not noted yet)')
  door.begin(); door.note(23, 30); door.settle()
  t.notOk(feed.coverAll(20, 30), 'a gap (21, 22): another writer\'s rows, or seqs a rolled-back transaction took')
  t.ok(feed.coverAll(22, 30))
})
