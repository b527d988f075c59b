import t from 'tap'
import { hourTicks } from '../../../src/console/chart/time-axis.ts'
import { parisDayMs } from '../../../src/contract/paris-day.ts'

const ticksOf = (day: string) => {
  const { startMs, endMs } = parisDayMs(day)
  return hourTicks(startMs, endMs)
}

t.test('an ordinary day has 24 hours labelled 00 to 23, then 24 at its end', async t => {
  const ticks = ticksOf('2026-11-22')
  t.equal(ticks.length, 25)
  t.same(ticks.map(x => x.label), [...Array.from({ length: 24 }, (_, h) => String(h).padStart(2, '0')), '24'])
  t.notOk(ticks.some(x => x.repeated || x.afterSkip))
})

t.test('the spring day (92 quarter-hours) skips 02: 01 is followed by 03, marked', async t => {
  const ticks = ticksOf('2027-03-28')
  t.equal(ticks.length, 24, '23 hours')
  t.same(ticks.slice(0, 4).map(x => x.label), ['00', '01', '03', '04'])
  t.same(ticks.filter(x => x.afterSkip).map(x => [x.label, new Date(x.ms).toISOString()]), [['03', '2027-03-28T01:00:00.000Z']])
  t.notOk(ticks.some(x => x.repeated))
})

t.test('the autumn day (100 quarter-hours) shows 02 twice, the second marked repeated', async t => {
  const ticks = ticksOf('2026-10-25')
  t.equal(ticks.length, 26, '25 hours')
  t.same(ticks.slice(0, 5).map(x => x.label), ['00', '01', '02', '02', '03'])
  t.same(ticks.filter(x => x.repeated).map(x => new Date(x.ms).toISOString()), ['2026-10-25T01:00:00.000Z'])
  t.notOk(ticks.some(x => x.afterSkip))
})
