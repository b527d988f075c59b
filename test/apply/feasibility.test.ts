import t from 'tap'
import { checkSlots as found, type SiteNeedsSeen } from '../../src/apply/feasibility.ts'
import { readableFlag } from '../../src/store/instruction-flags.ts'

/** The check's flag as people read it (the store keeps its slots as numbers). */
const checkSlots = (...a: Parameters<typeof found>) => { const f = found(...a); return f && readableFlag(f) }

const START = Date.parse('2026-11-21T23:00:00Z')
const Q = 900_000
/** 4 quarter-hours of 100 kW available; milestones need 60 kWh. */
const needs: SiteNeedsSeen = {
  emittedAt: '2026-11-21T07:00:00Z',
  availableKw: new Map([0, 1, 2, 3].map(i => [START + i * Q, 100])),
  availableKwh: 100,
  needsKwh: 60,
}
const batch = (kwh: number[], slotDurationSecs = 900) => ({
  starts: Float64Array.from(kwh.map((_, i) => START + i * slotDurationSecs * 1000)),
  kwh: Float64Array.from(kwh),
  slotDurationSecs,
})

t.test('floors within the available power and a day within the needs: no flag', async t => {
  t.equal(checkSlots(batch([25, 0, 25, 0]), 0, 4, needs), undefined, '25 kWh a quarter-hour is exactly 100 kW')
})

t.test('a slot whose floor exceeds the available power is flagged with its floor and the power', async t => {
  const flag = checkSlots(batch([1, 26, 1, 1]), 0, 4, needs)
  t.same(flag, { checkedAgainst: '2026-11-21T07:00:00Z', infeasibleSlots: [{ startUtc: '2026-11-21T23:15:00Z', floorKw: 104, availableKw: 100 }] })
})

t.test('a day that programs more energy than the milestones need is flagged with the totals', async t => {
  const flag = checkSlots(batch([20, 20, 20, 20]), 0, 4, needs)
  t.same(flag?.infeasibleSlots, [])
  t.same(flag?.day, { programmedKwh: 80, needsKwh: 60, availableKwh: 100 })
})

t.test('a 30-minute slot needs its floor in both quarter-hours it covers', async t => {
  const tight = { ...needs, availableKw: new Map([[START, 100], [START + Q, 40]]) }
  const flag = checkSlots(batch([30], 1800), 0, 1, tight)
  t.same(flag?.infeasibleSlots, [{ startUtc: '2026-11-21T23:00:00Z', floorKw: 60, availableKw: 40 }])
})

t.test('a curtailment (0 kWh) is never infeasible', async t => {
  t.equal(checkSlots(batch([0, 0]), 0, 2, { ...needs, availableKw: new Map([[START, 0], [START + Q, 0]]) }), undefined)
})
