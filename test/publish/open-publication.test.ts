import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Logger, SolverPort } from '../../src/host/contract.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openPublication } from '../../src/publish/open-publication.ts'

// Publication wired once: the plugin and `epx publish` open the same pair, a publisher
// writing the revisions the outbound door reads, from the `publish` configuration.

const prm = (i: number) => `PRM${String(i).padStart(14, '0')}`
const silent: Logger = { debug () {}, info () {}, warn () {}, error () {}, child: () => silent }
const solver: SolverPort = {
  async sites () { return [{ site_id: prm(1), site_name: 'one' }, { site_id: prm(2), site_name: 'two' }] },
  async needs (_, c) { return { milestones: [], availablePowerKw: new Array(c.slots).fill(7) } },
  enqueueNextCycle () {},
  onCycleApplied () { return () => {} },
}

function open (t: Test, emittedBy = 'epx') {
  const store = openStore(join(t.testdir(), 'store'))
  t.teardown(() => store.close())
  const publication = openPublication(store, { emittedBy, retentionDays: 90 }, {
    solver, log: silent, clock: { now: () => new Date('2026-11-21T07:00:00Z') },
  })
  t.teardown(() => publication.close())
  return publication
}

t.test('what the publisher publishes is in the revisions it comes with, emitted by the configured name', async t => {
  const publication = open(t, 'epx-acme')
  const report = await publication.publisher.publish({ targetDate: '2026-11-22' })
  t.same(report.published.map(p => p.siteId), [prm(1), prm(2)])
  const latest = publication.revisions.latest(prm(2), '2026-11-22')
  t.ok(latest, 'the revision is there to serve')
  t.match(JSON.parse(publication.revisions.bytesOf(latest!)!.toString()), { emitted_by: 'epx-acme' })
})

t.test('close() waits for the run in progress, then refuses new runs', async t => {
  const publication = open(t)
  const run = publication.publisher.publish({ targetDate: '2026-11-22' })
  await publication.close()
  t.equal((await run).published.length, 2, 'the run in progress finished')
  await t.rejects(publication.publisher.publish({ targetDate: '2026-11-23' }), { code: 'NO_STORE' })
})
