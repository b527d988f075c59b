import t from 'tap'
import { createReferenceHost, honour, ManualClock } from '../../src/host/reference-host.ts'
import { simulatedNeeds, simulatedSites } from '../../src/host/simulated-sites.ts'
import { coverageOf } from '../../src/contract/paris-day.ts'

t.test('simulated sites have stable PRM ids and names', async t => {
  const sites = simulatedSites(3)
  t.same(sites.map(s => s.site_id), ['PRM30000000000001', 'PRM30000000000002', 'PRM30000000000003'])
  t.equal(sites[0]!.site_name, 'Depot 1')
})

t.test('the same site and day always give the same needs; another day gives others', async t => {
  const a = simulatedNeeds('PRM30000000000001', coverageOf('2026-11-22'))
  const b = simulatedNeeds('PRM30000000000001', coverageOf('2026-11-22'))
  const c = simulatedNeeds('PRM30000000000001', coverageOf('2026-11-23'))
  t.same(a, b)
  t.notSame(a.availablePowerKw, c.availablePowerKw)
})

t.test('needs have one available-power value per quarter-hour, on DST days too', async t => {
  for (const [date, slots] of [['2026-10-25', 100], ['2026-11-22', 96], ['2027-03-28', 92]] as const) {
    const needs = simulatedNeeds('PRM30000000000002', coverageOf(date))
    t.equal(needs.availablePowerKw.length, slots, date)
    t.ok(needs.availablePowerKw.every(kw => kw > 0), `${date}: power available in every slot`)
    t.ok(needs.milestones.every(m => m.startUtc < m.deadlineUtc && m.energyKwh > 0), `${date}: milestones well formed`)
  }
})

t.test('a floor raises the set-point, a curtailment caps it, and nothing exceeds the available power', async t => {
  const slot = { startUtc: 'a', endUtc: 'b' }
  t.equal(honour(10, 100), 10, 'no constraint: the plan')
  t.equal(honour(10, 100, { ...slot, minKw: 40 }), 40, 'floor above the plan')
  t.equal(honour(50, 100, { ...slot, minKw: 40 }), 50, 'floor below the plan: the plan')
  t.equal(honour(50, 100, { ...slot, maxKw: 0 }), 0, 'curtailment')
  t.equal(honour(10, 30, { ...slot, minKw: 40 }), 30, 'floor beyond the available power: the available power')
})

t.test('a cycle drains the queue, applies the latest input of a site and day, and acknowledges it', async t => {
  const clock = new ManualClock('2026-11-22T10:05:00Z')
  const ref = createReferenceHost({ dataDir: t.testdir(), clock, sites: 2 })
  t.teardown(() => ref.close())
  const seen: number[] = []
  const off = ref.host.solver.onCycleApplied(r => seen.push(r.cycle))
  const site = ref.sites[0]!.site_id
  const period = { startUtc: '2026-11-22T10:00:00Z', endUtc: '2026-11-22T10:15:00Z' }
  ref.host.solver.enqueueNextCycle([{ instructionId: 'old', siteId: site, targetDate: '2026-11-22', periods: [{ ...period, minKw: 20 }] }])
  ref.host.solver.enqueueNextCycle([{ instructionId: 'new', siteId: site, targetDate: '2026-11-22', periods: [{ ...period, maxKw: 0 }] }])
  t.equal(ref.pending().length, 2)
  const report = ref.runCycle()
  t.equal(report.cycle, 1)
  t.same(report.inputs.map(i => i.instructionId), ['old', 'new'])
  t.equal(ref.pending().length, 0)
  t.equal(ref.activeInput(site, '2026-11-22')?.instructionId, 'new')
  const sp = ref.setpoints().get(site)!
  t.equal(sp.kw, 0, 'the curtailment of the latest input is honoured')
  t.equal(sp.capKw, 0)
  t.equal(ref.setpoints().get(ref.sites[1]!.site_id)!.capKw, undefined, 'other sites unconstrained')
  off()
  ref.runCycle()
  t.same(seen, [1], 'an unsubscribed listener hears nothing more')
})

t.test('needs of an unknown site are refused for that site alone', async t => {
  const ref = createReferenceHost({ dataDir: t.testdir(), sites: 1 })
  await t.rejects(ref.host.solver.needs('PRM99999999999999', coverageOf('2026-11-22')), /unknown site/)
  t.equal((await ref.host.solver.needs('PRM30000000000001', coverageOf('2026-11-22'))).availablePowerKw.length, 96)
})
