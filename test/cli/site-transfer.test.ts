// DECISIONS.md "Tenure: who holds a site, and when", end to end on real `epx start`
// processes: demo-bsp programmed sites 4 and 5 for a day next week, with an emitted_at
// 290 s ahead (a skew the service accepts); the operator narrows demo-bsp to sites 1–3
// and gives 4–5 to new-bsp. demo-bsp's instructions are withdrawn, the running solver is
// told, and new-bsp's programme, emitted earlier than demo-bsp's, is queued then applied.
import t, { type Test } from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Agent } from 'undici'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { epx, initializedDataDir } from '../helpers/cli.ts'
import { agentFor, call, consoleClient, instanceDir, sharedDatabase, startInstance, type Instance } from '../helpers/instances.ts'
import { parisDateOf } from '../../src/contract/paris-day.ts'
import { settingsPath } from '../../src/cli/settings.ts'
import { SYSTEM_ONLY } from '../helpers/long.ts'

const KEPT = [siteId(1), siteId(2), siteId(3)]
const MOVED = [siteId(4), siteId(5)]
/** An instant as a BSP writes it, whole seconds. */
const wire = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z')
const idOf = (targetDate: string, emittedAt: string) => `ProgrammeSoutirage-${targetDate}-rev-${emittedAt.replace(/[-:]/g, '')}`

/** `epx <argv>` in `dir`; its last line (a secret is printed last). */
async function ok (dir: string, ...argv: string[]): Promise<string> {
  const r = await epx(dir, ...argv)
  if (r.code !== 0) throw new Error(`epx ${argv.join(' ')}: ${r.err}`)
  return r.lines.at(-1)!
}

/** A company with `sites`, its certificate bundle and an inbound token, set up through `dir`'s CLI. */
async function bsp (t: Test, dir: string, id: string, sites: readonly string[]): Promise<{ agent: Agent; token: string }> {
  await ok(dir, 'company', 'add', id, '--name', id, '--sites', sites.join(','))
  const bundle = join(dir, `${id}-bundle`)
  await ok(dir, 'cert', 'issue', id, '--out', bundle)
  const token = await ok(dir, 'token', 'create', '--company', id, '--scope', 'inbound:programme-soutirage')
  const agent = agentFor(bundle)
  t.teardown(() => agent.close())
  return { agent, token }
}

