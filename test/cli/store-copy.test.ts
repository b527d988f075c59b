// `epx store copy --to postgres`: a seeded LMDB store moved into a migrated, empty database of
// a real cluster, verified per sub-database (count and SHA-256 from both sides), then read
// back through the PostgreSQL store (revisions' bytes included, from the segment files);
// refused into a database that is not empty or not migrated; all or nothing when the
// database fails half-way or a revision's bytes are missing.
import t, { type Test } from 'tap'
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { settingsPath } from '../../src/cli/settings.ts'
import { openMetering } from '../../src/store/metering.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openRevisions } from '../../src/store/revisions.ts'
import { loadConfig } from '../../src/config.ts'
import { postgresStoreOptions } from '../../src/store/postgres/pool-config.ts'
import { SUB_DATABASES } from '../../src/store/postgres/schema.ts'
import { epx, initializedDataDir } from '../helpers/cli.ts'
import { startPostgres } from '../../scripts/postgres-cluster.ts'
import { seedStore } from '../helpers/seed.ts'

const cluster = startPostgres({ fsync: 'off' })
t.teardown(() => cluster.destroy())

const DAY = '2026-11-22'

/** A data folder whose LMDB store (store.path "store") holds companies, programmes, revisions, metering and tokens. */
async function seededDataDir (t: Test): Promise<{ dir: string; documents: Buffer[] }> {
  const dir = await initializedDataDir(t)
  setStore(dir, { path: 'store' })
  const s = seedStore(t, openStore(join(dir, 'store')))
  await s.addCompany('acme', 'all')
  await s.addCompany('beta', ['PRM30000000000003'], 'suspended')
  await s.receive({ targetDate: DAY, emittedAt: '2026-11-21T10:00:00Z', sites: 2, slots: 8 }, 'acme')
  await s.receive({ targetDate: DAY, emittedAt: '2026-11-21T11:00:00Z', sites: 1, slots: 4, kwh: () => 0 }, 'acme')
  const metas = [await s.publish(DAY, 'PRM30000000000001'), await s.publish(DAY, 'PRM30000000000002', { kw: k => 20 + k % 3 })]
  const documents = metas.map(m => s.revisions.bytesOf(m)!)
  const start = Date.parse('2026-11-21T23:00:00Z')
  await openMetering(s.store, { now: () => start + 86_400_000, retentionDays: 90 }).report(Array.from({ length: 8 }, (_, j) => ({
    siteId: 'PRM30000000000001', startUtc: new Date(start + j * 900_000).toISOString(), endUtc: new Date(start + (j + 1) * 900_000).toISOString(), kwh: 2 + j,
  })))
  s.revisions.close()
  await s.store.close()
  const token = await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'inbound:programme-soutirage')
  t.equal(token.code, 0, token.err)
  return { dir, documents }
}

function setStore (dir: string, store: Record<string, unknown>): void {
  const file = settingsPath(dir)
  const settings = JSON.parse(readFileSync(file, 'utf8')) as { plugin: { store?: Record<string, unknown> } }
  settings.plugin.store = { ...settings.plugin.store, ...store }
  writeFileSync(file, JSON.stringify(settings, null, 2))
}

const onDatabase = (database: string) => ({ postgres: { connectionString: cluster.url(database) } })
const rowsIn = (database: string): Record<string, number> => Object.fromEntries(cluster.psql(
  'SELECT db, count(*) FROM epx_record WHERE value IS NOT NULL GROUP BY db ORDER BY db', database)
  .trim().split('\n').filter(Boolean).map(l => { const [db, n] = l.split('|'); return [db!, Number(n)] }))

t.test('copies every sub-database, prints the verification, and the PostgreSQL store then serves the records', async t => {
  const { dir, documents } = await seededDataDir(t)
  cluster.createDatabase('copy_ok')
  setStore(dir, { kind: 'postgres', ...onDatabase('copy_ok') })   // store.path still names the LMDB store to copy
  t.equal((await epx(dir, 'store', 'migrate')).code, 0)

  const r = await epx(dir, 'store', 'copy', '--to', 'postgres', '--json')
  t.equal(r.code, 0, r.err)
  const report = JSON.parse(r.out) as { tables: Array<{ db: string; lmdb: { records: number; sha256: string }; postgres: { records: number; sha256: string } }> }
  t.same(report.tables.map(x => x.db), Object.keys(SUB_DATABASES), 'every sub-database this epx knows, in one order')
  for (const x of report.tables) t.same(x.postgres, x.lmdb, `${x.db}: the same count and SHA-256 from both sides`)
  const counts = Object.fromEntries(report.tables.filter(x => x.lmdb.records > 0).map(x => [x.db, x.lmdb.records]))
  t.match(counts, { companies: 2, tokens: 1, 'token-hashes': 1, instructions: Number, 'instruction-effective': 2, metering: Number, 'rev-latest': 2, 'rev-bytes': 2, audit: Number },
    'companies, tokens, programmes (binary), metering (binary), revisions with their bytes (from the segment files) and audit all travelled')
  t.same(rowsIn('copy_ok'), counts, 'and PostgreSQL holds exactly those rows')

  // The copy as the engine reads it: a new replica folder, loaded from the database.
  setStore(dir, { path: 'replica' })
  const companies = await epx(dir, 'company', 'list', '--json')
  t.equal(companies.code, 0, companies.err)
  t.same((JSON.parse(companies.out) as Array<{ id: string; status: string }>).map(c => [c.id, c.status]), [['acme', 'active'], ['beta', 'suspended']])
  const instructions = await epx(dir, 'instructions', 'list', '--date', DAY, '--json')
  t.equal(instructions.code, 0, instructions.err)
  t.equal((JSON.parse(instructions.out) as unknown[]).length, 3, 'both programmes\' instructions: 2 sites, then 1')
  const config = loadConfig((JSON.parse(readFileSync(settingsPath(dir), 'utf8')) as { plugin: unknown }).plugin)
  const store = openStore(join(dir, 'replica'), { postgres: postgresStoreOptions(config.store, { dataDir: dir })! })
  await store.opened
  const revisions = openRevisions(store, { retentionDays: 90 })
  t.same(['PRM30000000000001', 'PRM30000000000002'].map(site => revisions.bytesOf(revisions.latest(site, DAY)!)), documents,
    'each revision served byte for byte as published, from the database')
  revisions.close()
  await store.close()
})

