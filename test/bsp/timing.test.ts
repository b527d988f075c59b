import t from 'tap'
import { backoffMs, endOfDay, firstAttemptAt, realTiming } from '../../src/bsp/timing.ts'

t.test('backoff doubles from 1 s up to a minute, never under Retry-After, with at most 20 % jitter', async t => {
  t.same([0, 1, 2, 3, 10].map(a => backoffMs(a, undefined, () => 0)), [1000, 2000, 4000, 8000, 60_000])
  t.equal(backoffMs(0, 5, () => 0), 5000, 'Retry-After: 5 wins over 1 s')
  t.equal(backoffMs(0, 300, () => 0.999), 359_940, 'a 404\'s 300 s, jittered upwards only')
  t.equal(backoffMs(0, undefined, () => 0.5), 1100)
})

t.test('the first attempt is 08:30 Paris the day before the target day, whatever the offset', async t => {
  t.equal(firstAttemptAt('2026-11-22', new Date('2026-11-21T05:00:00Z')).toISOString(), '2026-11-21T07:30:00.000Z', 'winter: UTC+1')
  t.equal(firstAttemptAt('2026-07-02', new Date('2026-07-01T00:00:00Z')).toISOString(), '2026-07-01T06:30:00.000Z', 'summer: UTC+2')
  t.equal(firstAttemptAt('2027-03-29', new Date('2027-03-28T00:00:00Z')).toISOString(), '2027-03-28T06:30:00.000Z', 'on the 23-hour day')
  const late = new Date('2026-11-21T09:00:00Z')
  t.equal(firstAttemptAt('2026-11-22', late), late, 'past 08:30: now')
  t.equal(endOfDay('2026-10-25').toISOString(), '2026-10-25T23:00:00.000Z', 'the 25-hour day ends at 00:00 Paris')
})

t.test('the real timing sleeps and reads the system clock', async t => {
  const before = Date.now()
  await realTiming.sleep(5)
  t.ok(realTiming.now().getTime() >= before)
  const r = realTiming.random()
  t.ok(r >= 0 && r < 1)
})