function post (i: Instance, who: { agent: Agent; token: string }, body: unknown) {
  return call(who.agent, new URL(INBOUND_PATH, i.api), {
    method: 'POST', headers: { authorization: `Bearer ${who.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  })
}

async function status (i: Instance, who: { agent: Agent; token: string }, targetDate: string): Promise<{ text: string; body: any }> {
  const r = await call(who.agent, new URL(`${INBOUND_PATH}?target_date=${targetDate}`, i.api), { headers: { authorization: `Bearer ${who.token}` } })
  if (r.status !== 200) {
    // A 5xx is a fault of the daemon's: its log line, within a flush of the answer (src/door/worker.ts), holds the error and its stack.
    const failed = r.status >= 500 ? await i.logged(l => l.msg === 'api request failed', 2000, 'the failed request').catch(() => undefined) : undefined
    throw new Error(`status read answered ${r.status}: ${r.text}${failed ? `; the daemon logged ${JSON.stringify(failed)}` : ''}`)
  }
  return { text: r.text, body: JSON.parse(r.text) }
}

/** The solver cycles of `i` that applied an input of `instructionId`, as its log lines say. */
const cyclesOf = (i: Instance, instructionId: string) =>
  i.logs().filter(l => l.msg === 'solver cycle applied inputs' && (l.instructions as string[]).includes(instructionId))

async function eventually<T> (what: string, ms: number, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const start = Date.now()
  for (;;) {
    const got = await probe()
    if (got !== undefined) return got
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

/**
 * The scenario, on `posting` (where the BSPs call) and `solving` (whose solver is
 * watched); `transfer` narrows demo-bsp to sites 1–3 and gives 4–5 to new-bsp, as the
 * operator does it (through the CLI or another instance), and returns new-bsp.
 */
async function scenario (t: Test, posting: Instance, solving: Instance, demo: { agent: Agent; token: string }, transfer: () => Promise<{ agent: Agent; token: string }>) {
  const now = Date.now()
  const targetDate = parisDateOf(new Date(now + 5 * 86_400_000))
  const demoAt = wire(now + 290_000)
  const demoId = idOf(targetDate, demoAt)
  const first = await post(posting, demo, programme({ targetDate, emittedAt: demoAt, emittedBy: 'demo-bsp', sites: MOVED, kwh: () => 2.5 }))
  t.equal(first.status, 202, first.text)
  t.same(JSON.parse(first.text).instructions.map((i: any) => i.status), ['queued', 'queued'])
  await eventually('demo-bsp\'s programme applied by the solver', 15_000, () => cyclesOf(solving, demoId).length > 0 || undefined)
  const handed = cyclesOf(solving, demoId).length

  const newBsp = await transfer()
  // The running solver is told at its next cycle: an input under demo-bsp's id, with no periods.
  await eventually('the solver told that demo-bsp\'s instructions are no longer in force', 15_000, () => cyclesOf(solving, demoId).length > handed || undefined)

  const newAt = wire(Date.now())
  const newId = idOf(targetDate, newAt)
  t.ok(newAt < demoAt, 'new-bsp\'s emitted_at is earlier than demo-bsp\'s')
  const second = await post(posting, newBsp, programme({ targetDate, emittedAt: newAt, emittedBy: 'new-bsp', sites: MOVED, kwh: () => 4 }))
  t.equal(second.status, 202, second.text)
  const receipt = JSON.parse(second.text)
  t.same(receipt.instructions.map((i: any) => [i.site_id, i.status]), MOVED.map(s => [s, 'queued']), 'the new holder\'s programme is queued, not superseded')
  t.notMatch(receipt.message, /superseded/)

  const cycle = await eventually('new-bsp\'s programme applied by the solver\'s next cycle', 15_000, () => cyclesOf(solving, newId)[0])
  t.match(cycle, { applied: 2 }, 'the cycle carries the new holder\'s inputs for both sites')
  const mine = await eventually('new-bsp\'s status read says applied', 15_000, async () => {
    const s = await status(posting, newBsp, targetDate)
    return s.body.instructions.every((i: any) => i.status === 'applied') && s.body.count === 2 ? s.body : undefined
  })
  t.same(mine.instructions.map((i: any) => [i.instruction_id, i.site_id, i.status]).sort(), MOVED.map(s => [newId, s, 'applied']))

  const former = await status(posting, demo, targetDate)
  t.same(former.body.instructions.map((i: any) => [i.instruction_id, i.site_id, i.status, i.not_in_force_reason]).sort(),
    MOVED.map(s => [demoId, s, 'withdrawn', 'site-left-perimeter']), 'demo-bsp reads its instructions withdrawn')
  t.ok(former.body.instructions.every((i: any) => typeof i.withdrawn_at === 'string'))
  t.notMatch(former.text, /new-bsp/, 'it is never told who holds the sites now')
  t.notOk(former.text.includes(newId), 'nor the ids of its instructions')
  return { demoId, newId, targetDate }
}

// The system tier: the PostgreSQL case below is the harder path (another instance's solver); this one is the same rule on one instance.
t.test('LMDB: one instance, the CLI changes the perimeter from another process', SYSTEM_ONLY, async t => {
  const dir = await initializedDataDir(t)
  // As instanceDir sets an instance up, on its LMDB store: startInstance waits for the console and the metrics.
  const s = JSON.parse(readFileSync(settingsPath(dir), 'utf8'))
  s.plugin.console = { enabled: true, host: '127.0.0.1', port: 0 }
  s.plugin.metrics = { enabled: true, host: '127.0.0.1', port: 0 }
  writeFileSync(settingsPath(dir), JSON.stringify(s, null, 2))
  const demo = await bsp(t, dir, 'demo-bsp', [...KEPT, ...MOVED])
  const run = await startInstance(t, dir, 1)
  await scenario(t, run, run, demo, async () => {
    await ok(dir, 'company', 'perimeter', 'demo-bsp', '--sites', KEPT.join(','))
    return bsp(t, dir, 'new-bsp', MOVED)
  })
  const history = JSON.parse((await epx(dir, 'company', 'history', 'demo-bsp', '--json')).out)
  t.same(history.map((h: any) => [h.kind, h.perimeter]), [['added', [...KEPT, ...MOVED]], ['perimeter', KEPT]])
  t.match(history[1].actor, { kind: 'cli' })
  const audit = JSON.parse((await epx(dir, 'audit', 'list', '--action', 'instruction.withdrawn', '--json')).out)
  t.match(audit, [{ subject: 'demo-bsp', details: { reason: 'site-left-perimeter', count: 2, sites: MOVED } }])
})

t.test('PostgreSQL: two instances, the perimeter changed on B\'s console, A\'s solver follows', async t => {
  const { cluster, database } = await sharedDatabase(t, { fsync: 'off' })
  const url = cluster.url(database)
  const dirA = await instanceDir(t, url)
  const dirB = await instanceDir(t, url)
  const demo = await bsp(t, dirA, 'demo-bsp', [...KEPT, ...MOVED])
  const password = await ok(dirA, 'user', 'add', 'root', '--admin')
  const a = await startInstance(t, dirA, 1)
  const b = await startInstance(t, dirB, 1)
  const browser = agentFor()
  t.teardown(() => browser.close())
  const web = consoleClient(browser)
  const cookie = await web.login(b.console, 'root', password)
  await scenario(t, a, a, demo, async () => {
    const narrowed = await web.submit(b.console, '/admin/companies/demo-bsp', '/admin/companies/demo-bsp/perimeter', cookie, [['sites', KEPT.join(', ')]])
    t.equal(narrowed.status, 303, 'B\'s console narrows demo-bsp')
    t.match((await web.page(b.console, narrowed.headers.location!, cookie)).text, /Périmètre enregistré/)
    return bsp(t, dirB, 'new-bsp', MOVED)
  })
  const page = await web.page(b.console, '/admin/companies/demo-bsp', cookie)
  t.match(page.text, /Historique du périmètre/)
  t.match(page.text, /périmètre modifié/)
  t.match(page.text, /console \(root\)/, 'the history names who changed it')
})
