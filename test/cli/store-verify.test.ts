// `epx store verify`: an instance's replica compared with the database of a real cluster,
// per sub-database. Equal after `epx store copy` and a start on a new store.path, while
// that `epx start` runs; a replica tampered with (a record removed with lmdb-js while no
// instance runs) reported as differing, exit 1; a replica behind the database, one still
// loading, none yet, and an LMDB store each said as such.
import t, { type Test } from 'tap'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { open } from 'lmdb'
import { settingsPath } from '../../src/cli/settings.ts'
import { SUB_DATABASES } from '../../src/store/postgres/schema.ts'
import { epx, initializedDataDir, spawnEpx, startEpx } from '../helpers/cli.ts'
import { startPostgres } from '../../scripts/postgres-cluster.ts'

const cluster = startPostgres({ fsync: 'off' })
t.teardown(() => cluster.destroy())

function setStore (dir: string, store: Record<string, unknown>): void {
  const file = settingsPath(dir)
  const settings = JSON.parse(readFileSync(file, 'utf8')) as { plugin: { store?: Record<string, unknown> } }
  settings.plugin.store = { ...settings.plugin.store, ...store }
  writeFileSync(file, JSON.stringify(settings, null, 2))
}

/**
 * An LMDB store (store.path "store") with two companies and a token, copied into
 * `database`; store.path then names the new folder "replica". `closedStdout`: the copy
 * runs as `epx store copy … | head` does once head is gone.
 */
async function copiedDataDir (t: Test, database: string, opts: { closedStdout?: boolean } = {}): Promise<string> {
  const dir = await initializedDataDir(t)
  setStore(dir, { path: 'store' })
  for (const [id, site] of [['acme', 'PRM30000000000001'], ['beta', 'PRM30000000000002']] as const) {
    t.equal((await epx(dir, 'company', 'add', id, '--name', id.toUpperCase(), '--sites', site)).code, 0)
  }
  t.equal((await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'outbound:besoins-agreges')).code, 0)
  cluster.createDatabase(database)
  setStore(dir, { kind: 'postgres', postgres: { connectionString: cluster.url(database) } })
  t.equal((await epx(dir, 'store', 'migrate')).code, 0)
  if (opts.closedStdout) {
    const copy = await spawnEpx(['--data', dir, 'store', 'copy', '--to', 'postgres'], { closedStdout: true })
    t.same([copy.code, copy.stderr], [0, ''], 'a closed stdout after the commit: exit 0, quietly')
  } else {
    const copy = await epx(dir, 'store', 'copy', '--to', 'postgres')
    t.equal(copy.code, 0, copy.err)
  }
  setStore(dir, { path: 'replica' })
  return dir
}

interface VerifyJson {
  kind: string
  equal?: boolean
  differ?: string[]
  tables?: Array<{ db: string; replica: { records: number; sha256: string }; postgres: { records: number; sha256: string } }>
}

t.test('after a copy and a start on a new store.path, the replica equals the database, said while epx start runs', async t => {
  const dir = await copiedDataDir(t, 'verify_equal')
  const run = await startEpx(['--data', dir, 'start', '--port', '0', '--cycle', '60'], /epx API listening on/)
  t.teardown(() => { run.child.kill('SIGKILL') })

  const r = await epx(dir, 'store', 'verify')
  t.equal(r.code, 0, r.err)
  t.match(r.lines[0], /^the replica .*replica compared with database verify_equal on .* at change \d+:$/)
  t.match(r.lines[1], /^SUB-DATABASE +REPLICA +POSTGRESQL +SHA-256 \(REPLICA\) +SHA-256 \(POSTGRESQL\)$/)
  t.match(r.out, /^companies +2 +2 +[0-9a-f]{64} +same$/m)
  t.match(r.out, /^sessions +0 +0 +e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 +same$/m, 'an empty sub-database on both sides')
  t.equal(r.lines.at(-1), 'equal: the replica holds exactly what the database holds')
  t.equal(r.err, '')

  // A write through the running instance's database: the replica follows, and still verifies.
  t.equal((await epx(dir, 'company', 'add', 'gamma', '--name', 'GAMMA', '--sites', 'PRM30000000000003')).code, 0)
  const json = await epx(dir, 'store', 'verify', '--json')
  t.equal(json.code, 0, json.err)
  const v = JSON.parse(json.out) as VerifyJson
  t.equal(v.kind, 'compared')
  t.equal(v.equal, true)
  t.same(v.differ, [])
  t.same(v.tables!.find(x => x.db === 'companies')?.replica.records, 3, 'the company added meanwhile is in the replica')
  t.ok(Object.keys(SUB_DATABASES).every(db => v.tables!.some(x => x.db === db)), 'every sub-database this epx knows is compared')
  for (const x of v.tables!) t.same(x.replica, x.postgres, x.db)

  run.child.kill('SIGTERM')
  t.equal(await run.exited, 0)
})

