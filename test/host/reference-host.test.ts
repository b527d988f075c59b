import t from 'tap'
import pino from 'pino'
import { createReferenceHost, honour, ManualClock } from '../../src/host/reference-host.ts'
import { correctedSlotMs, meterCorrections, METER_CORRECTION_DELAY_MS, simulatedNeeds, simulatedSites } from '../../src/host/simulated-sites.ts'
import { coverageOf, parisDayMs } from '../../src/contract/paris-day.ts'
import type { Logger, MeterReading } from '../../src/host/contract.ts'

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

t.test('simulated meters: a floor is drawn most of the time and falls short now and then; a curtailment is mostly respected', async t => {
  const clock = new ManualClock('2026-11-21T22:00:00Z')
  const ref = createReferenceHost({ dataDir: t.testdir(), clock, sites: 20 })
  t.teardown(() => ref.close())
  const start = Date.parse(coverageOf('2026-11-22').startUtc)
  const periods = Array.from({ length: 96 }, (_, j) => {
    const s = new Date(start + j * 900_000).toISOString()
    const e = new Date(start + (j + 1) * 900_000).toISOString()
    return j % 2 ? { startUtc: s, endUtc: e, maxKw: 0 } : { startUtc: s, endUtc: e, minKw: 40 }
  })
  ref.host.solver.enqueueNextCycle(ref.sites.map(s => ({ instructionId: 'I', siteId: s.site_id, targetDate: '2026-11-22', periods })))
  ref.runCycle()
  const readings = ref.meterReadings(start, start + 96 * 900_000)
  t.equal(readings.length, 20 * 96)
  t.same(ref.meterReadings(start, start + 900_000), readings.slice(0, 20), 'the same slot measures the same')
  const floors = readings.filter((_, i) => Math.floor(i / 20) % 2 === 0)
  const curtailed = readings.filter((_, i) => Math.floor(i / 20) % 2 === 1)
  const met = floors.filter(r => r.kwh >= 10).length / floors.length
  const respected = curtailed.filter(r => r.kwh === 0).length / curtailed.length
  t.ok(met > 0.75 && met < 0.95, `floors met ${met}`)
  t.ok(respected > 0.8 && respected < 0.98, `curtailments respected ${respected}`)

  // Once attached, each cycle reports the quarter-hours closed since the last report.
  const reports: Array<readonly { startUtc: string }[]> = []
  clock.set('2026-11-22T00:10:00Z')   // 01:10 in Paris: four quarter-hours of today closed
  ref.meterInto(async r => { reports.push(r); return { accepted: r.length, refusedCount: 0, refused: [] } })
  ref.runCycle()
  t.equal(reports[0]!.length, 4 * 20)
  ref.runCycle()
  t.equal(reports.length, 1, 'nothing new closed: nothing reported')
  clock.set('2026-11-22T00:16:00Z')
  ref.runCycle()
  t.same([...new Set(reports[1]!.map(r => r.startUtc))], ['2026-11-22T00:00:00Z'])
})

t.test('simulated meters: at 7 minutes past each hour, a late correction of one quarter-hour of the day reported earlier', async t => {
  const lines: any[] = []
  const logger = pino({ level: 'info' }, { write: (l: string) => { lines.push(JSON.parse(l)) } }) as unknown as Logger
  const clock = new ManualClock('2026-11-22T09:50:00Z')   // 10:50 in Paris
  const newHost = () => createReferenceHost({ dataDir: t.testdir(), clock, logger, sites: 3 })
  const ref = newHost()
  t.teardown(() => ref.close())
  const reports: MeterReading[][] = []
  ref.meterInto(async r => { reports.push([...r]); return { accepted: r.length, refusedCount: 0, refused: [] } })
  ref.runCycle()
  t.equal(reports[0]!.length, 43 * 3, 'the day so far: 43 quarter-hours closed, every site')
  const reported = new Map(reports[0]!.map(r => [`${r.siteId}/${r.startUtc}`, r.kwh]))

  clock.set('2026-11-22T10:06:59Z')
  ref.runCycle()
  t.same([...new Set(reports[1]!.map(r => r.startUtc))], ['2026-11-22T09:45:00Z'], 'the quarter-hour closed at 10:00 Z, no correction yet')
  clock.set('2026-11-22T10:07:00Z')
  ref.runCycle()
  const correction = reports[2]!
  t.equal(correction.length, 3, 'one quarter-hour, every site')
  const slot = correction[0]!.startUtc
  t.ok(correction.every(r => r.startUtc === slot))
  t.ok(Date.parse(slot) >= Date.parse('2026-11-21T23:00:00Z') && Date.parse(slot) < Date.parse('2026-11-22T10:00:00Z'),
    `an earlier hour of today (${slot})`)
  for (const r of correction) t.not(r.kwh, reported.get(`${r.siteId}/${r.startUtc}`), `${r.siteId}: a corrected value`)
  const logged = lines.filter(l => l.msg.startsWith('meter correction'))
  t.equal(logged.length, 1, 'logged at info level, once')
  t.match(logged[0], { level: 30, startUtc: slot, sites: 3 })
  t.same(logged[0].changes, correction.map(r => ({ siteId: r.siteId, kwh: r.kwh, previousKwh: reported.get(`${r.siteId}/${r.startUtc}`) })),
    'which slot changed, from what to what')
  clock.set('2026-11-22T10:14:00Z')
  ref.runCycle()
  t.equal(reports.length, 3, 'nothing more until the next quarter-hour closes')

  // Deterministic, and a host that starts again reports the day as last reported.
  const again = newHost()
  t.teardown(() => again.close())
  const replay: MeterReading[][] = []
  again.meterInto(async r => { replay.push([...r]); return { accepted: r.length, refusedCount: 0, refused: [] } })
  again.runCycle()
  const latest = new Map([...reports.flat()].map(r => [`${r.siteId}/${r.startUtc}`, r.kwh]))
  t.same(new Map(replay[0]!.map(r => [`${r.siteId}/${r.startUtc}`, r.kwh])), latest, 'same slots, same values, the correction included')
})

t.test('simulated meter corrections: none in the first hour of a Paris day; one an hour after, on DST days too', async t => {
  for (const [date, hours] of [['2026-11-22', 24], ['2027-03-28', 23], ['2026-10-25', 25]] as const) {
    const { startMs, endMs } = parisDayMs(date)
    t.equal(correctedSlotMs(startMs), undefined, `${date}: nothing to correct at midnight`)
    const all = meterCorrections(startMs - 1, endMs - 1 + METER_CORRECTION_DELAY_MS)
    t.equal(all.length, hours - 1, `${date}: one correction an hour after the first`)
    t.ok(all.every(c => c.slotMs >= startMs && c.slotMs + 900_000 <= c.hourMs && c.hourMs < endMs), `${date}: each of a quarter-hour of the day closed before its hour`)
    t.same(meterCorrections(startMs - 1, endMs - 1 + METER_CORRECTION_DELAY_MS), all, `${date}: the same every time`)
  }
})
