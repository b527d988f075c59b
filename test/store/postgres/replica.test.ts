// What only the PostgreSQL store has: the database's transaction as the durability
// point, a write that fails at the database leaving nothing anywhere, instances that
// see each other's writes through the change feed, the replica's reload, the schema at
// the door, and the database going away and coming back under the store.
import t from 'tap'
import pg from 'pg'
import { openTokens, tokenState } from '../../../src/store/tokens.ts'
import { openCompanies, type CompanyRecord } from '../../../src/store/companies.ts'
import { hashToken, newTokenId, newTokenSecret } from '../../../src/auth/tokens.ts'
import { openStore as openAnyStore } from '../../../src/store/open-store.ts'
import { pruneRemovals } from '../../../src/store/postgres/sql.ts'
import { migrateSchema } from '../../../src/store/postgres/migrate.ts'
import { REVISION_BYTES_DB, SCHEMA_VERSION } from '../../../src/store/postgres/schema.ts'
import { openRevisions } from '../../../src/store/revisions.ts'
import { encodeKey } from '../../../src/store/postgres/records.ts'
import type { Logger } from '../../../src/host/contract.ts'
import { migratedDatabase, storesOf } from '../../helpers/store-kinds.ts'
import { until } from '../../helpers/eventually.ts'

const { openStore, cluster: clusterOf, databaseOf } = storesOf(t, 'postgres')
const cluster = clusterOf()
const psql = (sql: string, database?: string): string => cluster.psql(sql, database).trim()

/** A logger that keeps its lines. */
function recordingLog (): Logger & { lines: Array<{ level: string; msg: string }> } {
  const lines: Array<{ level: string; msg: string }> = []
  const at = (level: string) => (_obj: object, msg?: string) => { lines.push({ level, msg: msg ?? '' }) }
  const log = { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log }
  return log
}

const rows = (database: string, where = 'true'): string => psql(`SELECT db || ':' || coalesce(length(value), -1) FROM epx_record WHERE ${where} ORDER BY seq`, database)

t.test('a batch is one database transaction: the jobs that resolved are in the database, a failed job left nothing', async t => {
  const dir = t.testdir()
  const store = await openStore(dir)
  t.teardown(() => store.close())
  const db = store.db<{ n: number }>('things')
  const settled = await Promise.allSettled([1, 2, 3].map(n => store.writeDurable(() => {
    db.putSync(`a${n}`, { n })
    if (n === 2) throw new Error('half-way')
    db.putSync(`b${n}`, { n })
  })))
  t.same(settled.map(s => s.status), ['fulfilled', 'rejected', 'fulfilled'])
  const database = await databaseOf(dir)
  t.equal(psql("SELECT count(*) FROM epx_record WHERE db = 'things'", database), '4', 'a1 b1 a3 b3, nothing of the failed job')
  t.equal(psql("SELECT count(DISTINCT seq) FROM epx_record WHERE db = 'things'", database), '4')
})

/** Holds a row lock on one record from another session, so a writer's INSERT waits on it. */
async function holdRecord (database: string, dbName: string, key: string): Promise<pg.Client> {
  const holder = new pg.Client(cluster.connection(database))
  await holder.connect()
  await holder.query('BEGIN')
  // The record exists (written through the store), so ON CONFLICT waits for this lock.
  await holder.query("SELECT 1 FROM epx_record WHERE db = $1 AND key = $2 FOR UPDATE", [dbName, encodeKey(key)])
  return holder
}

