// epx with store.kind "postgres", end to end: the API door in its worker thread takes a
// programme (202 once the database committed it) and serves a GET from the replica; while
// the database is down both doors answer 503 with Retry-After 5, and they recover by themselves.
import t from 'tap'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'undici'
import { startEpx } from '../../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../../helpers/programme.ts'
import { OUTBOUND_PATH } from '../../../src/http/route.ts'
import { migratedDatabase, storesOf } from '../../helpers/store-kinds.ts'

const cluster = storesOf(t, 'postgres').cluster()
const psql = (sql: string, database?: string): string => cluster.psql(sql, database).trim()

t.test('POST 202 and GET 200/304 through the door in its worker, on PostgreSQL; 503 while the database is down, then back', async t => {
  const database = await migratedDatabase(cluster)
  const epx = await startEpx(t, {
    config: { api: { inWorker: true }, metrics: { enabled: true, port: 0 }, store: { kind: 'postgres', postgres: { connectionString: cluster.url(database) } } },
  })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage', 'outbound:besoins-agreges'])
  await epx.handle.publish({ targetDate: '2026-11-22' })
  const get = (headers?: Record<string, string>) =>
    epx.request({ path: OUTBOUND_PATH, query: { site_id: siteId(1), target_date: '2026-11-22' }, cert, token: secret, headers })
  const post = (emittedAt: string) =>
    epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme({ sites: 2, emittedAt }) })

  const readyz = async () => {
    const r = await request(new URL('/readyz', epx.handle.metricsUrl!))
    return { status: r.statusCode, body: await r.body.json() as { checks: Array<{ name: string; reason?: string }> } }
  }
  t.equal((await readyz()).status, 200)
  const first = await get()
  t.equal(first.status, 200, first.text)
  t.equal((await get({ 'if-none-match': first.headers.etag as string })).status, 304)
  const accepted = await post('2026-11-21T12:00:00Z')
  t.equal(accepted.status, 202, accepted.text)
  t.equal(psql("SELECT count(*) FROM epx_record WHERE db = 'instruction-effective' AND value IS NOT NULL", database), '2',
    'both sites\' instructions are in the database once the 202 is sent')

  cluster.stop()
  let up = false
  t.teardown(() => { if (!up) cluster.start() })
  let answered = await post('2026-11-21T12:01:00Z')
  for (let i = 0; answered.status === 202 && i < 50; i++) {   // until the store has seen the database go
    await new Promise(resolve => setTimeout(resolve, 50))
    answered = await post('2026-11-21T12:01:00Z')
  }
  t.equal(answered.status, 503, 'POST while the database is down')
  t.equal(answered.headers['retry-after'], '5')
  const down = await get()
  t.equal(down.status, 503, 'GET while the database is down: never a stale 200')
  t.equal(down.headers['retry-after'], '5')
  const notReady = await readyz()
  t.equal(notReady.status, 503, '/readyz says not ready')
  t.match(notReady.body.checks.find(c => c.name === 'store'), { reason: /database is unreachable/ })
  cluster.start()
  up = true
  let again = await post('2026-11-21T12:02:00Z')
  for (let i = 0; again.status !== 202 && i < 200; i++) {
    await new Promise(resolve => setTimeout(resolve, 50))
    again = await post('2026-11-21T12:02:00Z')
  }
  t.equal(again.status, 202, 'the door takes programmes again once the database is back')
  t.equal((await get()).status, 200)
  t.equal((await readyz()).status, 200)
  const errors = epx.logs().filter(l => l.level === 50 && /database is unreachable/.test(l.msg))
  t.equal(errors.length, 1, 'one error line for the episode')
})

t.test('activation on a database without the schema fails with the code that says to run epx store migrate, and writes nothing', async t => {
  cluster.createDatabase('not_migrated')
  const dataDir = t.testdir()
  await t.rejects(startEpx(t, { dataDir, config: { store: { kind: 'postgres', postgres: { connectionString: cluster.url('not_migrated') } } } }),
    { code: 'EPX_STORE_SCHEMA_MISSING', message: /run `epx store migrate`/ })
  t.equal(psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", 'not_migrated'), '0')
  t.notOk(existsSync(join(dataDir, 'epx.lmdb')), 'nor a replica folder')
})
