// Two `epx start` processes on one PostgreSQL database (needs PostgreSQL: scripts/postgres-cluster.ts
// fails, never skips, without it), under load while the database stops, comes back and
// restarts: the API answers 503 with Retry-After: 5 (never 500, never 401), the console a
// clear page, /readyz false; no acknowledged programme is lost; both recover by themselves.
import t from 'tap'
import { addDays, parisDateOf } from '../../src/contract/paris-day.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { call, replicaEqualsDatabase, startInstance, twoInstances, type Answer, type Instance } from '../helpers/instances.ts'
import { until } from '../helpers/eventually.ts'

const SITES = 100
const { cluster, url, dirA, dirB, ok, inbound, password, bsp, browser, consoleOf } = await twoInstances(t, { host: { sites: SITES }, plugin: { publish: { schedule: false } } })
const tomorrow = addDays(parisDateOf(new Date()), 1)
const outbound = await ok('token', 'create', '--company', 'acme', '--scope', 'outbound:besoins-agreges')
await ok('publish', '--date', tomorrow, '--site', siteId(1))

t.test('the database stopped, started and restarted under load: 503 + Retry-After 5 meanwhile, never 500 or 401, nothing acknowledged lost, both recover', async t => {
  const [a, b] = await Promise.all([startInstance(t, dirA), startInstance(t, dirB)])
  const cookie = await consoleOf.login(a.console, 'alice', password)

  // The load: through each instance, a BSP POSTs (one site per programme) and GETs.
  const acked = new Map<string, string>()
  const seen: Array<{ at: string; what: string; status: number; retryAfter?: string }> = []
  let k = 0
  let running = true
  const note = (at: Instance, what: string, r: Answer) => seen.push({ at: at === a ? 'A' : 'B', what, status: r.status, retryAfter: r.headers['retry-after'] })
  const load = async (at: Instance) => {
    while (running) {
      // Superseded ones included: each acknowledged programme is kept, effective or not.
      const site = siteId((k++ % SITES) + 1)
      try {
        const p = await call(bsp, new URL(INBOUND_PATH, at.api), {
          method: 'POST', headers: { authorization: `Bearer ${inbound}`, 'content-type': 'application/json' },
          body: JSON.stringify(programme({ targetDate: tomorrow, sites: [site], slots: 4, emittedAt: new Date(Date.now() - 1000).toISOString() })),
        })
        note(at, 'POST', p)
        if (p.status === 202) acked.set(JSON.parse(p.text).instructions[0].instruction_id, site)
        note(at, 'GET', await call(bsp, new URL(`${OUTBOUND_PATH}?site_id=${siteId(1)}&target_date=${tomorrow}`, at.api), { headers: { authorization: `Bearer ${outbound}` } }))
      } catch (err) {
        seen.push({ at: at === a ? 'A' : 'B', what: `error ${(err as Error).message}`, status: 0 })
      }
      await new Promise(resolve => setTimeout(resolve, 20))
    }
  }
  const loading = Promise.all([load(a), load(b), load(a), load(b)])
  const servedBoth = (from: number) => ['A', 'B'].every(x => seen.slice(from).some(s => s.at === x && s.what === 'POST' && s.status === 202))
  await until('both serve before the fault', () => servedBoth(0), { ms: 15_000, everyMs: 50 })

  // Down: every instance says so, and lives on.
  const downFrom = seen.length
  cluster.stop()
  let readyDown: Answer[] = []
  let consoleDown: Answer | undefined
  try {
    await until('503s while the database is down', () => seen.slice(downFrom).filter(s => s.status === 503).length >= 8, { everyMs: 50 })
    readyDown = await Promise.all([a, b].map(i => call(browser, new URL('/readyz', i.metrics))))
    consoleDown = await consoleOf.page(a.console, '/tokens', cookie)
  } finally {
    cluster.start()
  }
  for (const r of readyDown) {
    t.equal(r.status, 503, '/readyz is false while the database is down')
    t.match(JSON.parse(r.text), { status: 'not ready', checks: [{ name: 'store', ok: false }] })
  }
  t.equal(consoleDown!.status, 503, 'the console answers 503…')
  t.equal(consoleDown!.headers['retry-after'], '5')
  t.match(consoleDown!.text, 'Service momentanément indisponible', '…with its clear page')
  t.notMatch(consoleDown!.text, /\n\s+at |Error:/, 'no stack trace')

  // Back by themselves.
  const upFrom = seen.length
  await until('both serve again after the database came back', () => servedBoth(upFrom), { ms: 20_000, everyMs: 50 })
  for (const i of [a, b]) t.equal((await call(browser, new URL('/readyz', i.metrics))).status, 200, 'ready again')
  t.equal((await consoleOf.page(a.console, '/tokens', cookie)).status, 200, 'the console session survived')

  // A quick restart (pg_ctl stop -m fast, then start) under load.
  const restartFrom = seen.length
  cluster.restart()
  await until('both serve again after the restart', () => servedBoth(restartFrom), { ms: 20_000, everyMs: 50 })
  running = false
  await loading

  const statuses = [...new Set(seen.map(s => s.status))].sort()
  const acrossRestart = seen.slice(restartFrom)
  t.ok(acrossRestart.length > 0, `${acrossRestart.length} requests ran across the restart, ${acrossRestart.filter(s => s.status === 503).length} of them answered 503`)
  t.same(seen.filter(s => ![200, 202, 304, 503].includes(s.status)), [], `only 200, 202, 304 and 503 (saw ${statuses.join(', ')}): no 500, no 401, no dropped connection`)
  const refused = seen.filter(s => s.status === 503)
  t.ok(refused.length > 0, `${refused.length} requests got 503`)
  t.same(refused.filter(s => s.retryAfter !== '5'), [], 'each 503 with Retry-After: 5')
  for (const i of [a, b]) {
    // A death says why: the last of its output goes with the failure.
    const died = i.child.exitCode === null ? '' : `: it exited with ${i.child.exitCode}; its last output:\n${i.run.output().slice(-4000)}`
    t.equal(i.child.exitCode, null, `the host process lives on${died}`)
  }
  for (const i of [a, b]) {
    const episodes = i.logs().filter(l => l.level === 50 && /database is unreachable/.test(l.msg))
    t.ok(episodes.length >= 1 && episodes.length <= 3, `one error line per episode (${episodes.length} for 2 episodes)`)
    t.ok(i.logs().some(l => /database is reachable again/.test(l.msg)), 'and one when it recovers')
  }

  const check = openStore(t.testdir(), { postgres: { pool: { connectionString: url, max: 1 } } })
  await check.opened
  t.teardown(() => check.close())
  const instructions = openInstructions(check)
  t.same([...acked].filter(([id, site]) => !instructions.get(id, site)), [], `all ${acked.size} acknowledged programmes are in the database`)
  await replicaEqualsDatabase(t, a.dir, 'A')
  await replicaEqualsDatabase(t, b.dir, 'B')
})
