import t from 'tap'
import { openStore } from '../../src/store/open-store.ts'
import { openRevisions } from '../../src/store/revisions.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openDeliveries } from '../../src/store/deliveries.ts'
import { openTokens } from '../../src/store/tokens.ts'
import { ManualClock } from '../../src/host/reference-host.ts'
import { metricSources } from '../../src/metrics/sources.ts'

t.test("tomorrow's newest publication is read again only when the store generation moved", async t => {
  const store = openStore(t.testdir())
  const revisions = openRevisions(store, { retentionDays: 90 })
  t.teardown(async () => { revisions.close(); await store.close() })
  const clock = new ManualClock('2026-11-21T12:00:00Z')
  let reads = 0
  const counted = { latestOfDay: (day: string) => { reads++; return revisions.latestOfDay(day) } }
  const sources = metricSources({
    clock, generation: openTokens(store).generation, revisions: counted, instructions: openInstructions(store),
    deliveries: openDeliveries(store), expiries: () => [],
  })
  t.equal(sources.tomorrowPublishedMs(), undefined, 'nothing published for 2026-11-22')
  const draft = (siteId: string) => ({ siteId, targetDate: '2026-11-22', render: (at: string) => JSON.stringify({ at }) })
  const first = Date.parse('2026-11-21T07:00:00Z')
  await revisions.publish([draft('PRM30000000000001'), draft('PRM30000000000002')], first)
  t.equal(sources.tomorrowPublishedMs(), first)
  t.equal(sources.tomorrowPublishedMs(), first)
  t.equal(reads, 2, 'the second scrape read nothing: the generation did not move')
  await revisions.publish([draft('PRM30000000000002')], first + 60_000)
  t.equal(sources.tomorrowPublishedMs(), first + 60_000, 'a republication is seen at once')
  clock.set('2026-11-22T12:00:00Z')
  t.equal(sources.tomorrowPublishedMs(), undefined, 'a new day: tomorrow is 2026-11-23')
  t.equal(sources.tomorrowInstructions(), 0)
})