t.test('the table a person reads: both counts and both checksums per sub-database', async t => {
  const { dir } = await seededDataDir(t)
  cluster.createDatabase('copy_table')
  setStore(dir, { kind: 'postgres', ...onDatabase('copy_table') })
  t.equal((await epx(dir, 'store', 'migrate')).code, 0)
  const r = await epx(dir, 'store', 'copy', '--to', 'postgres')
  t.equal(r.code, 0, r.err)
  t.match(r.lines[0], /^copied \d+ record\(s\) from .*store into database copy_table on the Unix socket in .* as postgres, no TLS, verified:$/)
  t.match(r.lines[1], /^SUB-DATABASE +LMDB +POSTGRESQL +SHA-256 \(LMDB\) +SHA-256 \(POSTGRESQL\)$/)
  t.match(r.out, /^companies +2 +2 +[0-9a-f]{64} +same$/m)
  t.match(r.out, /^sessions +0 +0 +e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 +same$/m, 'an empty sub-database: the SHA-256 of nothing')
  t.match(r.lines.at(-1), /set store\.kind to "postgres" and store\.path to a new folder/)
})

t.test('refused, writing nothing: a database that already holds records, one not migrated, a wrong --to', async t => {
  const { dir } = await seededDataDir(t)
  cluster.createDatabase('copy_twice')
  setStore(dir, { kind: 'postgres', ...onDatabase('copy_twice') })
  t.equal((await epx(dir, 'store', 'migrate')).code, 0)
  t.equal((await epx(dir, 'store', 'copy', '--to', 'postgres')).code, 0)
  const before = rowsIn('copy_twice')
  const again = await epx(dir, 'store', 'copy', '--to', 'postgres')
  t.equal(again.code, 1)
  t.match(again.err, /cannot copy the store into PostgreSQL \(database copy_twice .*\): the database already holds \d+ record\(s\): copy only into a database just made for it \(createdb, then `epx store migrate`\); nothing was written/)
  t.same(rowsIn('copy_twice'), before)

  cluster.createDatabase('copy_bare')
  setStore(dir, onDatabase('copy_bare'))
  const bare = await epx(dir, 'store', 'copy', '--to', 'postgres')
  t.equal(bare.code, 1)
  t.match(bare.err, /holds no epx schema: run `epx store migrate`/)
  t.equal(cluster.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", 'copy_bare').trim(), '0')

  const wrong = await epx(dir, 'store', 'copy', '--to', 'lmdb')
  t.equal(wrong.code, 2)
  t.match(wrong.err, /needs --to postgres \(the only kind to copy into\), not --to lmdb/)
})

t.test('one transaction: a failure half-way (the database refusing the metering rows) leaves the database empty', async t => {
  const { dir } = await seededDataDir(t)
  cluster.createDatabase('copy_fails')
  setStore(dir, { kind: 'postgres', ...onDatabase('copy_fails') })
  t.equal((await epx(dir, 'store', 'migrate')).code, 0)
  cluster.psql(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF NEW.db = 'metering' THEN RAISE EXCEPTION 'disk full (simulated)'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER refuse BEFORE INSERT ON epx_record FOR EACH ROW EXECUTE FUNCTION refuse()`, 'copy_fails')
  const r = await epx(dir, 'store', 'copy', '--to', 'postgres')
  t.equal(r.code, 1)
  t.match(r.err, /cannot copy the store into PostgreSQL \(.*\): disk full \(simulated\); nothing was written/)
  t.equal(cluster.psql('SELECT count(*) FROM epx_record', 'copy_fails').trim(), '0', 'the sub-databases copied before it are gone with it')
  cluster.psql('DROP TRIGGER refuse ON epx_record', 'copy_fails')

  renameSync(join(dir, 'store', 'revision-bytes'), join(dir, 'store', 'moved-away'))
  const noBytes = await epx(dir, 'store', 'copy', '--to', 'postgres')
  t.equal(noBytes.code, 1)
  t.match(noBytes.err, /the revision bytes file .*revision-bytes\/\S+\.seg cannot be read \(ENOENT\): restore the store's revision-bytes folder from its backup; nothing was written/)
  t.equal(cluster.psql('SELECT count(*) FROM epx_record', 'copy_fails').trim(), '0', 'a revision without its bytes: nothing copied')
  renameSync(join(dir, 'store', 'moved-away'), join(dir, 'store', 'revision-bytes'))
  t.equal((await epx(dir, 'store', 'copy', '--to', 'postgres')).code, 0, 'and the copy can be run again')
})
