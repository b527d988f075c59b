import t, { type Test } from 'tap'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import pg from 'pg'
import { loadConfig } from '../../../src/config.ts'
import { openStore } from '../../../src/store/open-store.ts'
import { connectFailure, poolConfig, type PostgresConfig } from '../../../src/store/postgres/connect.ts'
import { LEADER_LOCK, pgLeadership } from '../../../src/store/postgres/leader.ts'
import { postgresStoreOptions } from '../../../src/store/postgres/pool-config.ts'
import { decodeKey } from '../../../src/store/postgres/records.ts'
import { startPostgres, type PostgresCluster } from '../../../scripts/postgres-cluster.ts'
import { migratedDatabase } from '../../helpers/store-kinds.ts'
import { until } from '../../helpers/eventually.ts'

// docs/operating.md "Following a promoted standby": store.postgres.hosts lists the cluster's
// members, and every connection epx makes goes to the one accepting writes, so a promoted
// standby is followed without a configuration change or a restart.

/** A primary with a database holding epx's schema, and a streaming standby of it (synchronous once `synchronous()`). */
async function pair (t: Test): Promise<{ primary: PostgresCluster; standby: PostgresCluster; database: string; synchronous(): void }> {
  // fsync off: no test here crashes the machine, only a server (its writes are in the OS's cache).
  const primary = startPostgres({ fsync: 'off' })
  t.teardown(() => primary.destroy())
  const database = await migratedDatabase(primary)
  const standby = startPostgres({ fsync: 'off', cluster_name: 'standby' }, { standbyOf: primary })
  t.teardown(() => standby.destroy())
  return {
    primary,
    standby,
    database,
    synchronous () {
      // ALTER SYSTEM after the copy: the standby, once promoted, waits for no standby of its own.
      primary.psql("ALTER SYSTEM SET synchronous_standby_names = 'standby'")
      primary.psql('SELECT pg_reload_conf()')
      const deadline = Date.now() + 10_000
      while (primary.psql("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'").trim() !== 'sync') {
        if (Date.now() > deadline) throw new Error('the standby did not become synchronous within 10 s')
      }
    },
  }
}

const member = (c: PostgresCluster): string => `${c.socketDir}:${c.port}`

const storeConfig = (postgres: object) => loadConfig({ store: { kind: 'postgres', path: 'replica', postgres: { user: 'postgres', ...postgres } } })

