import t from 'tap'
import { join } from 'node:path'
import { loadConfig } from '../../../src/config.ts'
import { openStore } from '../../../src/store/open-store.ts'
import { postgresStoreOptions } from '../../../src/store/postgres/pool-config.ts'
import { fileCluster, migratedDatabase } from '../../helpers/store-kinds.ts'

// docs/operating.md "Durability across a database failover": with synchronous replication,
// a COMMIT waits for a standby, and the server's statement_timeout does not bound that
// wait. A write whose standby is gone must answer NO_STORE (the API's 503) within the
// configured statement timeout and a little more, never hang.

t.test('a commit waiting for a synchronous standby that never answers fails with NO_STORE instead of hanging', async t => {
  const cluster = fileCluster(t)
  const database = await migratedDatabase(cluster)
  // The file's cluster turns synchronous_commit off for speed; this database needs it on.
  cluster.psql(`ALTER DATABASE ${database} SET synchronous_commit = on`)
  const config = loadConfig({
    store: { kind: 'postgres', path: 'replica', postgres: { host: cluster.socketDir, port: cluster.port, user: 'postgres', database, statementTimeoutMs: 500 } },
  })
  const dataDir = t.testdir()
  const store = openStore(join(dataDir, 'replica'), { postgres: postgresStoreOptions(config.store, { dataDir }) })
  t.teardown(() => store.close())
  await store.opened
  const db = store.db<string>('generation')
  await store.writeDurable(() => db.putSync('probe', 'before'))
  t.equal(db.get('probe'), 'before', 'a write lands while no standby is required')

  cluster.psql("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
  cluster.psql('SELECT pg_reload_conf()')
  // pg_reload_conf() only signals the postmaster. A new session that reads the setting
  // started after the postmaster reloaded it, and so after it signalled the store's own
  // sessions, which reload before their next command: the commit below then waits.
  const deadline = Date.now() + 10_000
  while (cluster.psql('SHOW synchronous_standby_names').trim() !== 'nobody') {
    if (Date.now() > deadline) throw new Error('the server did not reload synchronous_standby_names within 10 s')
  }
  const started = Date.now()
  await t.rejects(store.writeDurable(() => db.putSync('probe', 'waiting')), { code: 'NO_STORE' })
  const waited = Date.now() - started
  // statementTimeoutMs + 2 s is the bound docs/operating.md states; 1 s more for a loaded machine.
  t.ok(waited < 500 + 2000 + 1000, `refused after ${waited} ms, within statementTimeoutMs + 2 s`)
  t.equal(db.get('probe'), 'before', 'the replica holds only what the database confirmed')

  cluster.psql("ALTER SYSTEM RESET synchronous_standby_names")
  cluster.psql('SELECT pg_reload_conf()')
})
