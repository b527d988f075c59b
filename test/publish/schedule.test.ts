import { join } from 'node:path'
import t, { type Test } from 'tap'
import cron from 'node-cron'
import type { Logger, Site, SolverPort } from '../../src/host/contract.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openRevisions } from '../../src/store/revisions.ts'
import { createPublisher } from '../../src/publish/publish-run.ts'
import { catchUp, firedEarlierToday, startSchedule, targetDatesFor } from '../../src/publish/schedule.ts'
import type { Leadership } from '../../src/store/leadership.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

const PARIS = 'Europe/Paris'
const at = (iso: string) => new Date(iso)

t.test('across a week, the daily run publishes D+1 and the weekend run the coming weekend', async t => {
  // Monday 2026-11-16 … Sunday 2026-11-22, each at 08:00 Paris (07:00Z in winter).
  const week = [
    ['2026-11-16', ['2026-11-17'], ['2026-11-21', '2026-11-22']],
    ['2026-11-17', ['2026-11-18'], ['2026-11-21', '2026-11-22']],
    ['2026-11-18', ['2026-11-19'], ['2026-11-21', '2026-11-22']],
    ['2026-11-19', ['2026-11-20'], ['2026-11-21', '2026-11-22']],
    ['2026-11-20', ['2026-11-21'], ['2026-11-21', '2026-11-22']],   // Friday: D+1 and D+2
    ['2026-11-21', ['2026-11-22'], ['2026-11-22']],
    ['2026-11-22', ['2026-11-23'], ['2026-11-28', '2026-11-29']],
  ] as const
  for (const [day, daily, weekend] of week) {
    t.same(targetDatesFor('daily', at(`${day}T07:00:00Z`)), daily, `daily on ${day}`)
    t.same(targetDatesFor('weekend', at(`${day}T07:00:00Z`)), weekend, `weekend run on ${day}`)
  }
})

t.test('across the autumn DST change (Sunday 2026-10-25), target dates follow Paris days', async t => {
  t.same(targetDatesFor('weekend', at('2026-10-23T06:00:00Z')), ['2026-10-24', '2026-10-25'], 'Friday 08:00 CEST: Saturday and the 25-hour Sunday')
  t.same(targetDatesFor('daily', at('2026-10-23T06:00:00Z')), ['2026-10-24'])
  t.same(targetDatesFor('daily', at('2026-10-24T06:00:00Z')), ['2026-10-25'], 'Saturday 08:00 CEST')
  t.same(targetDatesFor('daily', at('2026-10-25T07:00:00Z')), ['2026-10-26'], 'Sunday 08:00 CET')
  t.same(targetDatesFor('daily', at('2026-10-24T21:59:59Z')), ['2026-10-25'], '23:59:59 CEST on Saturday is still Saturday')
  t.same(targetDatesFor('daily', at('2026-10-24T22:00:00Z')), ['2026-10-26'], '00:00 on Sunday is Sunday')
  t.same(targetDatesFor('daily', at('2026-10-25T22:59:59Z')), ['2026-10-26'], '23:59:59 CET on Sunday is still Sunday')
})

t.test('across the spring DST change (Sunday 2027-03-28), target dates follow Paris days', async t => {
  t.same(targetDatesFor('weekend', at('2027-03-26T07:00:00Z')), ['2027-03-27', '2027-03-28'], 'Friday 08:00 CET: Saturday and the 23-hour Sunday')
  t.same(targetDatesFor('daily', at('2027-03-27T07:00:00Z')), ['2027-03-28'], 'Saturday 08:00 CET')
  t.same(targetDatesFor('daily', at('2027-03-28T06:00:00Z')), ['2027-03-29'], 'Sunday 08:00 CEST')
  t.same(targetDatesFor('daily', at('2027-03-27T23:00:00Z')), ['2027-03-29'], '00:00 CET on Sunday is Sunday')
  t.same(targetDatesFor('daily', at('2027-03-28T21:59:59Z')), ['2027-03-29'], '23:59:59 CEST on Sunday is still Sunday')
})

