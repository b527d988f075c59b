import t from 'tap'
import { floorOrCurtailment, instructionPeriods, periodsOf, powerKw, toPeriod } from '../../src/apply/to-constraints.ts'

const at = Date.parse('2026-11-21T23:00:00Z')

t.test('900 s slots: power_kw = energie_kwh × 4, a floor (min_kw)', async t => {
  t.equal(powerKw(2.5, 900), 10)
  t.same(toPeriod(at, 2.5, 900), { startUtc: '2026-11-21T23:00:00Z', endUtc: '2026-11-21T23:15:00Z', minKw: 10 })
})

t.test('1800 s slots: power_kw = energie_kwh × 2, over half an hour', async t => {
  t.equal(powerKw(2.5, 1800), 5)
  t.same(toPeriod(at, 2.5, 1800), { startUtc: '2026-11-21T23:00:00Z', endUtc: '2026-11-21T23:30:00Z', minKw: 5 })
})

t.test('energie_kwh = 0 is a curtailment: max_kw = 0 and no floor', async t => {
  t.same(toPeriod(at, 0, 900), { startUtc: '2026-11-21T23:00:00Z', endUtc: '2026-11-21T23:15:00Z', maxKw: 0 })
  t.same(toPeriod(at, 0, 1800), { startUtc: '2026-11-21T23:00:00Z', endUtc: '2026-11-21T23:30:00Z', maxKw: 0 })
})

t.test('absent slots give no period: a gap stays unconstrained', async t => {
  const periods = instructionPeriods({ slotDurationSecs: 900, slots: [['2026-11-21T23:00:00Z', 1], ['2026-11-21T23:30:00Z', 0]] })
  t.same(periods.map(p => p.startUtc), ['2026-11-21T23:00:00Z', '2026-11-21T23:30:00Z'])
  t.same(periods.map(p => [p.minKw, p.maxKw]), [[4, undefined], [undefined, 0]])
})

t.test('a batch range converts slot by slot', async t => {
  const starts = Float64Array.of(at, at + 900_000, at + 1_800_000)
  const kwh = Float64Array.of(1, 0.25, 3)
  t.same(periodsOf(starts, kwh, 1, 3, 900).map(p => p.minKw), [1, 12])
})

t.test('floorOrCurtailment is the one rule: any energy > 0 is a floor, 0 a curtailment, and every conversion agrees with it', async t => {
  const [s, e] = ['2026-11-21T23:00:00Z', '2026-11-21T23:15:00Z']
  t.same(floorOrCurtailment(s, e, 0.001, 900), { startUtc: s, endUtc: e, minKw: 0.004 }, 'the smallest energy is still a floor')
  t.same(floorOrCurtailment(s, e, 0, 900), { startUtc: s, endUtc: e, maxKw: 0 })
  const starts = Float64Array.of(at, at + 900_000)
  const kwh = Float64Array.of(0.001, 0)
  t.same(periodsOf(starts, kwh, 0, 2, 900), [toPeriod(at, 0.001, 900), toPeriod(at + 900_000, 0, 900)], 'a batch and a stored slot convert alike')
})
