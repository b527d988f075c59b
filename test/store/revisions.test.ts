import { join } from 'node:path'
import t, { type Test } from 'tap'
import { etagOf, nextEmittedAtMs, openRevisions } from '../../src/store/revisions.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

const SITE = 'PRM00000000000001'
const DAY = '2026-11-22'
const T0 = Date.parse('2026-11-21T07:00:00.000Z')

const draft = (siteId = SITE, targetDate = DAY) => ({
  siteId, targetDate, render: (emittedAt: string) => JSON.stringify({ emitted_at: emittedAt, siteId, targetDate }),
})

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)
  async function setup (t: Test, retentionDays = 90) {
    const store = await openStore(join(t.testdir(), 'store'))
    t.teardown(() => store.close())
    return { store, revisions: openRevisions(store, { retentionDays }) }
  }

  t.test('a first revision is emitted at the clock time', async t => {
    const { revisions } = await setup(t)
    const [meta] = await revisions.publish([draft()], T0)
    t.equal(meta!.emittedAt, '2026-11-21T07:00:00Z')
    t.equal(meta!.lastModified, 'Sat, 21 Nov 2026 07:00:00 GMT')
    t.match(meta!.etag, /^W\/"[A-Za-z0-9_-]{27}"$/)
    const bytes = revisions.bytesOf(meta!)!
    t.equal(bytes.toString(), JSON.stringify({ emitted_at: '2026-11-21T07:00:00Z', siteId: SITE, targetDate: DAY }))
    t.equal(meta!.etag, etagOf(bytes), 'the ETag is derived from the stored bytes')
    t.same(revisions.latest(SITE, DAY), meta)
  })

  t.test('documents published together (one encoding buffer, reused by the next batch) each keep their own bytes and ETag', async t => {
    const { revisions } = await setup(t)
    const sized = (siteId: string, n: number) => ({ siteId, targetDate: DAY, render: (e: string) => JSON.stringify({ e, siteId, pad: 'é'.repeat(n) }) })
    const first = await revisions.publish([sized('PRM00000000000001', 5000), sized('PRM00000000000002', 10), sized('PRM00000000000003', 70000)], T0)
    const second = await revisions.publish([sized('PRM00000000000004', 3)], T0)
    for (const meta of [...first, ...second]) {
      const bytes = revisions.bytesOf(meta)!
      const doc = JSON.parse(bytes.toString('utf8'))
      t.equal(doc.siteId, meta.siteId, `${meta.siteId}: its own document`)
      t.equal(bytes.length, meta.size)
      t.equal(meta.etag, etagOf(bytes))
    }
    t.equal(JSON.parse(revisions.bytesOf(first[2]!)!.toString()).pad.length, 70000, 'multi-byte text is encoded whole')
  })

  t.test('a republication in the same millisecond gets a strictly later emitted_at (and Last-Modified)', async t => {
    const { revisions } = await setup(t)
    const [a] = await revisions.publish([draft()], T0 + 250)
    const [b] = await revisions.publish([draft()], T0 + 250)
    t.ok(b!.emittedAtMs > a!.emittedAtMs)
    t.ok(Date.parse(b!.lastModified) > Date.parse(a!.lastModified), 'Last-Modified (1 s resolution) moves too')
    t.not(b!.etag, a!.etag)
    t.equal(revisions.latest(SITE, DAY)!.emittedAt, b!.emittedAt)
  })

  t.test('a republication after the clock stepped back still gets a later emitted_at', async t => {
    const { revisions } = await setup(t)
    const [a] = await revisions.publish([draft()], T0)
    const [b] = await revisions.publish([draft()], T0 - 3_600_000)
    t.ok(b!.emittedAtMs > a!.emittedAtMs)
    t.equal(revisions.latest(SITE, DAY)!.etag, b!.etag)
    t.same(revisions.list(SITE, DAY).map(r => r.emittedAt), [a!.emittedAt, b!.emittedAt], 'both kept, oldest first')
  })

  t.test('emission times follow the clock when it moves forward', async t => {
    t.equal(nextEmittedAtMs(undefined, T0), T0)
    t.equal(nextEmittedAtMs(T0, T0 + 60_000), T0 + 60_000)
    t.equal(nextEmittedAtMs(T0 + 10, T0 + 10), T0 + 1000)
    t.equal(nextEmittedAtMs(T0 + 999, T0 - 5), T0 + 1000)
  })

  t.test('pairs are independent: other sites and days keep their own latest', async t => {
    const { revisions } = await setup(t)
    await revisions.publish([draft(SITE, DAY), draft('PRM00000000000002', DAY), draft(SITE, '2026-11-23')], T0)
    t.equal(revisions.list(SITE, DAY).length, 1)
    t.equal(revisions.list(SITE, '2026-11-23').length, 1)
    t.equal(revisions.latest('PRM00000000000002', DAY)!.emittedAtMs, T0)
    t.equal(revisions.latest('PRM00000000000003', DAY), undefined)
  })

  t.test('a reader that cached a latest revision (or its absence) sees another writer\'s publication and pruning at once', async t => {
    // Two handles on one store, each with its own cache: as the service and the CLI, two processes.
    const { store, revisions: service } = await setup(t, 90)
    const cli = openRevisions(store, { retentionDays: 90 })
    t.equal(service.latest(SITE, DAY), undefined, 'nothing published yet (and remembered so)')
    const [first] = await cli.publish([draft()], T0)
    t.equal(service.latest(SITE, DAY)?.etag, first!.etag, 'a first publication shows')
    const [second] = await cli.publish([draft()], T0 + 1000)
    t.equal(service.latest(SITE, DAY)?.etag, second!.etag, 'a republication shows')
    await cli.prune(T0 + 200 * 86_400_000)
    t.equal(service.latest(SITE, DAY), undefined, 'a pair pruned by the other writer is gone')
  })

  t.test('retention removes revisions emitted before the window and keeps the rest', async t => {
    const { revisions } = await setup(t, 90)
    const day = 86_400_000
    const [old] = await revisions.publish([draft()], T0)
    const [recent] = await revisions.publish([draft()], T0 + 10 * day)
    await revisions.publish([draft('PRM00000000000002', '2026-08-01')], T0 - day)
    t.equal(await revisions.prune(T0 + 90 * day), 1, 'the one from T0 - 1 day')
    t.equal(await revisions.prune(T0 + 90 * day + 1), 1, 'the one from T0, now just out of the window')
    t.same(revisions.list(SITE, DAY).map(r => r.emittedAt), [recent!.emittedAt])
    t.equal(revisions.bytesOf(old!), undefined, 'its bytes are gone too')
    t.equal(revisions.latest(SITE, DAY)!.etag, recent!.etag)
    t.equal(revisions.latest('PRM00000000000002', '2026-08-01'), undefined, 'a pair whose last revision expired is unpublished')
  })

  t.test('retention works through many revisions in several transactions', async t => {
    const { revisions } = await setup(t, 1)
    const drafts = Array.from({ length: 1200 }, (_, i) => draft(`PRM${String(i).padStart(14, '0')}`))
    await revisions.publish(drafts, T0)
    t.equal(await revisions.prune(T0 + 2 * 86_400_000), 1200)
    t.equal(revisions.latest('PRM00000000000007', DAY), undefined)
  })

  t.test('a failed write publishes nothing of the batch and answers NO_STORE', async t => {
    const { store, revisions } = await setup(t)
    store.faults.failWriteAfter = 1
    await t.rejects(revisions.publish([draft(SITE), draft('PRM00000000000002')], T0), { code: 'NO_STORE' })
    t.equal(revisions.latest(SITE, DAY), undefined)
    store.faults.unavailable = true
    t.throws(() => revisions.latest(SITE, DAY), { code: 'NO_STORE' })
  })
})
