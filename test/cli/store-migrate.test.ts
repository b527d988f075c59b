import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { epx, initializedDataDir } from '../helpers/cli.ts'
import { settingsPath } from '../../src/cli/settings.ts'
import { startPostgres } from '../../scripts/postgres-cluster.ts'

// `epx store migrate` creates the PostgreSQL store's schema, says so, does nothing the
// second time, and refuses a database that is not epx's; every other command then opens it.
const cluster = startPostgres({ fsync: 'off' })
t.teardown(() => cluster.destroy())

async function dataDirOn (database: string): Promise<string> {
  const dir = await initializedDataDir(t)
  const file = settingsPath(dir)
  const settings = JSON.parse(readFileSync(file, 'utf8')) as { plugin: { store?: Record<string, unknown> } }
  settings.plugin.store = { ...settings.plugin.store, kind: 'postgres', postgres: { connectionString: cluster.url(database) } }
  writeFileSync(file, JSON.stringify(settings, null, 2))
  return dir
}

t.test('migrate creates the schema once; a company added afterwards is in the database', async t => {
  cluster.createDatabase('cli_fresh')
  const dir = await dataDirOn('cli_fresh')
  const before = await epx(dir, 'company', 'list')
  t.equal(before.code, 1)
  t.match(before.err, /holds no epx schema: run `epx store migrate`/)
  const first = await epx(dir, 'store', 'migrate')
  t.equal(first.code, 0, first.err)
  t.match(first.out, /migrated from version 0 to 1/)
  const second = await epx(dir, 'store', 'migrate')
  t.equal(second.code, 0)
  t.match(second.out, /at version 1: nothing to do/)
  t.equal((await epx(dir, 'company', 'add', 'acme', '--name', 'ACME')).code, 0)
  t.equal(cluster.psql("SELECT count(*) FROM epx_record WHERE db = 'companies'", 'cli_fresh').trim(), '1')
})

t.test('with store.postgres.hosts, migrate and the commands after it go to the member accepting writes', async t => {
  cluster.createDatabase('cli_hosts')
  const dir = await dataDirOn('cli_hosts')
  const file = settingsPath(dir)
  const settings = JSON.parse(readFileSync(file, 'utf8')) as { plugin: { store: Record<string, unknown> } }
  // The first member has nothing listening: the command goes on to the next.
  settings.plugin.store.postgres = { hosts: [`${dir}:5432`, `${cluster.socketDir}:${cluster.port}`], user: 'postgres', database: 'cli_hosts' }
  writeFileSync(file, JSON.stringify(settings, null, 2))
  const r = await epx(dir, 'store', 'migrate')
  t.equal(r.code, 0, r.err)
  t.match(r.out, /migrated from version 0 to 1/)
  t.equal((await epx(dir, 'company', 'add', 'acme', '--name', 'ACME')).code, 0)
  t.equal(cluster.psql("SELECT count(*) FROM epx_record WHERE db = 'companies'", 'cli_hosts').trim(), '1')
})

t.test('migrate refuses a database holding tables of others, and leaves it as it was', async t => {
  cluster.createDatabase('cli_foreign')
  cluster.psql('CREATE TABLE invoices (id int)', 'cli_foreign')
  const dir = await dataDirOn('cli_foreign')
  const r = await epx(dir, 'store', 'migrate')
  t.equal(r.code, 1)
  t.match(r.err, /holds tables that are not epx's \(invoices\)/)
  t.equal(cluster.psql("SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = 'public'", 'cli_foreign').trim(), 'invoices')
})

t.test('epx store backup refuses a PostgreSQL store: the database is the store, its tools back it up', async t => {
  cluster.createDatabase('cli_backup')
  const dir = await dataDirOn('cli_backup')
  const r = await epx(dir, 'store', 'backup', dir + '/copy')
  t.equal(r.code, 2)
  t.match(r.err, /back it up with PostgreSQL's tools \(pg_dump/)
})