t.test('a statement timeout in the middle of a batch leaves nothing, in the database or in the replica, and the next write lands', async t => {
  const dir = t.testdir()
  const database = await databaseOf(dir)
  const store = await openStore(dir, { postgres: { pool: { ...cluster.connection(database), statement_timeout: 300 } } })
  t.teardown(() => store.close())
  const db = store.db<number>('things')
  await store.writeDurable(() => db.putSync('locked', 0))
  const before = rows(database)
  const holder = await holdRecord(database, 'things', 'locked')
  t.teardown(() => holder.end())
  const started = Date.now()
  await t.rejects(store.writeDurable(() => {
    db.putSync('first', 1)       // sorted before and after the locked row: several rows in flight
    db.putSync('locked', 1)
    db.putSync('zlast', 1)
  }), { code: 'NO_STORE' })
  t.ok(Date.now() - started >= 250, 'it waited for the lock until the statement timeout')
  t.equal(rows(database), before, 'nothing reached the database')
  t.same([db.get('first'), db.get('locked'), db.get('zlast')], [undefined, 0, undefined], 'nothing reached the replica')
  await holder.query('ROLLBACK')
  await store.writeDurable(() => db.putSync('locked', 2))
  t.equal(db.get('locked'), 2)
})

t.test('a connection killed in the middle of a batch leaves nothing, and the store writes again on a new connection', async t => {
  const dir = t.testdir()
  const database = await databaseOf(dir)
  const store = await openStore(dir)
  t.teardown(() => store.close())
  const db = store.db<number>('things')
  await store.writeDurable(() => db.putSync('locked', 0))
  const before = rows(database)
  const holder = await holdRecord(database, 'things', 'locked')
  t.teardown(() => holder.end())
  const write = store.writeDurable(() => { db.putSync('first', 1); db.putSync('locked', 1) })
  // The writer is inside its transaction, waiting on the held row: kill its backend there.
  await until('the writer waits on the lock', () => psql(
    `SELECT count(*) FROM pg_stat_activity WHERE datname = '${database}' AND wait_event_type = 'Lock'`) === '1', { ms: 5000 })
  psql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}' AND wait_event_type = 'Lock'`)
  await t.rejects(write, { code: 'NO_STORE' })
  await holder.query('ROLLBACK')
  t.equal(rows(database), before, 'nothing reached the database')
  t.same([db.get('first'), db.get('locked')], [undefined, 0], 'nothing reached the replica')
  await store.writeDurable(() => db.putSync('first', 2))
  t.equal(db.get('first'), 2)
  t.equal(psql("SELECT count(*) FROM epx_record WHERE db = 'things'", database), '2')
})

t.test('two instances on one database: a token revoked through one is revoked on the other within 1 s, and its listener is told', async t => {
  const database = await migratedDatabase(cluster)
  const pool = cluster.connection(database)
  const root = t.testdir()   // once: each call makes it anew
  const a = openAnyStore(root + '/a', { postgres: { pool } })
  const b = openAnyStore(root + '/b', { postgres: { pool } })
  t.teardown(async () => { await a.close(); await b.close() })
  await Promise.all([a.opened, b.opened])
  const ta = openTokens(a)
  const tb = openTokens(b)
  const told: Array<[string, unknown[]]> = []
  b.onApplied(changes => { for (const [db, keys] of changes) told.push([db, [...keys]]) })
  const toldA: unknown[] = []
  a.onApplied(changes => { toldA.push(changes) })
  const id = newTokenId()
  await ta.add({ id, hash: hashToken(newTokenSecret()), companyId: 'acme', scopes: [], createdAt: '2026-11-21T00:00:00Z' })
  await until('B has the token', () => tb.get(id) !== undefined, { ms: 5000 })
  const generation = tb.generation()
  await ta.revoke(id, '2026-11-21T12:00:00Z')
  // Quiet, B applies it within a few ms; the bound leaves a loaded machine its slack.
  const ms = await until('B sees the revocation', () => tokenState(tb.get(id)!, Date.parse('2026-11-21T13:00:00Z')) === 'revoked', { ms: 5000 })
  t.ok(ms < 5000, `revoked on B ${ms} ms after A's write resolved`)
  t.ok(tb.generation() > generation, 'the store generation moved on B: its caches invalidate')
  t.ok(told.some(([db, keys]) => db === 'tokens' && keys.includes(id)), 'B\'s listener was told of the token')
  t.same(toldA, [], 'A is not told of its own writes')
  // And the other way: B writes, A reads.
  const other = newTokenId()
  await tb.add({ id: other, hash: hashToken(newTokenSecret()), companyId: 'acme', scopes: [], createdAt: '2026-11-21T00:00:00Z' })
  await until('A has B\'s token', () => ta.get(other) !== undefined, { ms: 5000 })
})

