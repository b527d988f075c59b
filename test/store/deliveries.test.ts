import t from 'tap'
import { startEpx } from '../helpers/epx.ts'
import { epx as cli, initializedDataDir } from '../helpers/cli.ts'
import { siteId } from '../helpers/programme.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { openDeliveries } from '../../src/store/deliveries.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

const DAY = '2026-11-22'

t.test('GET 200 and 304 leave receipts that survive a restart; epx deliveries counts latest, stale and never', async t => {
  const dir = await initializedDataDir(t)
  const epx = await startEpx(t, { dataDir: dir, sites: 3 })
  const { cert } = await epx.addCompany('acme')
  await epx.addCompany('beta', { perimeter: [siteId(3)] })
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  await epx.handle.publish({ targetDate: DAY })
  const get = (n: number, headers?: Record<string, string>) =>
    epx.request({ path: OUTBOUND_PATH, query: { site_id: siteId(n), target_date: DAY }, cert, token: secret, headers })

  const first = await get(1)
  t.equal(first.status, 200)
  const second = await get(2)
  t.equal(second.status, 200)
  const confirmed = await get(2, { 'if-none-match': second.headers.etag! })
  t.equal(confirmed.status, 304)
  t.equal((await epx.request({ method: 'HEAD', path: OUTBOUND_PATH, query: { site_id: siteId(3), target_date: DAY }, cert, token: secret })).status, 200)

  // Site 1 is republished after acme fetched it: acme now holds a stale revision.
  epx.clock.advance(5_000)
  await epx.handle.publish({ targetDate: DAY, siteIds: [siteId(1)] })

  await epx.restart()   // close() flushes what is in memory
  const receipts = openDeliveries(epx.store).list(DAY)
  t.same(receipts.map(r => [r.companyId, r.siteId, r.status]).sort(), [['acme', siteId(1), 200], ['acme', siteId(2), 304]],
    'one receipt per (company, site, day), the last exchange kept; a HEAD is no delivery')

  const table = await cli(dir, 'deliveries', '--date', DAY)
  t.equal(table.code, 0, table.err)
  t.match(table.out, /COMPANY\s+PUBLISHED\s+LATEST\s+STALE\s+NEVER/)
  t.match(table.out, /acme\s+3\s+1\s+1\s+1/)
  t.match(table.out, /beta\s+1\s+0\s+0\s+1/, 'beta\'s perimeter is site 3 alone')
  const [acme] = JSON.parse((await cli(dir, 'deliveries', '--date', DAY, '--company', 'acme', '--json')).out)
  t.same(acme.latest.map((s: any) => [s.siteId, s.status]), [[siteId(2), 304]])
  t.equal(acme.stale[0].siteId, siteId(1))
  t.ok(acme.stale[0].heldEmittedAt < acme.stale[0].latestEmittedAt)
  t.same(acme.never, [siteId(3)])
  const unknown = await cli(dir, 'deliveries', '--date', DAY, '--company', 'nobody')
  t.equal(unknown.code, 1)
  t.match(unknown.err, /no company 'nobody'/)
})

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)

  t.test('receipts recorded in memory are written by flush(), in one write, and only once', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const deliveries = openDeliveries(store)
    deliveries.record('acme', siteId(1), DAY, 1000, 200, 5000)
    deliveries.record('acme', siteId(1), DAY, 2000, 304, 6000)
    t.same(deliveries.list(DAY).map(r => r.emittedAtMs), [2000], 'the last exchange wins, before a flush too')
    await deliveries.flush()
    deliveries.record('acme', siteId(2), DAY, 2000, 200, 7000)   // after the last flush: a crash now loses it
    const reopened = openDeliveries(store)   // what a restart reads
    t.same(reopened.list(DAY).map(r => [r.siteId, r.emittedAtMs, r.atMs, r.status]), [[siteId(1), 2000, 6000, 304]])
    t.equal(await reopened.prune('2026-11-23'), 1, 'retention removes the days before the cutoff')
    t.same(reopened.list(DAY), [])
  })

  t.test('a failed flush keeps the receipts for the next one', async t => {
    const store = await openStore(t.testdir(), { faults: { failWriteAfter: 0 } })
    t.teardown(() => store.close())
    let failures = 0
    const deliveries = openDeliveries(store, { onFlushError: () => { failures++ } })
    deliveries.record('acme', siteId(1), DAY, 1000, 200, 5000)
    await deliveries.flush()
    t.equal(failures, 1)
    await deliveries.close()
    t.same(openDeliveries(store).list(DAY).map(r => r.siteId), [siteId(1)], 'written by the next flush')
  })
})
