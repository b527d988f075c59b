import t from 'tap'
import pino from 'pino'
import { availablePower, checkSlots as found, flaggedWarnings, type SiteNeedsSeen } from '../../src/apply/feasibility.ts'
import type { InstructionBatch } from '../../src/contract/instruction.ts'
import type { Logger } from '../../src/host/contract.ts'
import { readableFlag } from '../../src/store/instruction-flags.ts'

/** The check's flag as people read it (the store keeps its slots as numbers). */
const checkSlots = (...a: Parameters<typeof found>) => { const f = found(...a); return f && readableFlag(f) }

const START = Date.parse('2026-11-21T23:00:00Z')
const Q = 900_000
/** 4 quarter-hours of 100 kW available; milestones need 60 kWh. */
const needs: SiteNeedsSeen = {
  emittedAt: '2026-11-21T07:00:00Z',
  ...availablePower([0, 1, 2, 3].map(i => [START + i * Q, 100])),
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

t.test('a slot whose floor is not a finite number (the rules refuse it) is no constraint here either: no floor of Infinity is stored', async t => {
  const flag = checkSlots(batch([1, 1e306, 1, 1]), 0, 4, needs)
  t.equal(flag, undefined, 'the three others are within the power and the needs')
  const found2 = found(batch([1e306, 30, 1, 1]), 0, 4, needs)
  t.ok(found2 && [...found2.slots].every(Number.isFinite) && Number.isFinite(found2.day?.programmedKwh ?? 0))
  t.same(found2 && readableFlag(found2).infeasibleSlots, [{ startUtc: '2026-11-21T23:15:00Z', floorKw: 120, availableKw: 100 }])
})

t.test('a day that programs more energy than the milestones need is flagged with the totals', async t => {
  const flag = checkSlots(batch([20, 20, 20, 20]), 0, 4, needs)
  t.same(flag?.infeasibleSlots, [])
  t.same(flag?.day, { programmedKwh: 80, needsKwh: 60, availableKwh: 100 })
})

t.test('a 30-minute slot needs its floor in both quarter-hours it covers', async t => {
  const tight = { ...needs, ...availablePower([[START, 100], [START + Q, 40]]) }
  const flag = checkSlots(batch([30], 1800), 0, 1, tight)
  t.same(flag?.infeasibleSlots, [{ startUtc: '2026-11-21T23:00:00Z', floorKw: 60, availableKw: 40 }])
})

t.test('a slot the needs give no power for (after their last quarter-hour, or in a gap) is not checked against power', async t => {
  t.equal(checkSlots(batch([1, 1, 1, 1, 1, 26]), 0, 6, needs), undefined, 'the 6th quarter-hour is past the needs')
  const gap = { ...needs, ...availablePower([[START, 100], [START + 2 * Q, 100]]) }
  t.equal(checkSlots(batch([1, 26, 1]), 0, 3, gap), undefined, 'the 2nd quarter-hour has no power in the needs')
  t.same(checkSlots(batch([1, 1, 26]), 0, 3, gap)?.infeasibleSlots, [{ startUtc: '2026-11-21T23:30:00Z', floorKw: 104, availableKw: 100 }], 'the 3rd has')
})

t.test('a curtailment (0 kWh) is never infeasible', async t => {
  t.equal(checkSlots(batch([0, 0]), 0, 2, { ...needs, ...availablePower([[START, 0], [START + Q, 0]]) }), undefined)
})

/** The warn lines of flagged programmes, captured from a real pino logger. */
function warningsSetup (windowMs?: number) {
  const lines: Array<Record<string, unknown>> = []
  const log = pino({ level: 'info' }, { write: (l: string) => { lines.push(JSON.parse(l)) } }) as unknown as Logger
  return {
    lines,
    warnings: flaggedWarnings(log, windowMs),
    flag: found(batch([104, 0, 0, 0]), 0, 4, needs)!,
    programme: (id: string) => ({ instructionId: id, targetDate: '2026-11-22' }) as InstructionBatch,
  }
}

t.test('warn lines: the first flagged programme of a company in a minute in full, the rest of that minute summed up in one line', async t => {
  const { lines, warnings, flag, programme } = warningsSetup()
  const at = START - 86_400_000
  warnings.warn(programme('p1'), [{ siteId: 'S1', flag }], 'acme', at)
  warnings.warn(programme('p2'), [{ siteId: 'S1', flag }, { siteId: 'S2', flag }], 'acme', at + 1_000)
  warnings.warn(programme('p3'), [{ siteId: 'S1', flag }], 'acme', at + 2_000)
  warnings.warn(programme('q1'), [{ siteId: 'S9', flag }], 'globex', at + 3_000)
  warnings.warn(programme('p4'), [], 'acme', at + 4_000)
  t.match(lines, [
    { level: 40, companyId: 'acme', instructionId: 'p1', firstSite: 'S1', firstSlot: { startUtc: '2026-11-21T23:00:00Z', floorKw: 416, availableKw: 100 } },
    { level: 40, companyId: 'globex', instructionId: 'q1' },
  ], 'one full line per company; a programme with no flag logs nothing')
  t.equal(lines.length, 2)

  warnings.warn(programme('p5'), [{ siteId: 'S1', flag }], 'acme', at + 61_000)
  t.match(lines.slice(2), [
    { level: 40, companyId: 'acme', instructions: 2, sites: 3, lastInstructionId: 'p3', msg: /^2 more instruction\(s\) from this company/ },
    { level: 40, companyId: 'acme', instructionId: 'p5' },
  ], 'past the minute: the summary of the last one, then a full line')
  warnings.flush()
  t.equal(lines.length, 4, 'nothing more waited for acme; globex had nothing more')
  warnings.warn(programme('p6'), [{ siteId: 'S1', flag }], 'acme', at + 62_000)
  t.equal(lines.length, 5, 'after close, a flagged programme is logged in full')
})

t.test('warn lines: the summary still waiting is logged at close', async t => {
  const { lines, warnings, flag, programme } = warningsSetup()
  warnings.warn(programme('p1'), [{ siteId: 'S1', flag }], 'acme', START)
  warnings.warn(programme('p2'), [{ siteId: 'S1', flag }], 'acme', START + 1)
  warnings.flush()
  t.match(lines, [{ instructionId: 'p1' }, { instructions: 1, lastInstructionId: 'p2' }])
})

t.test('warn lines: the summary is logged when its minute ends, without waiting for another programme', async t => {
  const { lines, warnings, flag, programme } = warningsSetup(30)   // a 30 ms "minute"
  const at = Date.now()
  warnings.warn(programme('p1'), [{ siteId: 'S1', flag }], 'acme', at)
  warnings.warn(programme('p2'), [{ siteId: 'S1', flag }], 'acme', at + 1)
  t.equal(lines.length, 1)
  await new Promise(resolve => setTimeout(resolve, 100))
  t.match(lines, [{ instructionId: 'p1' }, { instructions: 1, lastInstructionId: 'p2', windowSeconds: 0.03 }])
})