t.test("a schedule's run of today is due once its Paris time has passed, DST days included", async t => {
  const daily = '0 8 * * *'
  t.notOk(firedEarlierToday(daily, PARIS, at('2026-11-20T06:59:59Z')), '07:59:59 Paris')
  t.ok(firedEarlierToday(daily, PARIS, at('2026-11-20T07:00:00Z')), '08:00:00 Paris')
  t.ok(firedEarlierToday(daily, PARIS, at('2026-11-20T22:59:59Z')), '23:59:59 Paris')
  t.notOk(firedEarlierToday(daily, PARIS, at('2026-10-25T06:59:59Z')), 'autumn Sunday 07:59:59 CET')
  t.ok(firedEarlierToday(daily, PARIS, at('2026-10-25T07:00:00Z')), 'autumn Sunday 08:00 CET')
  t.notOk(firedEarlierToday(daily, PARIS, at('2027-03-28T05:59:59Z')), 'spring Sunday 07:59:59 CEST')
  t.ok(firedEarlierToday(daily, PARIS, at('2027-03-28T06:00:00Z')), 'spring Sunday 08:00 CEST')
  t.notOk(firedEarlierToday('0 8 * * 5', PARIS, at('2026-11-19T10:00:00Z')), 'the weekend run is not due on Thursday')
  t.ok(firedEarlierToday('0 8 * * 5', PARIS, at('2026-11-20T10:00:00Z')), 'it is on Friday after 08:00')
  t.ok(firedEarlierToday('30 7 * * 0', PARIS, at('2026-11-22T07:00:00Z')), 'Sunday as day 0')
  t.ok(firedEarlierToday('30 7 * * 7', PARIS, at('2026-11-22T07:00:00Z')), 'Sunday as day 7')
})

const prm = (i: number) => `PRM${String(i).padStart(14, '0')}`
const silent: Logger = { debug () {}, info () {}, warn () {}, error () {}, child: () => silent }

function setup (t: Test, now: string) {
  const store = openStore(join(t.testdir(), 'store'))
  t.teardown(() => store.close())
  const revisions = openRevisions(store, { retentionDays: 90 })
  const sites: Site[] = [1, 2, 3].map(i => ({ site_id: prm(i), site_name: `S${i}` }))
  const calls: string[] = []
  const solver: SolverPort = {
    async sites () { return sites },
    async needs (siteId, c) { calls.push(`${siteId}/${c.targetDate}`); return { milestones: [], availablePowerKw: new Array(c.slots).fill(5) } },
    enqueueNextCycle () {},
    onCycleApplied () { return () => {} },
  }
  const clock = { now: () => new Date(now) }
  const publisher = createPublisher({ solver, revisions, clock, log: silent, emittedBy: 'epx', retryDelayMs: 1 })
  t.teardown(() => publisher.close())
  const config = { dailyCron: '0 8 * * *', weekendCron: '0 8 * * 5', timezone: PARIS, emittedBy: 'epx', schedule: true, retentionDays: 90 }
  return { revisions, solver, clock, publisher, calls, config, opts: { config, publisher, revisions, solver, clock, log: silent } }
}

t.test('catch-up after a missed run: on Friday at 09:00 with nothing published, Saturday and Sunday are published once each', async t => {
  const { opts, revisions, calls } = setup(t, '2026-11-20T08:00:00Z')
  await catchUp(opts)
  for (const i of [1, 2, 3]) {
    t.equal(revisions.list(prm(i), '2026-11-21').length, 1, `Saturday, site ${i}`)
    t.equal(revisions.list(prm(i), '2026-11-22').length, 1, `Sunday, site ${i}`)
  }
  t.equal(calls.length, 6)
})

t.test('catch-up publishes D+1 only for the sites that have no revision of it', async t => {
  const { opts, revisions, publisher, calls } = setup(t, '2026-11-18T12:00:00Z')
  await publisher.publish({ targetDate: '2026-11-19', siteIds: [prm(2)] })
  calls.length = 0
  await catchUp(opts)
  t.same(calls.sort(), [`${prm(1)}/2026-11-19`, `${prm(3)}/2026-11-19`])
  t.equal(revisions.list(prm(2), '2026-11-19').length, 1, 'the published site got no new revision')
  calls.length = 0
  await catchUp(opts)
  t.same(calls, [], 'a second start publishes nothing')
})

t.test('no catch-up before the day\'s run time: the schedule will publish', async t => {
  const { opts, calls } = setup(t, '2026-11-18T06:59:00Z')
  await catchUp(opts)
  t.same(calls, [])
})

