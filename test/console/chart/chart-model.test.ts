import t from 'tap'
import { axisTop, chartModel, lowestAvailable, OUTLIER_FACTOR, type ChartInput } from '../../../src/console/chart/chart-model.ts'
import { parisDayMs } from '../../../src/contract/paris-day.ts'

const Q = 900_000
const { startMs, endMs } = parisDayMs('2026-11-22')
const at = (k: number) => startMs + k * Q

/** A day with no series at all; each test gives the ones a page would have. */
function input (o: Partial<ChartInput> = {}): ChartInput {
  return { startMs, endMs, slotMs: Q, available: [], milestones: [], constraints: [], title: 'Graphique', tableName: 'Créneaux', ...o }
}

const available = Array.from({ length: 96 }, (_, k) => ({ startMs: at(k), kw: 80 + (k % 9) }))
const floors = (kw: (k: number) => number, n = 96) => Array.from({ length: n }, (_, k) => ({ startMs: at(k), endMs: at(k + 1), minKw: kw(k) }))
const delivered = (kw: (k: number) => number, n = 96) => Array.from({ length: n }, (_, k) => ({ startMs: at(k), kw: kw(k) }))

t.test('the legend lists exactly the series drawn, in one order', async t => {
  t.same(chartModel(input()).legend, [], 'nothing given, nothing listed')
  t.same(chartModel(input({ available, milestones: [{ startMs: at(0), deadlineMs: at(28), energyKwh: 500, powerKw: 80 }] })).legend,
    ['available', 'milestone'], 'the Besoins alone: no floor, curtailment or delivered entry')
  t.same(chartModel(input({ constraints: [...floors(() => 10, 4), { startMs: at(4), endMs: at(5), maxKw: 0 }], delivered: delivered(() => 9, 6) })).legend,
    ['floor', 'curtailment', 'delivered'], 'a programme and its meter values without published Besoins: no available power, no milestone')
  t.same(chartModel(input({ available, constraints: floors(() => 200, 2) })).legend, ['available', 'infeasible'],
    'every floor over the available power: the infeasible style only, no plain floor entry')
  t.same(chartModel(input({ available, constraints: floors(k => k === 0 ? 8000 : 10, 4) })).legend, ['available', 'floor', 'infeasible', 'clipped'],
    'a clipped mark is explained in the legend')
})

t.test('one extreme floor does not set the scale: it is clipped, and the rest keeps its height', async t => {
  // A programme of 10 kW floors with one 8,000 kW slot, the meter delivering about 9 kW; no Besoins published.
  const m = chartModel(input({ constraints: floors(k => k === 40 ? 8000 : 10), delivered: delivered(k => 8 + (k % 3)) }))
  t.ok(m.top >= 10 && m.top <= 20, `the axis holds the floors and the delivered power (top ${m.top} kW), not 10,000 kW`)
  t.same(m.clipped, [{ series: 'floor', startMs: at(40), endMs: at(41), kw: 8000 }], 'the one outlier, and only it, is clipped')
  t.equal(m.floors.find(f => f.startMs === at(40))!.kw, 8000, 'its value is kept for its marker and tooltip')
})

t.test('a meter glitch is clipped the same way; the floors and available power keep the scale', async t => {
  const m = chartModel(input({ available, constraints: floors(() => 40), delivered: delivered(k => k === 10 ? 5000 : 39) }))
  t.ok(m.top >= 88 && m.top <= 100, `top ${m.top} kW`)
  t.same(m.clipped.map(c => [c.series, c.kw]), [['delivered', 5000]])
})

t.test('values within the robust bound set the axis, however high: nothing is clipped without an outlier', async t => {
  // 120 kW floors from 18:00 over 80-88 kW available: a quarter of the day, not an outlier.
  const m = chartModel(input({ available, constraints: floors(k => k >= 72 ? 120 : 10) }))
  t.ok(m.top >= 120, `top ${m.top} kW`)
  t.same(m.clipped, [])
  t.equal(m.floors.filter(f => f.over).length, 24, 'those floors are over the available power: infeasible')
})

t.test('the robust bound is the 90th percentile of the plotted values times the outlier factor', async t => {
  const values = [...Array.from({ length: 18 }, () => 10), 25, 1000]
  t.equal(OUTLIER_FACTOR, 3)
  t.ok(axisTop(values) >= 25 && axisTop(values) < 1000, '25 kW is within 3 × 10 kW, 1,000 kW is not')
  t.ok(axisTop([...values.slice(0, 18), 31]) < 31, '31 kW is beyond 3 × 10 kW')
  t.equal(axisTop([]), axisTop([0, 0]), 'no positive value: a small default axis')
  t.ok(axisTop([0, 0]) > 0)
})

t.test('a floor is infeasible against the lowest available power of the quarter-hours it spans', async t => {
  // A one-hour slot spans four quarter-hours: 80, 81, 82, 83 kW.
  t.equal(lowestAvailable(available, at(0), at(4)), 80)
  t.equal(lowestAvailable(available, at(1), at(4)), 81)
  t.equal(lowestAvailable([], at(0), at(4)), undefined, 'no Besoins published: unknown, never infeasible')
  const m = chartModel(input({ available, constraints: [{ startMs: at(1), endMs: at(5), minKw: 80.5 }, { startMs: at(5), endMs: at(6), minKw: 85 }] }))
  t.same(m.floors.map(f => [f.kw, f.availableKw, f.over]), [[80.5, 81, false], [85, 85, false]], 'at or under the lowest: holdable')
  const none = chartModel(input({ constraints: floors(() => 8000, 1) }))
  t.same(none.floors.map(f => f.over), [false], 'without Besoins a floor is not styled infeasible')
})