t.test('what a store opened beside this one writes (the door\'s worker\'s) is not reported by this one\'s feed; another instance\'s writes are, each once', async t => {
  const database = await migratedDatabase(cluster)
  const pool = cluster.connection(database)
  const root = t.testdir()   // once: each call makes it anew
  const main = openAnyStore(root + '/a', { postgres: { pool } })
  await main.opened
  // As the door's worker opens it (open-store.ts besideThisProcess): the same replica, no feed of its own.
  const share = main.threadShare()!
  const beside = openAnyStore(root + '/a', { openInThisProcess: true, postgres: { pool, follow: false, ...share } })
  const other = openAnyStore(root + '/b', { postgres: { pool } })
  t.teardown(async () => { await beside.close(); await main.close(); await other.close() })
  await Promise.all([beside.opened, other.opened])
  const told: string[] = []
  main.onApplied(changes => { for (const key of changes.get('tokens') ?? []) told.push(String(key)) })
  const token = (id: string) => ({ id, hash: hashToken(newTokenSecret()), companyId: 'acme', scopes: [], createdAt: '2026-11-21T00:00:00Z' })
  const [besideTokens, mainTokens, otherTokens] = [beside, main, other].map(openTokens)
  // Interleaved: the feed catches up while the beside store's commits are in flight.
  const ids = { beside: [] as string[], main: [] as string[], other: [] as string[] }
  await Promise.all(Array.from({ length: 10 }, async (_, i) => {
    for (const [name, tokens] of [['beside', besideTokens], ['other', otherTokens], ['main', mainTokens]] as const) {
      const id = `${name}-${i}`
      ids[name].push(id)
      await tokens!.add(token(id))
    }
  }))
  await until('every token of the other instance reported', () => ids.other.every(id => told.includes(id)), { ms: 5000 })
  // One more write of the other instance: everything before it has been reported by then.
  await otherTokens!.add(token('other-last'))
  await until('the last one reported', () => told.includes('other-last'), { ms: 5000 })
  t.same(told.filter(id => !id.startsWith('other-')), [], 'nothing this process wrote, through either store')
  t.same(told.filter(id => id.startsWith('other-')).sort(), [...ids.other, 'other-last'].sort(), 'each of the other instance\'s writes once')
  t.ok(ids.beside.every(id => mainTokens!.get(id) !== undefined), 'what the beside store wrote is in the replica all the same')
  for (const [name, store] of [['this instance', main], ['the other', other]] as const) {
    const v = await store.verify()
    t.same(v?.kind === 'compared' ? v.differ : v, [], `${name}'s replica equals the database`)
  }
})

t.test('a replica of another database is cleared and loaded from the one it now follows', async t => {
  const root = t.testdir()   // once: each call makes it anew
  const dir = root + '/replica'
  const first = await migratedDatabase(cluster)
  const second = await migratedDatabase(cluster)
  const s1 = openAnyStore(dir, { postgres: { pool: cluster.connection(first) } })
  await s1.opened
  const firstThings = s1.db<string>('things')
  await s1.writeDurable(() => { firstThings.putSync('only-in-first', 'x') })
  await s1.close()
  // The second database gets a record through another replica.
  const other = openAnyStore(root + '/other', { postgres: { pool: cluster.connection(second) } })
  await other.opened
  const otherThings = other.db<string>('things')
  await other.writeDurable(() => { otherThings.putSync('only-in-second', 'y') })
  await other.close()

  const log = recordingLog()
  const s2 = openAnyStore(dir, { postgres: { pool: cluster.connection(second) }, log })
  t.teardown(() => s2.close())
  await s2.opened
  const things = s2.db<string>('things')
  t.equal(things.get('only-in-first'), undefined, 'the other database\'s record is gone')
  t.equal(things.get('only-in-second'), 'y', 'this database\'s record is loaded')
  t.ok(log.lines.some(l => l.level === 'info' && /another database/.test(l.msg)), 'the reload is logged', { lines: log.lines })
})