t.test('the schedule catches up on start and stop() leaves no cron task behind', async t => {
  const { opts, revisions } = setup(t, '2026-11-18T12:00:00Z')
  const before = cron.getTasks().size
  const schedule = startSchedule(opts)
  t.equal(cron.getTasks().size, before + 2, 'the daily and the weekend matchers')
  const names = [...cron.getTasks().values()].map(task => task.name)
  t.ok(names.includes('epx-publish-daily') && names.includes('epx-publish-weekend'))
  t.ok([...cron.getTasks().values()].every(task => !task.name?.startsWith('epx-') || task.getStatus() === 'stopped'), "node-cron's own timers never run (they drop a late run)")
  await schedule.caughtUp
  t.ok(revisions.latest(prm(1), '2026-11-19'), 'D+1 was caught up')
  await schedule.stop()
  t.equal(cron.getTasks().size, before)
  await schedule.stop()   // idempotent
})

t.test('an invalid cron expression refuses to start with EPX_CONFIG_INVALID', async t => {
  const { opts } = setup(t, '2026-11-18T06:00:00Z')
  const before = cron.getTasks().size
  t.throws(() => startSchedule({ ...opts, config: { ...opts.config, weekendCron: '99 99 * * *' } }), { code: 'EPX_CONFIG_INVALID' })
  t.equal(cron.getTasks().size, before, 'the daily matcher made before it was destroyed')
})

/** A clock a test moves, and a schedule on it. */
function movable (t: Test, start: string) {
  const s = setup(t, start)
  let now = new Date(start)
  const clock = { now: () => now }
  return { ...s, clock, set: (iso: string) => { now = new Date(iso) }, opts: { ...s.opts, clock } }
}

t.test('on Friday at 08:00 the daily and weekend runs fire together: Saturday and Sunday get one revision each', async t => {
  const { opts, revisions, calls, set } = movable(t, '2026-11-20T06:59:00Z')
  const schedule = startSchedule(opts)
  t.teardown(() => schedule.stop())
  await schedule.caughtUp
  t.same(calls, [], '07:59 Paris: nothing due yet')
  set('2026-11-20T07:00:01Z')
  await schedule.tick()
  for (const i of [1, 2, 3]) {
    t.equal(revisions.list(prm(i), '2026-11-21').length, 1, `Saturday, site ${i}: once`)
    t.equal(revisions.list(prm(i), '2026-11-22').length, 1, `Sunday, site ${i}: once`)
  }
  set('2026-11-20T07:00:03Z')
  await schedule.tick()
  t.equal(calls.length, 6, 'the next tick runs nothing again')
})

t.test('a run whose instant passed while the event loop was blocked still runs, late, for its own dates', async t => {
  const lines: Array<[string, string]> = []
  const { opts, calls, set } = movable(t, '2026-11-18T06:59:58Z')
  const log: Logger = { ...silent, warn: (_o, msg) => { lines.push(['warn', msg!]) }, info: (_o, msg) => { lines.push(['info', msg!]) } }
  const schedule = startSchedule({ ...opts, log })
  t.teardown(() => schedule.stop())
  await schedule.caughtUp
  // The tick of 07:59:58 came, the next one only at 08:00:08: 8 s of a busy solver.
  set('2026-11-18T07:00:08Z')
  await schedule.tick()
  t.same(calls.sort(), [1, 2, 3].map(i => `${prm(i)}/2026-11-19`), 'D+1 published at 08:00:08')
  t.ok(lines.some(([level, msg]) => level === 'warn' && /runs 8 s late/.test(msg)), 'the lateness is a warn line')
  // Blocked across midnight: the 23:59 run of an operator's cron publishes for its own day.
  const late = movable(t, '2026-11-18T22:58:00Z')
  const s2 = startSchedule({ ...late.opts, config: { ...late.opts.config, dailyCron: '59 23 * * *' } })
  t.teardown(() => s2.stop())
  await s2.caughtUp
  late.calls.length = 0
  late.set('2026-11-18T23:00:30Z')   // 00:00:30 on Thursday in Paris
  await s2.tick()
  t.same(late.calls.sort(), [1, 2, 3].map(i => `${prm(i)}/2026-11-19`), "Wednesday 23:59's run publishes Thursday, not Friday")
})