t.test('a replica missing a record is reported as differing, exit 1, naming the sub-database', async t => {
  const dir = await copiedDataDir(t, 'verify_tampered')
  t.equal((await epx(dir, 'company', 'list')).code, 0, 'the replica is loaded (and verified) by a command on the store')
  t.equal((await epx(dir, 'store', 'verify')).code, 0, 'equal before the tampering')

  const env = open({ path: join(dir, 'replica'), noSubdir: false, maxDbs: 64, compression: false })
  const companies = env.openDB({ name: 'companies', encoding: 'msgpack', sharedStructuresKey: Symbol.for('structures') })
  t.ok(await companies.remove('beta'), 'a record removed behind epx\'s back')
  await env.close()

  const r = await epx(dir, 'store', 'verify')
  t.equal(r.code, 1)
  t.match(r.out, /^companies +1 +2 +[0-9a-f]{64} +[0-9a-f]{64}$/m, 'both counts and both checksums, which differ')
  t.match(r.out, /^tokens +1 +1 +[0-9a-f]{64} +same$/m, 'the others are the same')
  t.notMatch(r.out, /^equal:/m)
  t.match(r.err, /^epx: the replica .*replica is not confirmed equal to PostgreSQL \(database verify_tampered .*\): sub-database\(s\) companies differ \(companies: 1 record\(s\) in the replica, 2 in the database\): stop this instance, move its store\.path folder aside and start it again/)
  t.equal(r.err.split('\n').length, 1, 'one line')

  const json = await epx(dir, 'store', 'verify', '--json')
  t.equal(json.code, 1)
  t.match(JSON.parse(json.out), { kind: 'compared', equal: false, differ: ['companies'] })
})

t.test('not compared: a replica behind the database, one still loading, none yet; and an LMDB store has nothing to verify', async t => {
  const dir = await copiedDataDir(t, 'verify_apart')
  t.equal((await epx(dir, 'company', 'list')).code, 0)

  // A change no instance applied (none runs): the replica never reaches the snapshot.
  cluster.psql(`INSERT INTO epx_record (db, key, value, seq) SELECT db, key, value, nextval('epx_change_seq') FROM epx_record WHERE db = 'companies' LIMIT 1
    ON CONFLICT (db, key) DO UPDATE SET value = excluded.value, seq = excluded.seq`, 'verify_apart')
  const behind = await epx(dir, 'store', 'verify')
  t.equal(behind.code, 1)
  t.match(behind.err, /the replica is at change (\d+) and the database at (\d+), still apart after several tries: the instance is writing or catching up; try again/)
  t.equal(behind.out, '', 'no table: nothing was compared')

  const env = open({ path: join(dir, 'replica'), noSubdir: false, maxDbs: 64, compression: false })
  await env.openDB({ name: 'epx-replica', encoding: 'msgpack' }).put('loading', true)
  await env.close()
  const loading = await epx(dir, 'store', 'verify')
  t.equal(loading.code, 1)
  t.match(loading.err, /the replica is still loading from the database \(its load is not verified yet, and it is not served\)/)

  setStore(dir, { path: 'elsewhere' })
  const none = await epx(dir, 'store', 'verify')
  t.equal(none.code, 1)
  t.match(none.err, /the replica .*elsewhere is not confirmed equal to PostgreSQL \(.*\): there is no replica there yet \(no data\.mdb\): start epx once with this store\.path/)

  setStore(dir, { path: 'store' })
  const lmdbStore = await epx(dir, 'store', 'verify')
  t.equal(lmdbStore.code, 1)
  t.match(lmdbStore.err, /the folder holds an LMDB store \(store\.kind "lmdb"\), not a replica/)

  setStore(dir, { kind: 'lmdb' })
  const lmdb = await epx(dir, 'store', 'verify')
  t.equal(lmdb.code, 2)
  t.match(lmdb.err, /store\.kind is "lmdb": .*nothing to verify/)
})

t.test('| head: a reader gone away neither kills the copy once committed nor turns a verdict into a crash', async t => {
  const dir = await copiedDataDir(t, 'verify_piped', { closedStdout: true })
  t.equal(cluster.psql("SELECT count(*) FROM epx_record WHERE db = 'companies'", 'verify_piped').trim(), '2', 'the copy committed')
  t.equal((await epx(dir, 'company', 'list')).code, 0)
  const equal = await spawnEpx(['--data', dir, 'store', 'verify'], { closedStdout: true })
  t.same([equal.code, equal.stderr], [0, ''])

  const env = open({ path: join(dir, 'replica'), noSubdir: false, maxDbs: 64, compression: false })
  await env.openDB({ name: 'tokens', encoding: 'msgpack', sharedStructuresKey: Symbol.for('structures') }).clearAsync()
  await env.close()
  const differs = await spawnEpx(['--data', dir, 'store', 'verify'], { closedStdout: true })
  t.equal(differs.code, 1)
  t.match(differs.stderr, /^epx: the replica .* sub-database\(s\) tokens differ \(tokens: 0 record\(s\) in the replica, 1 in the database\)/)
  t.equal(differs.stderr.trimEnd().split('\n').length, 1, 'the reason, one line, and no stack')
})

t.test('a command refused by the database (no schema) leaves no replica folder behind', async t => {
  const dir = await initializedDataDir(t)
  cluster.createDatabase('verify_bare')
  setStore(dir, { kind: 'postgres', path: 'stores/replica', postgres: { connectionString: cluster.url('verify_bare') } })
  const r = await epx(dir, 'company', 'list')
  t.equal(r.code, 1)
  t.match(r.err, /holds no epx schema: run `epx store migrate`/)
  t.notOk(existsSync(join(dir, 'stores')), 'neither the replica folder nor the folder made to hold it')
  const verify = await epx(dir, 'store', 'verify')
  t.match(verify.err, /there is no replica there yet/, 'and verify still says there is none')
})
