// This process's commits, as every thread notes them and the change feed reads them
// (src/store/postgres/own-writes.ts): in shared memory, so another thread's note counts.
import t from 'tap'
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
