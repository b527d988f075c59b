// Two solver hosts (two `epx start` processes) on one PostgreSQL database (needs
// PostgreSQL: scripts/postgres-cluster.ts fails, never skips, without it). A BSP keeps POSTing
// through A; A dies by SIGKILL mid-stream; B carries on with everything A acknowledged,
// A's publication schedule, A's tokens and A's console sessions; A restarted feeds its solver again.
import t from 'tap'
import { addDays, parisDateOf } from '../../src/contract/paris-day.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { call, replicaEqualsDatabase, startInstance, twoInstances, type Instance } from '../helpers/instances.ts'
import { until } from '../helpers/eventually.ts'

const SITES = 120
// Both publish D+1 every 5 s when they lead (node-cron's seconds field): a takeover shows within the test.
const { url, dirA, dirB, inbound, password, bsp, consoleOf } = await twoInstances(t, { host: { sites: SITES }, plugin: { publish: { dailyCron: '*/5 * * * * *' } } })

/** A programme for site `k` alone (no two of the stream supersede each other), emitted now. */
const body = (k: number, tomorrow: string) => JSON.stringify(programme({
  targetDate: tomorrow, sites: [siteId(k)], slots: 8, emittedAt: new Date(Date.now() - 1000).toISOString(), kwh: () => 1 + (k % 5),
}))

const post = (at: Instance, k: number, tomorrow: string) => call(bsp, new URL(INBOUND_PATH, at.api), {
  method: 'POST', headers: { authorization: `Bearer ${inbound}`, 'content-type': 'application/json' }, body: body(k, tomorrow),
})

t.test('A killed mid-stream: every 202 is in the database and reaches B\'s solver; B publishes; A\'s token and console session work on B', async t => {
  const a = await startInstance(t, dirA)
  await a.logged(l => /this instance leads/.test(l.msg), 10_000, 'A leads')
  const b = await startInstance(t, dirB)
  // A scheduled time comes on both: A publishes, B leaves it to A.
  await b.logged(l => /left to the leading instance/.test(l.msg), 8000, 'B\'s scheduled run skipped')
  const tomorrow = addDays(parisDateOf(new Date()), 1)

  // Through A's console: a session, and a token made with it.
  const cookie = await consoleOf.login(a.console, 'alice', password)
  const made = await consoleOf.submit(a.console, '/tokens', '/tokens', cookie, [['scope', 'outbound:besoins-agreges'], ['expires', '90d']])
  t.equal(made.status, 303, 'token created through A\'s console')
  const shown = await consoleOf.page(a.console, made.headers.location!, cookie)
  const outbound = /id="token-secret"[^>]*value="([^"]+)"/.exec(shown.text)?.[1]
  t.ok(outbound, 'its secret shown once, on A')

  // The stream: two BSP connections POSTing through A, one site each programme.
  const acked = new Map<string, string>()   // instruction id → site
  const answers: number[] = []
  let next = 1
  let aliveA = true
  let killedAt = 0
  let ackedByB = 0
  const stream = async () => {
    while (next <= SITES && ackedByB < 10) {
      const k = next++
      const at = aliveA ? a : b
      try {
        const r = await post(at, k, tomorrow)
        answers.push(r.status)
        if (r.status === 202) acked.set(JSON.parse(r.text).instructions[0].instruction_id, siteId(k))
        if (r.status === 202 && at === b) ackedByB++
      } catch {
        // A's connection cut by its death: the BSP goes on through B (this programme was never acknowledged).
        aliveA = false
      }
    }
  }
  const streaming = Promise.all([stream(), stream()])
  await until('25 programmes acknowledged through A', () => acked.size >= 25, { ms: 20_000, everyMs: 50 })
  a.child.kill('SIGKILL')
  killedAt = Date.now()
  aliveA = false
  await a.run.exited
  await streaming
  t.ok(acked.size >= 25 && ackedByB >= 10, `${acked.size} programmes acknowledged, ${ackedByB} of them through B after A's death`)
  t.same([...new Set(answers)].filter(s => s !== 202), [], 'every answer through A before its death and through B after was a 202')

  // Every acknowledged programme is in the database (read through a replica of its own).
  const check = openStore(t.testdir(), { postgres: { pool: { connectionString: url, max: 1 } } })
  await check.opened
  t.teardown(() => check.close())
  const instructions = openInstructions(check)
  const missing = [...acked].filter(([id, site]) => !instructions.get(id, site))
  t.same(missing, [], 'every 202 is in the database, whole')

  // …and reaches B's solver: the reference host names each programme its cycle applied.
  const fedToB = () => new Set(b.logs().filter(l => l.msg === 'solver cycle applied inputs').flatMap(l => l.instructions as string[]))
  await until('B\'s solver fed every acknowledged programme', () => [...acked.keys()].every(id => fedToB().has(id)), { everyMs: 50 })
  t.pass(`B's solver applied all ${acked.size}`)
  t.notOk(b.logs().some(l => l.moreInstructions), 'no cycle line was cut short')

  // B's schedule takes over: A published every 5 s, B left it to A; now B leads and publishes.
  t.ok(a.logs().some(l => l.msg === 'scheduled Besoins_Agreges publication'), 'A published while it led')
  const before = b.logs().filter(l => l.msg === 'scheduled Besoins_Agreges publication' && l.time < killedAt)
  t.same(before, [], 'B did not publish while A led')
  const lead = await b.logged(l => /this instance leads/.test(l.msg), 12_000, 'B leads')
  t.ok(lead.time - killedAt < 10_000, `B leads ${lead.time - killedAt} ms after A's death`)
  await b.logged(l => l.msg === 'scheduled Besoins_Agreges publication' && l.time > lead.time, 10_000, 'B publishes on schedule')
  const published = await b.logged(l => l.msg === 'Besoins_Agreges publication run' && l.time > lead.time, 15_000, 'B\'s run ends')
  t.equal(published.published, SITES, 'B\'s run published every site')

  // A's token works on B, and it reads what B published.
  const got = await call(bsp, new URL(`${OUTBOUND_PATH}?site_id=${siteId(1)}&target_date=${tomorrow}`, b.api), { headers: { authorization: `Bearer ${outbound}` } })
  t.equal(got.status, 200, 'the token created through A\'s console reads through B')
  t.ok(Date.parse(JSON.parse(got.text).emitted_at) > killedAt, 'a revision B published after the takeover')
  // A's console session works on B.
  const page = await consoleOf.page(b.console, '/tokens', cookie)
  t.equal(page.status, 200, 'the console session opened on A opens B\'s pages')
  t.match(page.text, 'alice · entreprise acme')

  // A back: it feeds its new solver, from the database, every programme of a day not over; B keeps leading.
  const again = await startInstance(t, dirA)
  const fedToA = () => new Set(again.logs().filter(l => l.msg === 'solver cycle applied inputs').flatMap(l => l.instructions as string[]))
  await until('the restarted A\'s solver fed every acknowledged programme', () => [...acked.keys()].every(id => fedToA().has(id)), { everyMs: 50 })
  t.pass(`the restarted A's solver applied all ${acked.size}`)
  t.notOk(again.logs().some(l => /this instance leads/.test(l.msg)), 'B still leads')
  t.ok(b.logs().filter(l => /this instance leads/.test(l.msg)).length === 1 && !b.logs().some(l => /no longer leads/.test(l.msg)), 'B never lost it')
  await replicaEqualsDatabase(t, dirB, 'B')
  await replicaEqualsDatabase(t, dirA, 'the restarted A')
})
