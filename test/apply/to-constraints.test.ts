import t from 'tap'
import { floorOrCurtailment, instructionConstraints, periodsOf, powerKw, toPeriod } from '../../src/apply/to-constraints.ts'

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
  const periods = instructionConstraints({ slotDurationSecs: 900, slots: [['2026-11-21T23:00:00Z', 1], ['2026-11-21T23:30:00Z', 0]] })
  t.same(periods.map(p => p.startUtc), ['2026-11-21T23:00:00Z', '2026-11-21T23:30:00Z'])
  t.same(periods.map(p => [p.minKw, p.maxKw, p.energyKwh]), [[4, undefined, 1], [undefined, 0, 0]])
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

t.test('a floor is always a finite number (DECISIONS.md "Inbound", sanity bound): a slot whose power is not is no constraint, whichever way it is converted', async t => {
  // The rules refuse such a slot (test/contract/programme-rules.test.ts): only a record from before them holds one.
  const [s, e] = ['2026-11-21T23:00:00Z', '2026-11-21T23:15:00Z']
  t.equal(powerKw(1e306, 900), Infinity, '1e306 kWh over 900 s: the power overflows')
  for (const energy of [1e306, Infinity, NaN, -1]) t.equal(floorOrCurtailment(s, e, energy, 900), undefined, `energy ${energy}`)
  t.same(floorOrCurtailment(s, e, 1e300, 900), { startUtc: s, endUtc: e, minKw: 4e300 }, 'finite, however large: the bound is the rules\' to enforce')
  const starts = Float64Array.of(at, at + 900_000, at + 1_800_000)
  const kwh = Float64Array.of(1, 1e306, 0)
  const periods = periodsOf(starts, kwh, 0, 3, 900)
  t.same(periods.map(p => [p.startUtc, p.minKw, p.maxKw]), [['2026-11-21T23:00:00Z', 4, undefined], ['2026-11-21T23:30:00Z', undefined, 0]], 'the slot left out, the others kept')
  const stored = instructionConstraints({ slotDurationSecs: 900, slots: [[s, 1e306], ['2026-11-21T23:15:00Z', 2]] })
  t.same(stored.map(p => [p.startUtc, p.minKw, p.energyKwh]), [['2026-11-21T23:15:00Z', 8, 2]], 'a stored instruction\'s constraints too (console, CLI)')
})
