// The documented migration at the size of a real deployment (docs/operating.md "The store:
// LMDB or PostgreSQL"): an LMDB store of more than 150,000 records (EPX_LONG=1, `npm run
// campaign`; 15,200 in the system tier (`npm run test:system`), the same steps), two BSP companies with
// a token each, copied with `epx store copy --to postgres`, then `epx start` on a new
// store.path: the replica is loaded from the database, serves both BSPs with their tokens
// (200, never 401 "the Bearer token is unknown"), and equals the database.
import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { settingsPath } from '../../src/cli/settings.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { openMetering } from '../../src/store/metering.ts'
import { openStore } from '../../src/store/open-store.ts'
import { epx, initializedDataDir, startEpx } from '../helpers/cli.ts'
import { startPostgres } from '../../scripts/postgres-cluster.ts'
import { sized } from '../helpers/long.ts'

const cluster = startPostgres({ fsync: 'off' })
t.teardown(() => cluster.destroy())
// 25–40 s alone; more under the suite's parallel files on 2 cores.
t.setTimeout(360_000)

const SITES = sized(190, 1900)
const DAYS = 80
const site = (i: number) => `PRM4${String(i).padStart(13, '0')}`

function setStore (dir: string, store: Record<string, unknown>): void {
  const file = settingsPath(dir)
  const settings = JSON.parse(readFileSync(file, 'utf8')) as { plugin: { store?: Record<string, unknown> } }
  settings.plugin.store = { ...settings.plugin.store, ...store }
  writeFileSync(file, JSON.stringify(settings, null, 2))
}

const bundleAgent = (bundle: string) => new Agent({
  connect: { ca: readFileSync(join(bundle, 'ca.crt')), cert: readFileSync(join(bundle, 'client.crt')), key: readFileSync(join(bundle, 'client.key')), servername: 'localhost' },
})

t.test(`epx store copy of ${(SITES * DAYS).toLocaleString('en')} records, then epx start on a new store.path: every BSP is served with its token, and the replica equals the database`, async t => {
  const dir = await initializedDataDir(t)
  setStore(dir, { path: 'store' })
  const tokens: Record<string, string> = {}
  // One BSP per site.
  for (const [id, siteId] of [['acme', 'PRM30000000000001'], ['beta', 'PRM30000000000002']] as const) {
    const added = await epx(dir, 'company', 'add', id, '--name', id.toUpperCase(), '--sites', siteId)
    t.equal(added.code, 0, added.err)
    t.equal((await epx(dir, 'cert', 'issue', id, '--out', join(dir, id))).code, 0)
  }
  for (const id of ['acme', 'beta']) {
    const r = await epx(dir, 'token', 'create', '--company', id, '--scope', 'outbound:besoins-agreges')
    t.equal(r.code, 0, r.err)
    tokens[id] = r.lines.at(-1)!
  }

  // The bulk: a meter value a site and a day, one record each (store/metering.ts), within
  // retention so that a start keeps them all.
  const store = openStore(join(dir, 'store'))
  const dayMs = 86_400_000
  const first = Date.parse('2026-09-20T22:00:00Z')
  await openMetering(store, { now: () => first + (DAYS + 1) * dayMs, retentionDays: 365 }).report(
    Array.from({ length: SITES * DAYS }, (_, k) => {
      const start = first + Math.floor(k / SITES) * dayMs + 3_600_000
      return { siteId: site(k % SITES), startUtc: new Date(start).toISOString(), endUtc: new Date(start + 900_000).toISOString(), kwh: k % 97 }
    }))
  await store.close()

  cluster.createDatabase('migrated')
  setStore(dir, { kind: 'postgres', postgres: { connectionString: cluster.url('migrated') } })
  t.equal((await epx(dir, 'store', 'migrate')).code, 0)
  const copy = await epx(dir, 'store', 'copy', '--to', 'postgres', '--json')
  t.equal(copy.code, 0, copy.err)
  const copied = (JSON.parse(copy.out) as { tables: Array<{ db: string; postgres: { records: number } }> }).tables
  const total = copied.reduce((n, x) => n + x.postgres.records, 0)
  t.ok(total >= SITES * DAYS, `${total} records copied`)

  setStore(dir, { path: 'replica' })
  const run = await startEpx(['--data', dir, 'start', '--port', '0', '--cycle', '60'], /epx API listening on (https:\/\/127\.0\.0\.1:\d+\/)/)
  t.teardown(() => { run.child.kill('SIGKILL') })
  t.match(run.output(), /the local replica is loaded and verified: it equals the database/, 'the replica was verified after its load')
  const url = new URL(run.match[1]!)
  for (const [id, siteId] of [['acme', 'PRM30000000000001'], ['beta', 'PRM30000000000002']] as const) {
    const agent = bundleAgent(join(dir, id))
    const res = await request(new URL(`${OUTBOUND_PATH}?site_id=${siteId}&target_date=2026-11-23`, url), { dispatcher: agent, headers: { authorization: `Bearer ${tokens[id]}` } })
    const body = await res.body.text()
    await agent.close()
    t.notOk([401, 403, 500, 503].includes(res.statusCode), `${id} is served with its token (${res.statusCode} ${res.statusCode >= 400 ? body : ''})`)
  }
  const held = cluster.psql("SELECT count(*) FROM epx_record WHERE value IS NOT NULL AND db = 'metering'", 'migrated').trim()
  t.equal(held, String(SITES * DAYS), 'every meter value is in the database')
  run.child.kill('SIGTERM')
  t.equal(await run.exited, 0)
})
