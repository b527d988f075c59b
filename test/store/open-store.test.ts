import t from 'tap'
import { openStore, readStore } from '../../src/store/open-store.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'
import { EpxError } from '../../src/errors.ts'
import { holdsSharedLmdbLock, ownLmdbLocks } from '../helpers/lmdb-locks.ts'

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)

  t.test('concurrent writeDurable calls each stay all or nothing: a failing one leaves nothing, the others commit', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const db = store.db<{ n: number }>('things')
    const writes = [1, 2, 3, 4].map(n => store.writeDurable(() => {
      db.putSync(`a${n}`, { n })
      if (n === 2) throw new Error('half-way')
      db.putSync(`b${n}`, { n })
      return n
    }))
    const settled = await Promise.allSettled(writes)
    t.same(settled.map(s => s.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    t.match((settled[1] as PromiseRejectedResult).reason, { code: 'NO_STORE' })
    t.same(settled.filter(s => s.status === 'fulfilled').map(s => (s as PromiseFulfilledResult<number>).value), [1, 3, 4])
    t.equal(db.get('a2'), undefined, 'the failed write left none of its puts')
    t.same([db.get('a1'), db.get('b1'), db.get('a4'), db.get('b4')], [{ n: 1 }, { n: 1 }, { n: 4 }, { n: 4 }])
  })

  t.test('a write aborted after it met a new record shape leaves every later record readable after a reopen', async t => {
    const dir = t.testdir()
    const store = await openStore(dir)
    const db = store.db<Record<string, unknown>>('things')
    await store.writeDurable(() => db.putSync('first', { a: 1 }))
    await t.rejects(store.writeDurable(() => {
      db.putSync('lost', { brand: 'new', shape: true })
      throw new Error('abort')
    }), { code: 'NO_STORE' })
    await store.writeDurable(() => db.putSync('kept', { brand: 'new', shape: false }))
    await store.close()

    const again = await openStore(dir)
    t.teardown(() => again.close())
    const db2 = again.db<Record<string, unknown>>('things')
    t.same(db2.get('first'), { a: 1 })
    t.equal(db2.get('lost'), undefined)
    t.same(db2.get('kept'), { brand: 'new', shape: false })
  })

  t.test('writeDurable on an unavailable store rejects with NO_STORE and writes nothing', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const db = store.db<number>('things')
    store.faults.unavailable = true
    await t.rejects(store.writeDurable(() => db.putSync('x', 1)), { code: 'NO_STORE' })
    store.faults.unavailable = false
    t.equal(db.get('x'), undefined)
  })

  t.test('a read that decides a status fails as NO_STORE whatever broke it (503, never a 401), and says nothing of the cause', async t => {
    t.equal(readStore(() => 7), 7)
    t.throws(() => readStore(() => { throw new Error('MDB_BAD_TXN: secret detail') }), { code: 'NO_STORE', status: 503 })
    const raw = (() => { try { readStore(() => { throw new Error('MDB_BAD_TXN: secret detail') }) } catch (e) { return e as Error } })()
    t.notMatch(raw!.message, /MDB_BAD_TXN/, 'the cause stays out of the message a client sees')
    t.throws(() => readStore(() => { throw new EpxError('UNAUTHORIZED', ['x']) }), { code: 'NO_STORE' }, 'another coded error from inside a read is a store failure too')
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    store.faults.unavailable = true
    t.throws(() => readStore(() => store.guard()), { code: 'NO_STORE' })
  })
})

t.test('a second open of a store this process already has open (the door\'s worker) leaves the process its LMDB locks', async t => {
  const dir = t.testdir()
  const first = openStore(dir)
  t.teardown(() => first.close())
  t.ok(holdsSharedLmdbLock(dir), 'the first open holds LMDB\'s shared lock on lock.mdb')
  const second = openStore(dir, { openInThisProcess: true })
  t.ok(holdsSharedLmdbLock(dir), 'the second open did not touch lock.mdb: the lock stands')
  await second.writeDurable(() => second.db<number>('things').putSync('n', 1))
  t.equal(first.db<number>('things').get('n'), 1, 'one environment: each sees the other\'s writes')
  await second.close()
  t.ok(holdsSharedLmdbLock(dir), 'closing it leaves the first one\'s lock')
  // What the option prevents: the file check's open and close of lock.mdb (POSIX drops a
  // process's locks on a file when it closes any descriptor for it).
  const unguarded = openStore(dir)
  t.same(ownLmdbLocks(dir), [], 'without it the process has lost its locks (other processes cannot see it any more)')
  await unguarded.close()
})