t.test('a real event loop blocked for 3 s across 08:00 still publishes, by the schedule\'s own timer', async t => {
  // A clock whose 08:00:00 Paris comes in 300 ms.
  const eight = Date.parse('2026-11-18T07:00:00Z')
  const offset = eight - (Date.now() + 300)
  const s = setup(t, '2026-11-18T06:00:00Z')
  const clock = { now: () => new Date(Date.now() + offset) }
  const schedule = startSchedule({ ...s.opts, clock, tickMs: 100 })
  t.teardown(() => schedule.stop())
  await schedule.caughtUp
  t.same(s.calls, [], 'nothing before 08:00')
  await new Promise(resolve => setTimeout(resolve, 150))
  const end = Date.now() + 3000
  while (Date.now() < end) { /* the solver's 3 s cycle, on this thread */ }
  const deadline = Date.now() + 5000
  while (!s.revisions.latest(prm(3), '2026-11-19') && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 20))
  for (const i of [1, 2, 3]) t.equal(s.revisions.list(prm(i), '2026-11-19').length, 1, `site ${i} published once, late`)
})

t.test('on the 23-hour and the 25-hour Paris days, 08:00 runs once, at 08:00 local time', async t => {
  for (const [day, start, before, after, next] of [
    // Spring: 02:00 CET → 03:00 CEST; 08:00 CEST is 06:00Z.
    ['2027-03-28', '2027-03-27T22:30:00Z', '2027-03-28T05:59:59Z', '2027-03-28T06:00:01Z', '2027-03-29'],
    // Autumn: 03:00 CEST → 02:00 CET; 08:00 CET is 07:00Z.
    ['2026-10-25', '2026-10-24T22:30:00Z', '2026-10-25T06:59:59Z', '2026-10-25T07:00:01Z', '2026-10-26'],
  ] as const) {
    const { opts, calls, set } = movable(t, start)
    const schedule = startSchedule(opts)
    await schedule.caughtUp
    calls.length = 0   // the day before's D+1, caught up at the start
    // Ticks every 10 min through the night, the change of hour included.
    for (let ms = Date.parse(start); ms <= Date.parse(before); ms += 600_000) { set(new Date(ms).toISOString()); await schedule.tick() }
    set(before)
    await schedule.tick()
    t.same(calls, [], `${day}: nothing before 08:00 local`)
    set(after)
    await schedule.tick()
    t.same(calls.sort(), [1, 2, 3].map(i => `${prm(i)}/${next}`), `${day}: D+1 at 08:00 local`)
    for (let ms = Date.parse(after); ms <= Date.parse(after) + 18 * 3_600_000; ms += 600_000) { set(new Date(ms).toISOString()); await schedule.tick() }
    t.equal(calls.length, 3, `${day}: once only, the rest of the day`)
    await schedule.stop()
  }
})

t.test('each tick catches up: a site that appears later in the day is published then', async t => {
  const { opts, calls, set, solver, revisions } = movable(t, '2026-11-18T06:59:00Z')
  const sites = await solver.sites()
  const growing: SolverPort = { ...solver, async sites () { return sites } }
  const schedule = startSchedule({ ...opts, solver: growing, catchUpRetryMs: 600_000 })
  t.teardown(() => schedule.stop())
  set('2026-11-18T07:00:00Z')
  await schedule.tick()
  t.equal(calls.length, 3, '08:00: three sites, once')
  ;(sites as Site[]).push({ site_id: prm(4), site_name: 'S4' })
  set('2026-11-18T07:05:00Z')
  await schedule.tick()
  t.equal(calls.length, 3, 'not before catchUpRetryMs after the run')
  set('2026-11-18T09:00:00Z')
  await schedule.tick()
  t.same(calls.slice(3), [`${prm(4)}/2026-11-19`], '10:00: the new site, alone')
  t.equal(revisions.list(prm(1), '2026-11-19').length, 1, 'the others keep their one revision')
})

/** A leadership a test hands over and takes back, as the database would (store/leadership.ts). */
function switchable (leading: boolean): Leadership & { set(l: boolean): void } {
  const listeners = new Set<(l: boolean) => void>()
  return {
    isLeader: () => leading,
    onChange (l) { listeners.add(l); return () => { listeners.delete(l) } },
    fenced: run => run(),
    set (l) { if (l === leading) return; leading = l; for (const f of listeners) f(l) },
  }
}

