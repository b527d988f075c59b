import t from 'tap'
import { openStore } from '../../src/store/open-store.ts'
import { muteLmdbWriteErrors } from '../../src/store/fault-log.ts'
import { recordingLog } from '../helpers/recording-log.ts'


t.test('a fault episode is one error line with its cause, however many writes fail, and one info line at the next durable write', async t => {
  const { log, lines } = recordingLog()
  const store = openStore(t.testdir(), { log })
  t.teardown(() => store.close())
  const db = store.db<number>('things')
  await store.writeDurable(() => db.putSync('a', 1))
  t.same(lines, [], 'a healthy store says nothing')
  store.faults.unavailable = true
  for (let i = 0; i < 5; i++) await t.rejects(store.writeDurable(() => db.putSync('b', i)), { code: 'NO_STORE' })
  await new Promise(resolve => setImmediate(resolve))
  t.match(lines, [{ level: 'error', obj: { cause: /\S/ }, msg: /store writes are failing/ }])
  store.faults.unavailable = false
  await store.writeDurable(() => db.putSync('c', 1))
  await new Promise(resolve => setImmediate(resolve))
  t.match(lines.slice(1), [{ level: 'info', obj: { failedWrites: 5 }, msg: 'store writes succeed again' }])
})

t.test('muting lmdb-js hides only its write-path prints, and releasing restores console.error', async t => {
  const original = console.error
  const printed: unknown[][] = []
  console.error = (...args: unknown[]) => { printed.push(args) }
  t.teardown(() => { console.error = original })
  const release = muteLmdbWriteErrors()
  const fromLmdb = new Error('Input/output error')
  fromLmdb.stack = 'Error: Input/output error\n    at Function.<anonymous> (file:///x/node_modules/lmdb/write.js:516:7)'
  console.error(fromLmdb)
  const ours = new Error('ours')
  console.error(ours)
  console.error('text', fromLmdb)
  release()
  console.error(fromLmdb)
  t.same(printed, [[ours], ['text', fromLmdb], [fromLmdb]])
})
