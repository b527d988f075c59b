import t from 'tap'
import { openStore } from '../../src/store/open-store.ts'

t.test('a put or a remove outside writeDurable is refused, and nothing is written', async t => {
  const store = openStore(t.testdir())
  t.teardown(() => store.close())
  const db = store.db<number>('things')
  t.throws(() => db.putSync('x', 1), /outside writeDurable/)
  t.throws(() => db.removeSync('x'), /outside writeDurable/)
  t.equal(db.get('x'), undefined)
  await store.writeDurable(() => db.putSync('x', 2))
  t.equal(db.get('x'), 2, 'inside writeDurable it writes')
})

t.test('every read of a store that cannot answer is NO_STORE, whichever way it reads', async t => {
  const store = openStore(t.testdir())
  t.teardown(() => store.close())
  const db = store.db<number>('things')
  await store.writeDurable(() => db.putSync('x', 1))
  store.faults.unavailable = true
  t.throws(() => db.get('x'), { code: 'NO_STORE' })
  t.throws(() => db.doesExist('x'), { code: 'NO_STORE' })
  t.throws(() => db.getRange({}), { code: 'NO_STORE' })
  t.throws(() => db.getKeys({}), { code: 'NO_STORE' })
  t.throws(() => db.equalsStored('x', undefined), { code: 'NO_STORE' })
  store.faults.unavailable = false
  t.same([db.get('x'), db.doesExist('x'), [...db.getKeys({})]], [1, true, ['x']])
})

t.test('the fault seam counts every put and remove: the one it fails aborts its whole write', async t => {
  const store = openStore(t.testdir())
  t.teardown(() => store.close())
  const db = store.db<number>('things')
  await store.writeDurable(() => db.putSync('kept', 1))
  store.faults.failWriteAfter = 2
  await t.rejects(store.writeDurable(() => {
    db.putSync('a', 1)
    db.removeSync('kept')
    db.putSync('b', 2)
  }), { code: 'NO_STORE' })
  t.same([db.get('a'), db.get('kept'), db.get('b')], [undefined, 1, undefined], 'none of its puts, its remove undone')
  await store.writeDurable(() => db.putSync('c', 3))
  t.equal(db.get('c'), 3, 'the seam resets after it fired')
})

t.test('a write accepted before close() still reads and writes while close() waits for it; a read after close() is NO_STORE', async t => {
  const store = openStore(t.testdir())
  const db = store.db<number>('things')
  await store.writeDurable(() => db.putSync('n', 1))
  const accepted = store.writeDurable(() => {
    db.putSync('n', db.get('n')! + 1)
    return db.get('n')
  })
  const closing = store.close()
  t.equal(await accepted, 2)
  await closing
  t.throws(() => db.get('n'), { code: 'NO_STORE' })
})

t.test('equalsStored: the stored bytes compared as they are, whatever LMDB read before them', async t => {
  const store = openStore(t.testdir())
  t.teardown(() => store.close())
  const db = store.db<Uint8Array>('bytes', { binary: true })
  const short = Buffer.from('abc')
  const long = Buffer.alloc(20_000, 7)   // past LMDB's reused read buffer's first size
  await store.writeDurable(() => { db.putSync('s', short); db.putSync('l', long) })
  t.ok(db.equalsStored('s', Buffer.from('abc')))
  t.notOk(db.equalsStored('s', Buffer.from('abd')), 'one byte differs')
  t.notOk(db.equalsStored('s', Buffer.from('ab')), 'a prefix is not the value')
  t.ok(db.equalsStored('l', Buffer.alloc(20_000, 7)), 'a large value')
  t.ok(db.equalsStored('s', short), 'a short value read after a large one')
  t.notOk(db.equalsStored('s', undefined), 'a value where none was expected')
  t.ok(db.equalsStored('none', undefined), 'none where none was expected')
  t.notOk(db.equalsStored('none', short))
})