t.test('of instances sharing a store, only the leader publishes at 08:00; the others neither run nor catch up', async t => {
  const { opts, calls, revisions, set } = movable(t, '2026-11-18T12:00:00Z')
  const schedule = startSchedule({ ...opts, leadership: switchable(false) })
  t.teardown(() => schedule.stop())
  await schedule.caughtUp
  t.same(calls, [], 'a non-leader does not catch up a missed run')
  set('2026-11-19T07:00:00Z')
  await schedule.tick()
  t.same(calls, [], 'nor does its 08:00 run publish')
  t.notOk(revisions.latest(prm(1), '2026-11-19'))
  t.notOk(revisions.latest(prm(1), '2026-11-20'))
})

t.test('a new leader catches up the 08:00 run the old one missed, at the takeover, by the injected clock', async t => {
  // The old leader died at 07:59; the takeover comes at 08:00:07.
  const { opts, calls, revisions, set } = movable(t, '2026-11-18T06:59:00Z')
  const leadership = switchable(false)
  const schedule = startSchedule({ ...opts, leadership })
  t.teardown(() => schedule.stop())
  set('2026-11-18T07:00:00Z')
  await schedule.tick()   // 08:00: not the leader yet
  t.same(calls, [])
  set('2026-11-18T07:00:07Z')
  leadership.set(true)
  await schedule.caughtUp
  t.same(calls.sort(), [1, 2, 3].map(i => `${prm(i)}/2026-11-19`), 'D+1 published for every site at the takeover')
  for (const i of [1, 2, 3]) t.equal(revisions.list(prm(i), '2026-11-19').length, 1)
})

t.test('a takeover after the old leader published: nothing is published twice; only the sites it left', async t => {
  const { opts, calls, publisher, revisions } = setup(t, '2026-11-18T07:30:00Z')
  // What the old leader's 08:00 run wrote before it died half-way: two sites of three.
  await publisher.publish({ targetDate: '2026-11-19', siteIds: [prm(1), prm(2)] })
  calls.length = 0
  const leadership = switchable(false)
  const schedule = startSchedule({ ...opts, leadership })
  t.teardown(() => schedule.stop())
  leadership.set(true)
  await schedule.caughtUp
  t.same(calls, [`${prm(3)}/2026-11-19`])
  t.equal(revisions.list(prm(1), '2026-11-19').length, 1, 'the published sites keep their one revision')
})

t.test('a leader that loses the leadership stops publishing; it catches up again when it takes it back', async t => {
  const { opts, calls, set } = movable(t, '2026-11-18T06:00:00Z')
  const leadership = switchable(true)
  const schedule = startSchedule({ ...opts, leadership })
  t.teardown(() => schedule.stop())
  await schedule.caughtUp
  t.same(calls, [], '07:00 Paris: nothing due')
  leadership.set(false)
  set('2026-11-18T07:00:00Z')
  await schedule.tick()
  t.same(calls, [], 'no longer the leader at 08:00: not published here')
  set('2026-11-18T09:00:00Z')
  leadership.set(true)
  await schedule.caughtUp
  t.equal(calls.length, 3, 'leading again: the missed run caught up')
})

t.test('a failed catch-up is tried again at the next ticks while this instance leads, and no longer once it does not', async t => {
  const { opts, revisions, solver } = setup(t, '2026-11-18T12:00:00Z')
  let refusals = 2
  const flaky: SolverPort = { ...solver, async sites () { if (refusals-- > 0) throw new Error('the solver is restarting'); return solver.sites() } }
  const leadership = switchable(true)
  const lines: string[] = []
  const log: Logger = { ...silent, error: (_o, msg) => { lines.push(`error ${msg}`) }, info: (_o, msg) => { lines.push(`info ${msg}`) } }
  const schedule = startSchedule({ ...opts, solver: flaky, log, leadership, tickMs: 20 })
  t.teardown(() => schedule.stop())
  const deadline = Date.now() + 5000
  while (!revisions.latest(prm(1), '2026-11-19') && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 10))
  await schedule.caughtUp
  t.ok(revisions.latest(prm(1), '2026-11-19'), 'published at the third attempt')
  t.equal(lines.filter(l => l.startsWith('error')).length, 1, 'one error line for the failed attempts')
  t.ok(lines.some(l => /catch-up done/.test(l)))

  let asked = 0
  const stuck: SolverPort = { ...solver, async sites () { asked++; throw new Error('down') } }
  const lead2 = switchable(true)
  const s2 = startSchedule({ ...opts, solver: stuck, leadership: lead2, tickMs: 20 })
  await new Promise(resolve => setTimeout(resolve, 60))
  lead2.set(false)
  await s2.caughtUp
  const then = asked
  await new Promise(resolve => setTimeout(resolve, 100))
  t.equal(asked, then, 'not tried once it no longer leads')
  await s2.stop()
})

