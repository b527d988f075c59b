import t from 'tap'
import { openMetering } from '../../src/store/metering.ts'
import { join } from 'node:path'
import { coverageOf } from '../../src/contract/paris-day.ts'
import type { MeterReading } from '../../src/host/contract.ts'
import { seedStore } from '../helpers/seed.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

// Meter values as the host reports them (EpxHandle.reportMetering): one record per site and
// Paris day, a later value of a slot replaces the earlier one, a reading that cannot be
// right is refused with its reason (never thrown), and days past retention go.

const SITE = 'PRM30000000000001'
const DAY = '2026-11-22'
const START = Date.parse(coverageOf(DAY).startUtc)
const iso = (ms: number) => new Date(ms).toISOString()
const reading = (slot: number, kwh: number, site = SITE, start = START): MeterReading =>
  ({ siteId: site, startUtc: iso(start + slot * 900_000), endUtc: iso(start + (slot + 1) * 900_000), kwh })

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)
  async function open (t: Parameters<typeof seedStore>[0], nowIso = '2026-11-23T10:00:00Z') {
    const s = seedStore(t, await openStore(join(t.testdir(), 'store')))
    let now = Date.parse(nowIso)
    const changed: string[] = []
    const metering = openMetering(s.store, { now: () => now, retentionDays: 90, onChanged: c => changed.push(...c.map(x => `${x.targetDate}/${x.siteId}`)) })
    return { ...s, metering, changed, setNow: (iso: string) => { now = Date.parse(iso) } }
  }

  t.test('values land in their slot of the Paris day; a later value of a slot replaces it; reports keep their order', async t => {
    const { metering, changed } = await open(t)
    const first = metering.report([reading(0, 1.25), reading(95, 3), reading(0, 1.5)])
    const second = metering.report([reading(0, 2)])
    t.same(await first, { accepted: 3, refusedCount: 0, refused: [] })
    await second
    const day = metering.get(DAY, SITE)!.kwh
    t.equal(day.length, 96)
    t.equal(day[0], 2, 'the later report wins')
    t.equal(day[95], 3)
    t.ok(Number.isNaN(day[1]!), 'a slot never reported has no value')
    t.same(metering.sitesOf(DAY), [SITE])
    t.same([...new Set(changed)], [`${DAY}/${SITE}`])
    t.equal(metering.get('2026-11-21', SITE), undefined)
  })

  t.test('each refused reading says why; the others are kept', async t => {
    const { metering } = await open(t, '2026-11-22T00:30:00Z')
    const report = await metering.report([
      reading(0, 1),
      { siteId: 'SITE-1', startUtc: iso(START), endUtc: iso(START + 900_000), kwh: 1 },
      { siteId: SITE, startUtc: iso(START + 60_000), endUtc: iso(START + 960_000), kwh: 1 },
      { siteId: SITE, startUtc: iso(START), endUtc: iso(START + 1_800_000), kwh: 1 },
      reading(1, -1),
      reading(2, Number.NaN),
      reading(6, 1),
      { siteId: SITE, startUtc: 'yesterday', endUtc: iso(START), kwh: 1 },
      reading(0, 1, SITE, Date.parse(coverageOf('2026-08-01').startUtc)),
      null as unknown as MeterReading,
    ])
    t.equal(report.accepted, 1)
    t.equal(report.refusedCount, 9)
    t.same(report.refused.map(r => r.index), [1, 2, 3, 4, 5, 6, 7, 8, 9])
    t.match(report.refused.map(r => r.reason), [
      /PRM followed by 14 digits/, /one quarter-hour/, /one quarter-hour/, /finite number ≥ 0/, /finite number ≥ 0/,
      /has not closed yet/, /ISO 8601 UTC/, /past the retention/, /an object/,
    ])
  })

  t.test('a DST day holds 92 or 100 slots, each where its UTC start falls', async t => {
    for (const [date, slots] of [['2027-03-28', 92], ['2027-10-31', 100]] as const) {
      const { metering, setNow } = await open(t)
      setNow(coverageOf(date).endUtc)
      const start = Date.parse(coverageOf(date).startUtc)
      await metering.report([reading(0, 1, SITE, start), reading(slots - 1, 2, SITE, start)])
      const day = metering.get(date, SITE)!.kwh
      t.equal(day.length, slots, date)
      t.equal(day[0], 1)
      t.equal(day[slots - 1], 2)
    }
  })

  t.test('a big report is taken in chunks, durable when it resolves; retention removes old days', async t => {
    const { metering, store, setNow } = await open(t)
    const sites = Array.from({ length: 200 }, (_, i) => 'PRM' + String(30_000_000_000_000 + i))
    const readings = sites.flatMap(site => Array.from({ length: 96 }, (_, j) => reading(j, j / 10, site)))
    // Another handle on the same files, as the API door's thread opens it, reads them. Opened
    // first: on this one thread, a handle opened while a replica applies its change feed could
    // wait for that write for ever (the door's thread is another thread).
    const other = await openStore(store.path, { openInThisProcess: true })
    t.teardown(() => other.close())
    const seenByOther = openMetering(other, { now: () => Date.now(), retentionDays: 90 })
    t.equal(seenByOther.get(DAY, sites[199]!), undefined, 'nothing yet')
    const report = await metering.report(readings)
    t.equal(report.accepted, 200 * 96)
    // This thread read through `other` before the commit, and lmdb-js may keep that snapshot
    // for the turn (Store.latest): as the door's thread, told of a write, it asks for the latest.
    other.latest()
    t.equal(seenByOther.get(DAY, sites[199]!)!.kwh[95], 9.5, 'the other handle reads what was written')
    setNow('2027-03-01T12:00:00Z')
    t.equal(await metering.prune('2026-12-01'), 200)
    t.equal(metering.get(DAY, sites[0]!), undefined)
  })

  t.test('the host may reuse its array once the call returns: the readings were taken when it was made', async t => {
    const { metering } = await open(t)
    const readings = Array.from({ length: 96 }, (_, j) => reading(j, 1 + j / 100))
    const pending = metering.report(readings)
    readings.length = 0
    readings.push(reading(0, 99))
    t.same(await pending, { accepted: 96, refusedCount: 0, refused: [] })
    t.equal(metering.get(DAY, SITE)!.kwh[95], 1.95)
    t.equal(metering.get(DAY, SITE)!.kwh[0], 1)
    await t.rejects(metering.report('PRM30000000000001' as unknown as MeterReading[]), { name: 'TypeError', message: /an array of readings/ })
  })

  t.test('a whole day of many sites leaves the event loop turning while it is checked and written', async t => {
    const { metering } = await open(t)
    const sites = Array.from({ length: 2000 }, (_, i) => 'PRM' + String(30_000_000_000_000 + i))
    const readings: MeterReading[] = []
    for (let j = 0; j < 96; j++) for (const site of sites) readings.push(reading(j, 2, site))
    let turns = 0
    let turning = true
    const tick = () => { turns++; if (turning) setImmediate(tick) }
    setImmediate(tick)
    const report = await metering.report(readings)
    turning = false
    t.equal(report.accepted, 2000 * 96)
    // 192,000 readings, then 16 batches of site-days, each after a turn of its own.
    t.ok(turns >= 16, `the loop turned ${turns} times meanwhile`)
    t.equal(metering.get(DAY, sites[1999]!)!.kwh[95], 2)
  })

  t.test('close() lets the reports already called finish durably, and refuses later ones (NO_STORE)', async t => {
    const { metering, store } = await open(t)
    const sites = Array.from({ length: 300 }, (_, i) => 'PRM' + String(30_000_000_000_000 + i))
    const first = metering.report(sites.flatMap(site => Array.from({ length: 96 }, (_, j) => reading(j, 3, site))))
    const second = metering.report([reading(0, 4, sites[299])])
    const closing = metering.close()
    await t.rejects(metering.report([reading(1, 1)]), { code: 'NO_STORE' })
    await closing
    t.equal((await first).accepted, 300 * 96, 'the report in flight when close() was called completed')
    t.equal((await second).accepted, 1, 'and the one queued behind it')
    // Read back as a restart would, after the store is closed: a second handle opened while a
    // replica's change feed may still be applying a write could wait on that write for ever.
    await store.close()
    const reopened = await openStore(store.path, { openInThisProcess: true })
    t.teardown(() => reopened.close())
    const seen = openMetering(reopened, { now: () => Date.now(), retentionDays: 90 })
    t.equal(seen.sitesOf(DAY).length, 300, 'every site-day is on disk')
    t.equal(seen.get(DAY, sites[299]!)!.kwh[0], 4)
    t.equal(seen.get(DAY, sites[0]!)!.kwh[95], 3)
  })

  t.test('unchanged(): true while the stored day is the one given, false once a slot changes', async t => {
    const { metering } = await open(t)
    t.ok(metering.unchanged(DAY, SITE, undefined), 'nothing stored, nothing held')
    await metering.report([reading(0, 1)])
    const held = metering.get(DAY, SITE)!.kwh
    t.ok(metering.unchanged(DAY, SITE, held))
    t.notOk(metering.unchanged(DAY, SITE, undefined))
    await metering.report([reading(0, 1)])
    t.ok(metering.unchanged(DAY, SITE, held), 'the same value again changes nothing')
    await metering.report([reading(40, 0.5)])
    t.notOk(metering.unchanged(DAY, SITE, held), 'a late value of another slot')
  })
})
