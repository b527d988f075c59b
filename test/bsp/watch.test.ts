import t from 'tap'
import { join } from 'node:path'
import { startEpx } from '../helpers/epx.ts'
import { testPki } from '../helpers/certs.ts'
import { siteId } from '../helpers/programme.ts'
import { createBspClient } from '../../src/bsp/client.ts'
import { watch } from '../../src/bsp/watch.ts'
import type { RoundReport } from '../../src/bsp/pull.ts'

const DAY = '2026-11-22'

t.test('--watch: first round at 08:30 Paris the day before, then polite rounds that pick up each revision', async t => {
  const root = t.testdir()
  // 06:00 Paris on the publication day (UTC+1 in November).
  const epx = await startEpx(t, { now: '2026-11-21T05:00:00Z', sites: 2, dataDir: join(root, 'epx') })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const client = createBspClient({ url: epx.url, cert: cert.certPem, key: cert.keyPem, ca: testPki().serverCa.certPem, token: secret })
  t.teardown(() => client.close())

  const rounds: Array<{ at: string; counts: RoundReport['counts'] }> = []
  const slept: number[] = []
  const waits: string[] = []
  const world: Array<() => Promise<unknown>> = [
    async () => {},                                                                  // before round 1: nothing published
    async () => epx.handle.publish({ targetDate: DAY }),                             // before round 2: the 08:00 run, late
    async () => {},                                                                  // round 3: unchanged
    async () => epx.handle.publish({ targetDate: DAY, siteIds: [siteId(2)] }),       // round 4: a republication of one site
  ]
  await watch({
    client, sites: [siteId(1), siteId(2)], targetDate: DAY, dir: join(root, 'out'), rounds: 4, intervalSecs: 120,
    timing: {
      now: () => epx.clock.now(),
      sleep: async ms => { slept.push(ms); epx.clock.advance(ms); await world[slept.length - 1]?.() },
      random: () => 0,
    },
    onRound: r => rounds.push({ at: epx.clock.now().toISOString(), counts: r.counts }),
    onWait: (until, why) => waits.push(`${until.toISOString()} ${why}`),
  })
  t.same(rounds, [
    { at: '2026-11-21T07:30:00.000Z', counts: { fetched: 0, unchanged: 0, missing: 2, failed: 0 } },
    { at: '2026-11-21T07:35:00.000Z', counts: { fetched: 2, unchanged: 0, missing: 0, failed: 0 } },
    { at: '2026-11-21T07:37:00.000Z', counts: { fetched: 0, unchanged: 2, missing: 0, failed: 0 } },
    { at: '2026-11-21T07:39:00.000Z', counts: { fetched: 1, unchanged: 1, missing: 0, failed: 0 } },
  ], 'first round at 08:30 Paris; after a 404 no sooner than Retry-After (300 s), else every --interval')
  t.equal(slept.length, 4, 'no sleep after the last round')
  t.same(waits, [
    '2026-11-21T07:30:00.000Z the first round of 2026-11-22: 08:30 Europe/Paris the day before, after the 08:00 publication',
    '2026-11-21T07:35:00.000Z the next round, no sooner than the Retry-After of a site not published yet',
    '2026-11-21T07:37:00.000Z the next round',
    '2026-11-21T07:39:00.000Z the next round',
  ], 'each wait says until when, and for what: no silent hours before 08:30')
})

t.test('--watch stops when the target day is over, and starts at once when 08:30 has passed', async t => {
  const root = t.testdir()
  const epx = await startEpx(t, { now: '2026-11-22T22:50:00Z', dataDir: join(root, 'epx') })   // 23:50 Paris on the day
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const client = createBspClient({ url: epx.url, cert: cert.certPem, key: cert.keyPem, ca: testPki().serverCa.certPem, token: secret })
  t.teardown(() => client.close())
  const slept: number[] = []
  const waits: Date[] = []
  const reports = await watch({
    client, sites: [siteId(1)], targetDate: DAY, dir: join(root, 'out'),
    timing: { now: () => epx.clock.now(), sleep: async ms => { slept.push(ms); epx.clock.advance(ms) }, random: () => 0 },
    onWait: until => waits.push(until),
  })
  t.equal(reports.length, 2, 'rounds at 23:50 and 23:55 Paris, then the day is over')
  t.same(slept, [0, 300_000, 300_000])
  t.same(waits.map(d => d.toISOString()), ['2026-11-22T22:55:00.000Z'], 'no first wait to tell, and none past the day\'s end')
})