t.test('stop() leaves no timer: a schedule with a 60 s catch-up pace stops at once', async t => {
  const { opts, solver } = setup(t, '2026-11-18T12:00:00Z')
  const stuck: SolverPort = { ...solver, async sites () { throw new Error('down') } }
  const schedule = startSchedule({ ...opts, solver: stuck, leadership: switchable(true), catchUpRetryMs: 60_000 })
  await new Promise(resolve => setTimeout(resolve, 20))
  const started = Date.now()
  await schedule.stop()
  t.ok(Date.now() - started < 1000, 'stopped at once')
})

t.test('revision retention follows a run only on the leader', async t => {
  const { revisions, solver, clock } = setup(t, '2026-11-18T12:00:00Z')
  let leading = false
  // A revision of 100 days ago, past the 90 days of retention.
  const old = createPublisher({ solver, revisions, clock: { now: () => new Date('2026-08-10T12:00:00Z') }, log: silent, emittedBy: 'epx' })
  await old.publish({ targetDate: '2026-08-11', siteIds: [prm(1)] })
  await old.close()
  const publisher = createPublisher({ solver, revisions, clock, log: silent, emittedBy: 'epx', leads: () => leading })
  t.teardown(() => publisher.close())
  await publisher.publish({ targetDate: '2026-11-19', siteIds: [prm(1)] })
  t.ok(revisions.latest(prm(1), '2026-08-11'), 'not the leader: the expired revision stays')
  leading = true
  await publisher.publish({ targetDate: '2026-11-19', siteIds: [prm(2)] })
  t.notOk(revisions.latest(prm(1), '2026-08-11'), 'the leader removed it after its run')
})

for (const kind of storeKinds) {
  t.test(`${kind}: a run 8 s late, its writes fenced by the store's own leadership, publishes`, async t => {
    const store = await storesOf(t, kind).openStore(join(t.testdir(), 'store'))
    t.teardown(() => store.close())
    const leadership = store.leadership()
    const deadline = Date.now() + 5000
    while (!leadership.isLeader() && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 20))
    t.ok(leadership.isLeader(), 'the only instance leads')
    const revisions = openRevisions(store, { retentionDays: 90 })
    let now = new Date('2026-11-18T06:59:58Z')
    const clock = { now: () => now }
    const sites: Site[] = [1, 2].map(i => ({ site_id: prm(i), site_name: `S${i}` }))
    const solver: SolverPort = {
      async sites () { return sites },
      async needs (_s, c) { return { milestones: [], availablePowerKw: new Array(c.slots).fill(5) } },
      enqueueNextCycle () {},
      onCycleApplied () { return () => {} },
    }
    const publisher = createPublisher({ solver, revisions, clock, log: silent, emittedBy: 'epx', retryDelayMs: 1, leads: leadership.isLeader, fenced: leadership.fenced })
    t.teardown(() => publisher.close())
    const config = { dailyCron: '0 8 * * *', weekendCron: '0 8 * * 5', timezone: PARIS, emittedBy: 'epx', schedule: true, retentionDays: 90 }
    const schedule = startSchedule({ config, publisher, revisions, solver, clock, log: silent, leadership })
    t.teardown(() => schedule.stop())
    await schedule.caughtUp
    now = new Date('2026-11-18T07:00:08Z')
    await schedule.tick()
    for (const i of [1, 2]) t.equal(revisions.list(prm(i), '2026-11-19').length, 1, `site ${i} published at 08:00:08`)
  })
}
