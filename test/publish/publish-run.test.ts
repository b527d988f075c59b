import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Coverage, Logger, Site, SiteNeeds, SolverPort } from '../../src/host/contract.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openRevisions } from '../../src/store/revisions.ts'
import { createPublisher } from '../../src/publish/publish-run.ts'

const DAY = '2026-11-22'
const prm = (i: number) => `PRM${String(i).padStart(14, '0')}`

function capture (): Logger & { lines: Array<{ level: string; obj: any; msg?: string }> } {
  const lines: Array<{ level: string; obj: any; msg?: string }> = []
  const at = (level: string) => (obj: object, msg?: string) => { lines.push({ level, obj, msg }) }
  const log = { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log }
  return log
}

function fakeSolver (count: number, needs?: (siteId: string, c: Coverage) => Promise<SiteNeeds>): SolverPort & { calls: string[] } {
  const sites: Site[] = Array.from({ length: count }, (_, i) => ({ site_id: prm(i + 1), site_name: `Site ${i + 1}` }))
  const calls: string[] = []
  return {
    calls,
    async sites () { return sites },
    async needs (siteId, c) {
      calls.push(`${siteId}/${c.targetDate}`)
      if (needs) return needs(siteId, c)
      return { milestones: [], availablePowerKw: new Array(c.slots).fill(42) }
    },
    enqueueNextCycle () {},
    onCycleApplied () { return () => {} },
  }
}

function setup (t: Test, solver: SolverPort, chunkSize = 7) {
  const store = openStore(join(t.testdir(), 'store'))
  t.teardown(() => store.close())
  const revisions = openRevisions(store, { retentionDays: 90 })
  const log = capture()
  const publisher = createPublisher({
    solver, revisions, log, emittedBy: 'epx-test', chunkSize, retryDelayMs: 1,
    clock: { now: () => new Date('2026-11-21T07:00:00Z') },
  })
  t.teardown(() => publisher.close())
  return { store, revisions, publisher, log }
}

t.test('one failing site among many: the others are published, the failure is retried, logged and reported', async t => {
  let flakyFailures = 0
  const solver = fakeSolver(30, async (siteId, c) => {
    if (siteId === prm(13)) throw new Error('solver lost site 13')
    if (siteId === prm(21) && flakyFailures++ === 0) throw new Error('transient')
    return { milestones: [], availablePowerKw: new Array(c.slots).fill(1) }
  })
  const { revisions, publisher, log } = setup(t, solver)
  const report = await publisher.publish({ targetDate: DAY })
  t.equal(report.targetDate, DAY)
  t.equal(report.published.length, 29, 'every other site, the flaky one included after its retry')
  t.same(report.failed, [{ siteId: prm(13), reason: 'solver lost site 13' }])
  t.equal(solver.calls.filter(c => c.startsWith(prm(13))).length, 3, 'the failing site was tried three times')
  t.equal(solver.calls.filter(c => c.startsWith(prm(21))).length, 2)
  t.ok(revisions.latest(prm(21), DAY), 'the flaky site is published')
  t.equal(revisions.latest(prm(13), DAY), undefined)
  t.ok(log.lines.some(l => l.level === 'error' && l.obj.siteId === prm(13) && l.obj.reason === 'solver lost site 13'), 'the failure is logged with its site')
  t.ok(log.lines.some(l => l.level === 'warn' && /retrying/.test(l.msg ?? '')), 'the retry is logged')
})

t.test('a solver that throws synchronously or answers a wrong shape fails that site only', async t => {
  const solver = fakeSolver(4)
  const needs = solver.needs
  solver.needs = (siteId, c) => {
    if (siteId === prm(2)) throw new Error('sync boom')
    if (siteId === prm(3)) return Promise.resolve({ milestones: [], availablePowerKw: [1, 2, 3] })
    return needs(siteId, c)
  }
  const { publisher } = setup(t, solver)
  const report = await publisher.publish({ targetDate: DAY })
  t.same(report.published.map(p => p.siteId), [prm(1), prm(4)])
  t.same(report.failed.map(f => f.siteId), [prm(2), prm(3)])
  t.match(report.failed[1]!.reason, /3 available-power slots, the day has 96/)
})

t.test('a run publishes only the requested sites; unknown ones are reported, not fatal', async t => {
  const solver = fakeSolver(5)
  const { publisher, revisions } = setup(t, solver)
  const report = await publisher.publish({ targetDate: DAY, siteIds: [prm(2), prm(4), prm(2), prm(99)] })
  t.same(report.published.map(p => p.siteId).sort(), [prm(2), prm(4)])
  t.same(report.failed, [{ siteId: prm(99), reason: 'not a site the solver manages' }])
  t.equal(revisions.latest(prm(1), DAY), undefined)
  await t.rejects(publisher.publish({ targetDate: '2026-02-30' }), { code: 'EPX_USAGE' })
  await t.rejects(publisher.publish({ targetDate: DAY, siteIds: ['nope'] }), { code: 'EPX_USAGE' })
})

