// The PostgreSQL store's bounds (docs/operating.md "The store: LMDB or PostgreSQL"): a
// write answers NO_STORE within statementTimeoutMs + 2 s whatever the server does (here
// frozen with SIGSTOP, its connections open and silent); a batch larger than one
// statement's share is several statements of one transaction, all or nothing; a store
// closed before its first connection leaves no connection behind; an idle connection
// the server drops is a debug line, not silence.
import t from 'tap'
import { createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import { openStore as openAnyStore } from '../../../src/store/open-store.ts'
import { encodeKey } from '../../../src/store/postgres/records.ts'
import { recordingLog } from '../../helpers/recording-log.ts'
import { storesOf } from '../../helpers/store-kinds.ts'
import pg from 'pg'

const { openStore, cluster: clusterOf, databaseOf } = storesOf(t, 'postgres')
const cluster = clusterOf()

t.test('a frozen database answers a write with NO_STORE within statementTimeoutMs + 2 s, and the next write after it thaws lands', async t => {
  const dir = t.testdir()
  const database = await databaseOf(dir)
  const statementTimeoutMs = 500
  const store = await openStore(dir, { postgres: { pool: { ...cluster.connection(database), max: 4, statement_timeout: statementTimeoutMs, query_timeout: statementTimeoutMs + 2000 }, pollMs: 60_000 } })
  t.teardown(() => store.close())
  const db = store.db<number>('things')
  await store.writeDurable(() => db.putSync('before', 1))
  const thaw = cluster.freeze()
  t.teardown(thaw)
  const started = Date.now()
  await t.rejects(store.writeDurable(() => db.putSync('frozen', 2)), { code: 'NO_STORE' })
  const waited = Date.now() - started
  thaw()
  t.ok(waited < statementTimeoutMs + 2000 + 1000, `refused after ${waited} ms (bound ${statementTimeoutMs + 2000} ms)`)
  t.equal(db.get('frozen'), undefined, 'nothing of the refused write is served')
  // The store may be down for a moment while its feed reconnects: a BSP retries after 5 s.
  let landed = false
  for (let i = 0; i < 100 && !landed; i++) {
    landed = await store.writeDurable(() => db.putSync('after', 3)).then(() => true, () => false)
    if (!landed) await new Promise(resolve => setTimeout(resolve, 100))
  }
  t.ok(landed, 'a write after the thaw lands')
  t.equal(cluster.psql("SELECT count(*) FROM epx_record WHERE db = 'things'", database).trim(), '2', 'before and after, never the refused one')
})

t.test('a batch larger than one statement is several statements of one transaction: all of it lands, or none', async t => {
  const root = t.testdir()
  const dir = join(root, 'writer')
  const database = await databaseOf(dir)
  const store = await openStore(dir, { postgres: { pool: { ...cluster.connection(database), max: 4, statement_timeout: 500 }, statementBytes: 4000 } })
  t.teardown(() => store.close())
  const other = await openStore(join(root, 'other'), { postgres: { pool: { ...cluster.connection(database), max: 4 } } })
  t.teardown(() => other.close())
  const db = store.db<string>('things')
  const big = 'x'.repeat(300)
  await store.writeDurable(() => { for (let i = 0; i < 200; i++) db.putSync(`k${String(i).padStart(3, '0')}`, big) })
  t.equal(cluster.psql("SELECT count(*) FROM epx_record WHERE db = 'things'", database).trim(), '200', 'every record of the batch')
  const start = Date.now()
  while (other.db<string>('things').get('k199') === undefined && Date.now() - start < 5000) await new Promise(resolve => setTimeout(resolve, 20))
  t.equal(other.db<string>('things').get('k199'), big, 'another instance was notified and caught up the whole batch')

  // A row of the last statement's share held by another session: that statement times
  // out, and the statements before it, already sent, are rolled back with it.
  const holder = new pg.Client(cluster.connection(database))
  await holder.connect()
  t.teardown(() => holder.end())
  await holder.query('BEGIN')
  await holder.query("SELECT 1 FROM epx_record WHERE db = 'things' AND key = $1 FOR UPDATE", [encodeKey('k199')])
  await t.rejects(store.writeDurable(() => { for (let i = 0; i < 200; i++) db.putSync(`k${String(i).padStart(3, '0')}`, 'second') }), { code: 'NO_STORE' })
  await holder.query('ROLLBACK')
  t.equal(cluster.psql("SELECT count(*) FROM epx_record WHERE db = 'things' AND length(value) < 20", database).trim(), '0', 'no record of the failed batch, in any of its statements')
  t.equal(db.get('k000'), big, 'nor in the replica')
  await other.verify().then(v => t.same(v?.kind === 'compared' && v.differ, [], 'the other replica equals the database'))
  await store.verify().then(v => t.same(v?.kind === 'compared' && v.differ, [], 'the writer equals the database'))
})

t.test('a store closed while its first connection is being made leaves no connection behind', async t => {
  const sockets = new Set<Socket>()
  let ended = 0
  // A server that accepts and never answers: the connection stays in the making.
  const server = createServer(s => { sockets.add(s); s.resume(); s.on('close', () => { ended++; sockets.delete(s) }) })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const s of sockets) s.destroy(); server.close() })
  const port = (server.address() as { port: number }).port
  const store = openAnyStore(t.testdir(), { postgres: { pool: { host: '127.0.0.1', port, user: 'nobody', database: 'none', connectionTimeoutMillis: 60_000 } } })
  const start = Date.now()
  while (sockets.size === 0 && Date.now() - start < 5000) await new Promise(resolve => setTimeout(resolve, 10))
  t.equal(sockets.size, 1, 'the feed is connecting')
  const closing = Date.now()
  await store.close()
  t.ok(Date.now() - closing < 2000, 'close() did not wait for the connection timeout')
  await t.rejects(store.opened, 'the store never opened')
  const stop = Date.now()
  while (ended === 0 && Date.now() - stop < 2000) await new Promise(resolve => setTimeout(resolve, 10))
  t.equal(ended, 1, 'the connection being made was closed')
})

t.test('an idle connection the server drops is one debug line, and the next write lands', async t => {
  const dir = t.testdir()
  const database = await databaseOf(dir)
  const { log, lines } = recordingLog()
  const store = await openStore(dir, { log, postgres: { pool: { ...cluster.connection(database), max: 4, application_name: 'epx idle' } } })
  t.teardown(() => store.close())
  const db = store.db<number>('things')
  await store.writeDurable(() => db.putSync('a', 1))
  cluster.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'epx idle' AND state = 'idle' AND query LIKE 'WITH w AS (INSERT%'", database)
  const start = Date.now()
  while (!lines.some(l => l.level === 'debug' && /idle database connection was lost/.test(l.msg ?? '')) && Date.now() - start < 5000) await new Promise(resolve => setTimeout(resolve, 20))
  t.ok(lines.some(l => l.level === 'debug' && /idle database connection was lost/.test(l.msg ?? '')), 'the dropped idle connection is logged at debug')
  await store.writeDurable(() => db.putSync('b', 2))
  t.equal(db.get('b'), 2)
})