t.test('hosts [standby, primary]: epx connects to the primary, and writes there', async t => {
  const { primary, standby, database } = await pair(t)
  t.equal(standby.psql('SELECT pg_is_in_recovery()').trim(), 't', 'the first member listed is a standby')
  const config = storeConfig({ hosts: [member(standby), member(primary)], database })
  const dataDir = t.testdir()
  const store = openStore(join(dataDir, 'replica'), { postgres: postgresStoreOptions(config.store, { dataDir }) })
  t.teardown(() => store.close())
  await store.opened
  const db = store.db<string>('generation')
  await store.writeDurable(() => db.putSync('probe', 'written'))
  t.equal(primary.psql(`SELECT count(*) FROM epx_record WHERE db = 'generation' AND value IS NOT NULL`, database).trim(), '1', 'the write is in the primary')
  // The standby was only asked whether it is one: none of epx's connections stays there.
  const deadline = Date.now() + 5000
  let onStandby = ''
  while ((onStandby = standby.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'epx%'").trim()) !== '0' && Date.now() < deadline) await new Promise(r => setTimeout(r, 50))
  t.equal(onStandby, '0', 'no connection of epx stays on the standby')

  // The same through a connection string listing both, as libpq writes it.
  const fromString = loadConfig({ store: { kind: 'postgres', postgres: { connectionString: `postgresql://postgres@/${database}?host=${standby.socketDir},${primary.socketDir}&port=${standby.port}` } } })
  const pool = new pg.Pool(poolConfig(fromString.store.postgres!, { dataDir }))
  t.teardown(() => pool.end())
  t.equal((await pool.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby')).rows[0]!.standby, false, 'a connection string listing the members: the primary too')
})

t.test('a synchronous standby promoted under load: writes go on after the promotion, and none acknowledged is lost', async t => {
  const { primary, standby, database, synchronous } = await pair(t)
  synchronous()
  const config = storeConfig({ hosts: [member(primary), member(standby)], database, statementTimeoutMs: 1000, connectTimeoutMs: 1000 })
  const dataDir = t.testdir()
  const store = openStore(join(dataDir, 'replica'), { postgres: postgresStoreOptions(config.store, { dataDir }) })
  t.teardown(() => store.close())
  await store.opened
  const db = store.db<number>('generation')

  const acknowledged: string[] = []
  let refused = 0
  let writing = true
  let n = 0
  /** Two writers, each one write after another until told to stop. */
  const writer = async (name: string): Promise<void> => {
    while (writing) {
      const key = `${name}-${++n}`
      try {
        await store.writeDurable(() => db.putSync(key, n))
        acknowledged.push(key)
      } catch (err) {
        if ((err as { code?: string }).code !== 'NO_STORE') throw err
        refused++
        await new Promise(r => setTimeout(r, 50))
      }
    }
  }
  const writers = [writer('a'), writer('b')]
  await until('writes before the crash', () => acknowledged.length >= 20)

  primary.crash()
  const beforePromotion = acknowledged.length
  standby.promote()
  const promotedAt = acknowledged.length
  await until('writes after the promotion', () => acknowledged.length >= promotedAt + 20, { ms: 20_000 })
  writing = false
  await Promise.all(writers)

  t.ok(beforePromotion >= 20 && acknowledged.length >= promotedAt + 20, `${acknowledged.length} writes acknowledged, ${acknowledged.length - promotedAt} after the promotion, ${refused} refused meanwhile (NO_STORE)`)
  const rows = standby.psql("SELECT encode(key, 'hex') FROM epx_record WHERE db = 'generation' AND value IS NOT NULL", database).trim().split('\n')
  const stored = new Set(rows.map(hex => String(decodeKey(Buffer.from(hex, 'hex')))))
  const lost = acknowledged.filter(k => !stored.has(k))
  t.same(lost, [], 'every acknowledged write is in the promoted database')
  t.equal(standby.psql('SELECT pg_is_in_recovery()').trim(), 'f', 'which is the primary now')
})

t.test('no member accepts writes: the error names each member and why it was not taken', async t => {
  const { primary, standby, database } = await pair(t)
  primary.crash()
  const config = storeConfig({ hosts: [member(standby), member(primary)], database, connectTimeoutMs: 1000 }).store.postgres! as PostgresConfig
  const dataDir = t.testdir()
  const pool = new pg.Pool(poolConfig(config, { dataDir }))
  t.teardown(() => pool.end())
  const err = await pool.query('SELECT 1').then(() => new Error('connected'), (e: unknown) => connectFailure(e, config, { dataDir }))
  t.match(err, { code: 'EPX_STORE_CONNECT_FAILED' })
  t.equal(err.message, `cannot connect to PostgreSQL (database ${database} on the member accepting writes of ` +
    `the Unix socket in ${standby.socketDir} (port ${standby.port}), the Unix socket in ${primary.socketDir} (port ${primary.port}) as postgres, no TLS): ` +
    `no member accepts writes: the Unix socket in ${standby.socketDir} (port ${standby.port}): a standby (pg_is_in_recovery() is true): it does not accept writes; ` +
    `the Unix socket in ${primary.socketDir} (port ${primary.port}): nothing answers there (ENOENT): is the server running, are store.postgres.hosts right?`)
})

t.test('a connection whose write is refused as read-only is dropped, and the next one looks for the primary again', async t => {
  const { primary, standby, database } = await pair(t)
  const config = storeConfig({ hosts: [member(standby), member(primary)], database }).store.postgres!
  const pool = new pg.Pool(poolConfig(config, { dataDir: t.testdir() }))
  t.teardown(() => pool.end())
  const client = await pool.connect()
  // What a server demoted behind an open connection answers to a write (SQLSTATE 25006).
  await client.query('SET default_transaction_read_only = on')
  await t.rejects(client.query('CREATE TABLE refused (n int)'), { code: '25006' }, 'the write is refused')
  await t.rejects(client.query('SELECT 1'), /not queryable/, 'and that connection is given up')
  client.release()
  t.equal(pool.totalCount, 0, 'the pool does not keep it')
  t.equal((await pool.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby')).rows[0]!.standby, false, 'the next connection is on the primary')
})

t.test('the leadership session is on the primary too', async t => {
  const { primary, standby, database } = await pair(t)
  const config = storeConfig({ hosts: [member(standby), member(primary)], database }).store.postgres!
  const leadership = pgLeadership({ connection: poolConfig(config, { dataDir: t.testdir() }), retryMs: 100 })
  t.teardown(() => leadership.close())
  const deadline = Date.now() + 10_000
  while (!leadership.isLeader() && Date.now() < deadline) await new Promise(r => setTimeout(r, 50))
  t.ok(leadership.isLeader(), 'it leads')
  t.equal(primary.psql(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = ${LEADER_LOCK.classId} AND objid = ${LEADER_LOCK.objId} AND granted`, database).trim(), '1',
    'its lock is held on the primary, where every instance looks for it')
})

t.test('a member that never answers, given up by its caller, is tried last at the next search', async t => {
  const primary = startPostgres({ fsync: 'off' })
  t.teardown(() => primary.destroy())
  // A host gone silent: it takes the connection and never answers.
  const silent = createServer(() => {}).listen(0, '127.0.0.1')
  await new Promise(resolve => silent.once('listening', resolve))
  t.teardown(() => { silent.close() })
  const config = storeConfig({ hosts: [`127.0.0.1:${(silent.address() as AddressInfo).port}`, member(primary)], database: 'postgres', connectTimeoutMs: 3000 }).store.postgres!
  const { Client: PrimaryClient, ...settings } = poolConfig(config, { dataDir: t.testdir() })
  const Client = PrimaryClient as typeof pg.Client
  // A caller that waits less than one connect timeout (as the leadership's check does), then ends the client.
  const first = new Client(settings)
  const gaveUp = first.connect().then(() => 'connected', (e: Error) => e.message)
  await new Promise(r => setTimeout(r, 300))
  await first.end()
  t.equal(await gaveUp, 'Connection terminated', 'ended while it waited on the silent member: the connect fails at once')
  const started = Date.now()
  const second = new Client(settings)
  await second.connect()
  t.teardown(() => second.end())
  t.equal((await second.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby')).rows[0]!.standby, false)
  t.ok(Date.now() - started < 2000, `the next search went to the primary first (${Date.now() - started} ms), not through the silent member's timeout`)
})