t.test('each published entry carries the revision emitted_at and ETag, and the document its bytes', async t => {
  const { publisher, revisions } = setup(t, fakeSolver(1))
  const report = await publisher.publish({ targetDate: DAY })
  const latest = revisions.latest(prm(1), DAY)!
  t.same(report.published, [{ siteId: prm(1), emittedAt: '2026-11-21T07:00:00Z', etag: latest.etag }])
  const doc = JSON.parse(revisions.bytesOf(latest)!.toString())
  t.equal(doc.emitted_by, 'epx-test')
  t.equal(doc.emitted_at, '2026-11-21T07:00:00Z')
  t.equal(doc.sites[0].puissance_disponible.length, 96)
})

t.test('runs never overlap: a second run waits for the first; an identical request joins it', async t => {
  let release!: () => void
  const gate = new Promise<void>(resolve => { release = resolve })
  const active = new Set<string>()
  let overlap = false
  const solver = fakeSolver(10, async (siteId, c) => {
    active.add(c.targetDate)
    if (active.size > 1) overlap = true
    if (c.targetDate === DAY) await gate
    await new Promise(resolve => setImmediate(resolve))
    active.delete(c.targetDate)
    return { milestones: [], availablePowerKw: new Array(c.slots).fill(1) }
  })
  const { publisher, revisions } = setup(t, solver, 3)
  const first = publisher.publish({ targetDate: DAY })
  const second = publisher.publish({ targetDate: '2026-11-23' })
  const joined = publisher.publish({ targetDate: DAY })
  const joinedSecond = publisher.publish({ targetDate: '2026-11-23' })
  await new Promise(resolve => setTimeout(resolve, 20))
  t.notOk(solver.calls.some(c => c.endsWith('2026-11-23')), 'the second run has not started while the first is blocked')
  release()
  const [a, b, c, d] = await Promise.all([first, second, joined, joinedSecond])
  t.notOk(overlap, 'never two runs at once')
  t.equal(a, c, 'the identical request got the running run')
  t.equal(b, d, 'the identical request got the queued run')
  t.equal(a.published.length, 10)
  t.equal(b.published.length, 10)
  t.equal(revisions.list(prm(1), DAY).length, 1, 'one revision, not two')
  t.equal(solver.calls.length, 20)
})

t.test('a revision committed by another writer between a site\'s turn and its commit: that document is rendered again with a later emitted_at, from the needs as the solver gave them then', async t => {
  const given: number[][] = []
  const solver = fakeSolver(3, async (siteId) => {
    const kw = new Array<number>(96).fill(Number(siteId.slice(3)))
    given.push(kw)
    return { milestones: [], availablePowerKw: kw }
  })
  const store = openStore(join(t.testdir(), 'store'))
  t.teardown(() => store.close())
  const revisions = openRevisions(store, { retentionDays: 90 })
  const raced = {
    ...revisions,
    async commit (staged: Parameters<typeof revisions.commit>[0], nowMs: number) {
      // The solver moves on and reuses its arrays; another writer (a second instance,
      // the CLI) publishes the first site in between.
      for (const kw of given) kw.fill(-1)
      await revisions.publish([{ siteId: prm(1), targetDate: DAY, render: at => JSON.stringify({ other: true, emitted_at: at }) }], nowMs)
      return revisions.commit(staged, nowMs)
    },
  }
  const publisher = createPublisher({
    solver, revisions: raced, log: capture(), emittedBy: 'epx-test', chunkSize: 3,
    clock: { now: () => new Date('2026-11-21T07:00:00Z') },
  })
  t.teardown(() => publisher.close())
  const report = await publisher.publish({ targetDate: DAY })
  t.same(report.failed, [])
  t.same(report.published.map(p => p.emittedAt), ['2026-11-21T07:00:01Z', '2026-11-21T07:00:00Z', '2026-11-21T07:00:00Z'],
    'the first site\'s revision comes after the other writer\'s')
  for (const i of [1, 2, 3]) {
    const latest = revisions.latest(prm(i), DAY)!
    const doc = JSON.parse(revisions.bytesOf(latest)!.toString())
    t.equal(doc.emitted_at, latest.emittedAt, `${prm(i)}: the document says its revision's emitted_at`)
    t.same(new Set(doc.sites[0].puissance_disponible.map((s: { p_max_kw: number }) => s.p_max_kw)), new Set([i]), `${prm(i)}: its own powers`)
  }
  t.equal(revisions.list(prm(1), DAY).length, 2, 'the other writer\'s revision is kept as the older one')
})

t.test('a store failure fails the chunk it hit; its sites are retried like any failed site', async t => {
  const { store, publisher, revisions } = setup(t, fakeSolver(6), 2)
  store.faults.failWriteAfter = 2   // the second chunk's transaction fails once
  const report = await publisher.publish({ targetDate: DAY })
  t.equal(report.published.length, 6)
  t.same(report.failed, [])
  t.equal(revisions.list(prm(3), DAY).length, 1)
})

t.test('a store that stays unavailable fails every site with a reason, and the run still ends', async t => {
  const { store, publisher } = setup(t, fakeSolver(3))
  store.faults.unavailable = true
  const report = await publisher.publish({ targetDate: DAY })
  t.equal(report.published.length, 0)
  t.same(report.failed.map(f => f.reason), new Array(3).fill('storage unavailable; retry in a few seconds'))
})