t.test('a folder holding an LMDB store is not taken for a replica (it would be wiped)', async t => {
  const dir = t.testdir()
  const lmdb = openAnyStore(dir)
  await lmdb.writeDurable(() => lmdb.db<number>('companies').putSync('acme', 1))
  await lmdb.close()
  await t.rejects(openStore(dir), { code: 'EPX_STORE_OPEN_FAILED', message: /epx store copy --to postgres/ })
  const again = openAnyStore(dir)
  t.equal(again.db<number>('companies').get('acme'), 1, 'the LMDB store is untouched')
  await again.close()
})

t.test('activation refuses a database without the schema, at an older or newer version, or holding foreign tables, and writes nothing', async t => {
  const cases: Array<[string, (db: string) => void, RegExp, string]> = [
    ['empty', () => {}, /holds no epx schema: run `epx store migrate`/, 'EPX_STORE_SCHEMA_MISSING'],
    ['older', db => { psql(`UPDATE epx_schema SET version = ${SCHEMA_VERSION - 1}`, db) }, /run `epx store migrate` to upgrade/, 'EPX_STORE_SCHEMA_OLD'],
    ['newer', db => { psql(`UPDATE epx_schema SET version = ${SCHEMA_VERSION + 1}`, db) }, /newer than the 1 this epx knows/, 'EPX_STORE_SCHEMA_NEWER'],
    ['foreign', db => { psql('CREATE TABLE invoices (id int)', db) }, /not epx's \(invoices\)/, 'EPX_STORE_SCHEMA_FOREIGN'],
  ]
  const root = t.testdir()
  for (const [name, prepare, message, code] of cases) {
    const database = `refused_${name}`
    if (name === 'empty' || name === 'foreign') cluster.createDatabase(database)
    else await migratedDatabase(cluster, database)
    prepare(database)
    const dump = () => {
      const tables = psql("SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'", database)
      return tables.includes('epx_schema')
        ? `${tables} ${psql('SELECT version, migrated_at FROM epx_schema', database)} ${psql('SELECT count(*) FROM epx_record', database)}`
        : tables
    }
    const before = dump()
    const store = openAnyStore(root + '/' + name, { postgres: { pool: cluster.connection(database) } })
    await t.rejects(store.opened, { code, message }, name)
    t.throws(() => store.db('things').get('x'), { code: 'NO_STORE' }, `${name}: the store does not answer`)
    await store.close()
    t.equal(dump(), before, `${name}: nothing was written`)
  }
})

t.test('migrate: creates the schema, is idempotent, refuses a newer version', async t => {
  cluster.createDatabase('migrate_me')
  const client = new pg.Client(cluster.connection('migrate_me'))
  await client.connect()
  t.teardown(() => client.end())
  const first = await migrateSchema(client, 'migrate_me')
  t.match(first, { from: 0, to: SCHEMA_VERSION })
  const again = await migrateSchema(client, 'migrate_me')
  t.same(again, { ...first, from: SCHEMA_VERSION })
  psql(`UPDATE epx_schema SET version = ${SCHEMA_VERSION + 1}`, 'migrate_me')
  await t.rejects(migrateSchema(client, 'migrate_me'), { code: 'EPX_STORE_SCHEMA_NEWER' })
  t.equal(psql('SELECT version FROM epx_schema', 'migrate_me'), String(SCHEMA_VERSION + 1), 'left as it was')
})

t.test('the database stopped and started under the store: NO_STORE while it is down, one error line, then it recovers by itself', async t => {
  const dir = t.testdir()
  const log = recordingLog()
  const store = await openStore(dir, { log })
  t.teardown(() => store.close())
  const db = store.db<number>('things')
  await store.writeDurable(() => db.putSync('n', 1))
  cluster.stop()
  let started = false
  t.teardown(() => { if (!started) cluster.start() })
  await until('the store sees the database gone', () => !store.ready(), { ms: 5000 })
  t.throws(() => db.get('n'), { code: 'NO_STORE' }, 'a read answers NO_STORE (never a stale answer)')
  await t.rejects(store.writeDurable(() => db.putSync('n', 2)), { code: 'NO_STORE' })
  await new Promise(resolve => setTimeout(resolve, 600))   // several reconnection attempts
  t.equal(log.lines.filter(l => l.level === 'error').length, 1, 'one error line for the episode')
  cluster.start()
  started = true
  await until('the store is back', () => store.ready())
  t.equal(db.get('n'), 1)
  await store.writeDurable(() => db.putSync('n', 3))
  t.equal(db.get('n'), 3)
  t.equal(log.lines.filter(l => l.level === 'info' && /reachable again/.test(l.msg)).length, 1, 'one line when it recovers')
})

t.test('a revision published through one instance is served, byte for byte, by another; retention drops its bytes from the database', async t => {
  const database = await migratedDatabase(cluster)
  const pool = cluster.connection(database)
  const root = t.testdir()   // once: each call makes it anew
  const a = openAnyStore(root + '/a', { postgres: { pool } })
  const b = openAnyStore(root + '/b', { postgres: { pool } })
  await Promise.all([a.opened, b.opened])
  const ra = openRevisions(a, { retentionDays: 1 })
  const rb = openRevisions(b, { retentionDays: 1 })
  t.teardown(async () => { ra.close(); rb.close(); await a.close(); await b.close() })
  const T0 = Date.parse('2026-11-21T07:00:00Z')
  const doc = (siteId: string, pad: number) => ({ siteId, targetDate: '2026-11-22', render: (e: string) => JSON.stringify({ e, siteId, pad: 'x'.repeat(pad) }) })
  const published = await ra.publish([doc('PRM00000000000001', 10), doc('PRM00000000000002', 20000)], T0)
  await until('B has the revisions', () => rb.latest('PRM00000000000002', '2026-11-22') !== undefined, { ms: 5000 })
  for (const meta of published) {
    const onB = rb.latest(meta.siteId, '2026-11-22')!
    t.same(onB, meta, 'the same metadata, segment reference included')
    t.same(rb.bytesOf(onB), ra.bytesOf(meta), `${meta.siteId}: the same bytes`)
  }
  t.equal(psql(`SELECT count(*) FROM epx_record WHERE db = '${REVISION_BYTES_DB}' AND value IS NOT NULL`, database), '2')
  t.equal(await ra.prune(T0 + 3 * 86_400_000), 2)
  t.equal(psql(`SELECT count(*) FROM epx_record WHERE db = '${REVISION_BYTES_DB}' AND value IS NOT NULL`, database), '0', 'the bytes left the database with their segment')
  await until('B forgot them', () => rb.latest('PRM00000000000001', '2026-11-22') === undefined, { ms: 5000 })
})

t.test('writers of two instances take turns and each sees the other\'s last write: of two overlapping companies added at once through A and B, one lands', async t => {
  const database = await migratedDatabase(cluster)
  const pool = cluster.connection(database)
  const root = t.testdir()   // once: each call makes it anew
  const a = openAnyStore(root + '/a', { postgres: { pool } })
  const b = openAnyStore(root + '/b', { postgres: { pool } })
  t.teardown(async () => { await a.close(); await b.close() })
  await Promise.all([a.opened, b.opened])
  const company = (id: string): CompanyRecord =>
    ({ id, name: id, status: 'active', certSubject: `CN=${id}`, perimeter: ['PRM00000000000001'], createdAt: '2026-11-01T00:00:00Z' })
  const ca = openCompanies(a)
  const cb = openCompanies(b)
  for (let round = 0; round < 5; round++) {
    const results = await Promise.allSettled([ca.add(company(`a${round}`)), cb.add(company(`b${round}`))])
    t.same(results.map(r => r.status).sort(), ['fulfilled', 'rejected'], `round ${round}: one of the two`)
    const landed = results[0]!.status === 'fulfilled' ? `a${round}` : `b${round}`
    // Free the site for the next round, through the instance that did not add it.
    await until('both replicas have it', () => ca.get(landed) !== undefined && cb.get(landed) !== undefined, { ms: 5000 })
    await (landed.startsWith('a') ? cb : ca).update(landed, c => ({ ...c, status: 'suspended' }))
  }
  t.equal(psql("SELECT count(*) FROM epx_record WHERE db = 'companies' AND value IS NOT NULL", database), '5')
})

t.test('a database behind what the replica applied (a failover that lost the last commits) reloads the replica: nothing lost is served', async t => {
  const dir = t.testdir()
  const database = await databaseOf(dir)
  const first = await openStore(dir)
  const things = first.db<number>('things')
  await first.writeDurable(() => things.putSync('kept', 1))
  await first.writeDurable(() => things.putSync('lost', 2))
  await first.close()
  psql("DELETE FROM epx_record WHERE db = 'things' AND seq = (SELECT max(seq) FROM epx_record)", database)
  const log = recordingLog()
  const again = await openStore(dir, { log })
  t.teardown(() => again.close())
  t.equal(again.db<number>('things').get('kept'), 1)
  t.equal(again.db<number>('things').get('lost'), undefined, 'the commit the database lost is gone from the replica too')
  t.ok(log.lines.some(l => l.level === 'warn' && /behind what this replica applied/.test(l.msg)))
})

t.test('removals are kept 30 days; a replica offline longer than that reloads, so it never keeps a record removed meanwhile', async t => {
  const root = t.testdir()
  const database = await migratedDatabase(cluster)
  const pool = cluster.connection(database)
  const a = openAnyStore(root + '/a', { postgres: { pool } })
  await a.opened
  const aThings = a.db<number>('things')
  await a.writeDurable(() => { aThings.putSync('gone', 1); aThings.putSync('stays', 2) })
  await a.close()
  // Another instance removes it while A is away.
  const b = openAnyStore(root + '/b', { postgres: { pool } })
  await b.opened
  const bThings = b.db<number>('things')
  await b.writeDurable(() => bThings.removeSync('gone'))
  await b.close()
  t.equal(psql("SELECT count(*) FROM epx_record WHERE value IS NULL AND removed_at IS NOT NULL", database), '1', 'the removal is a stamped row')
  const client = new pg.Client(pool)
  await client.connect()
  t.teardown(() => client.end())
  t.equal(await pruneRemovals(client), 0, 'a recent removal is kept')
  psql("UPDATE epx_record SET removed_at = now() - interval '31 days' WHERE value IS NULL", database)
  t.equal(await pruneRemovals(client), 1, 'an old one is dropped')
  t.equal(psql('SELECT pruned_through > 0 FROM epx_schema', database), 't')

  const log = recordingLog()
  const again = openAnyStore(root + '/a', { postgres: { pool }, log })
  t.teardown(() => again.close())
  await again.opened
  t.equal(again.db<number>('things').get('gone'), undefined, 'the record removed while it was away is gone')
  t.equal(again.db<number>('things').get('stays'), 2)
  t.ok(log.lines.some(l => /offline longer than removals are kept/.test(l.msg)))
})
