import t, { type Test as Tap } from 'tap'
import type { Store } from '../../src/store/open-store.ts'
import { eventId, EVENTS_DB, openEvents, type EventDraft } from '../../src/store/events.ts'
import { openEventBell } from '../../src/store/event-bell.ts'
import { announceEvents } from '../../src/store/events.ts'
import { openRevisions, type RevisionDraft } from '../../src/store/revisions.ts'
import { openCompanies, type CompanyRecord } from '../../src/store/companies.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openMetering } from '../../src/store/metering.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import type { InstructionBatch } from '../../src/contract/instruction.ts'
import { coverageOf } from '../../src/contract/paris-day.ts'
import { programme, siteId } from '../helpers/programme.ts'
import { storeKinds, storesOf, twoStores } from '../helpers/store-kinds.ts'
import { sized } from '../helpers/long.ts'

// DECISIONS.md "Events for BSPs": each company's events, written in the write of the change
// they announce, ids strictly increasing per company, kept events.retentionDays.

const P1 = siteId(1)
const P2 = siteId(2)
const P3 = siteId(3)
const DAY = '2026-11-22'
const T0 = Date.parse('2026-11-21T08:00:00Z')
const check = createProgrammeCheck({ maxSites: 5000, requireContiguous: false })

const company = (id: string, perimeter: CompanyRecord['perimeter']): CompanyRecord =>
  ({ id, name: id, status: 'active', certSubject: `CN=${id},O=${id}`, perimeter, createdAt: '2026-11-01T00:00:00Z' })

const draft = (site: string, targetDate = DAY): RevisionDraft =>
  ({ siteId: site, targetDate, render: at => JSON.stringify({ site_id: site, target_date: targetDate, emitted_at: at }) })

/** A programme of `companyId` for DAY, received at `receivedAt`, as the door's check makes it. */
function batchOf (companyId: string, emittedAt: string, sites: readonly string[], receivedAt = '2026-11-21T12:30:00Z'): InstructionBatch {
  const r = check(Buffer.from(JSON.stringify(programme({ slots: 4, sites, emittedAt }))), {
    perimeter: 'all', provenance: { receivedAt, companyId, tokenId: 'tok', certFingerprint256: 'F' },
  })
  if (!r.ok) throw new Error(JSON.stringify(r.details))
  return r.batch
}

/** Every event of a company, parsed, read page after page. */
function all (store: Store, companyId: string, limit = 100): any[] {
  const events = openEvents(store)
  const out: any[] = []
  let after: number | undefined
  for (;;) {
    const page = events.page(companyId, after, limit)
    if (page.kind !== 'page') throw new Error('expired')
    out.push(...page.events.map(e => JSON.parse(e)))
    if (page.events.length < limit) return out
    after = Number(page.next)
  }
}

for (const kind of storeKinds) t.test(kind, async t => {
  const stores = storesOf(t, kind)

  async function open (t: Tap, dir = t.testdir()): Promise<Store> {
    const store = await stores.openStore(dir)
    t.teardown(() => store.close())
    return store
  }
  async function withCompanies (t: Tap, store: Store): Promise<void> {
    const companies = openCompanies(store, { now: () => T0 })
    await companies.add(company('acme', [P1, P2]))
    await companies.add(company('bolt', [P3]))
  }

  t.test('a publication tells each company the sites of its perimeter, one event each, and no other company\'s', async t => {
    const store = await open(t)
    await withCompanies(t, store)
    const revisions = openRevisions(store, { retentionDays: 90 })
    t.teardown(() => revisions.close())
    const metas = await revisions.publish([draft(P1), draft(P2), draft(P3), draft(siteId(4))], T0)
    const acme = all(store, 'acme').filter(e => e.type === 'besoins_agreges.publie')
    t.same(acme.map(e => Object.keys(e)), [0, 1].map(() => ['id', 'type', 'occurred_at', 'site_id', 'target_date', 'etag', 'emitted_at']))
    t.same(acme.map(e => [e.site_id, e.target_date, e.etag, e.emitted_at]), metas.slice(0, 2).map(m => [m.siteId, m.targetDate, m.etag, m.emittedAt]))
    t.equal(acme[0].occurred_at, '2026-11-21T08:00:00.000Z')
    const bolt = all(store, 'bolt').filter(e => e.type === 'besoins_agreges.publie')
    t.same(bolt.map(e => e.site_id), [P3], 'bolt is told its one site, never acme\'s, and nobody the site outside every perimeter')
    // Ids: per company, strictly increasing, opaque strings that order as strings too.
    for (const events of [all(store, 'acme'), all(store, 'bolt')]) {
      t.ok(events.every((e, i) => typeof e.id === 'string' && (i === 0 || (Number(e.id) > Number(events[i - 1].id) && e.id > events[i - 1].id))))
    }
    t.equal(all(store, 'nobody').length, 0)
  })

  t.test('a write that fails leaves no event; the one acknowledged has its event', async t => {
    const store = await open(t)
    await withCompanies(t, store)
    const revisions = openRevisions(store, { retentionDays: 90 })
    t.teardown(() => revisions.close())
    const before = all(store, 'acme').length
    store.faults.failWriteAfter = 3   // inside the commit, after some of its puts
    await t.rejects(revisions.publish([draft(P1), draft(P2)], T0), { code: 'NO_STORE' })
    store.faults.failWriteAfter = undefined
    t.equal(all(store, 'acme').length, before, 'nothing of the failed publication, its events included')
    await revisions.publish([draft(P1)], T0 + 1000)
    t.same(all(store, 'acme').slice(before).map(e => [e.type, e.site_id]), [['besoins_agreges.publie', P1]])
  })

  t.test('an instruction\'s status changes: queued, superseded, late, applied with its cycle, withdrawn', async t => {
    const store = await open(t)
    await withCompanies(t, store)
    const instructions = openInstructions(store)
    const first = batchOf('acme', '2026-11-21T10:00:00Z', [P1, P2])
    await instructions.save(first, '2026-11-21T10:00:01Z', 'queued')
    const second = batchOf('acme', '2026-11-21T11:00:00Z', [P1])
    await instructions.save(second, '2026-11-21T11:00:01Z', 'queued')
    // Received once every slot had begun: late, never in force.
    const late = batchOf('acme', '2026-11-22T09:00:00Z', [P2], '2026-11-23T00:00:00Z')
    await instructions.save(late, '2026-11-23T00:00:00Z', 'queued')
    await instructions.markApplied([{ instructionId: second.instructionId, siteId: P1 }], 42, '2026-11-21T11:05:00Z')
    await instructions.markApplied([{ instructionId: second.instructionId, siteId: P1 }], 43, '2026-11-21T11:06:00Z')
    // P2 leaves acme's perimeter: its instructions of the days not over are withdrawn.
    await openCompanies(store, { now: () => Date.parse('2026-11-21T12:00:00Z') }).update('acme', c => ({ ...c, perimeter: [P1] }))
    const statuses = all(store, 'acme').filter(e => e.type === 'instruction.statut')
      .map(e => [e.instruction_id.slice(-16), e.site_id, e.target_date, e.status, e.cycle, e.reason])
    t.same(statuses, [
      ['20261121T100000Z', P1, DAY, 'queued', undefined, undefined],
      ['20261121T100000Z', P2, DAY, 'queued', undefined, undefined],
      ['20261121T110000Z', P1, DAY, 'queued', undefined, undefined],
      ['20261121T100000Z', P1, DAY, 'superseded', undefined, undefined],
      ['20261122T090000Z', P2, DAY, 'late', undefined, undefined],
      ['20261121T110000Z', P1, DAY, 'applied', 42, undefined],
      ['20261121T100000Z', P2, DAY, 'withdrawn', undefined, 'site-left-perimeter'],
      ['20261122T090000Z', P2, DAY, 'withdrawn', undefined, 'site-left-perimeter'],
    ], 'each change once, in the order written; a cycle told again of an applied one changes nothing')
    t.equal(all(store, 'bolt').filter(e => e.type === 'instruction.statut').length, 0, 'never another company\'s instructions')
  })

  t.test('a perimeter that changes tells its company the sites added and removed', async t => {
    const store = await open(t)
    const companies = openCompanies(store, { now: () => T0 })
    await companies.add(company('acme', [P1, P2]))
    await companies.update('acme', c => ({ ...c, perimeter: [P2, P3] }))
    await companies.update('acme', c => ({ ...c, status: 'suspended' }))
    await companies.update('acme', c => ({ ...c, status: 'active', perimeter: 'all' }))
    await companies.update('acme', c => ({ ...c, perimeter: [P1] }))
    const changes = all(store, 'acme').filter(e => e.type === 'perimetre.modifie').map(e => [e.sites_added, e.sites_removed, e.all_sites])
    t.same(changes, [
      [[P1, P2], [], false],
      [[P3], [P1], false],
      [[], [], true],
      [[P1], [], false],
    ], 'a suspension is not a change of perimeter; from every site, the list is the whole perimeter')
  })

  t.test('meter values: one realise.modifie per site and day every 5 minutes, the one owed told when its time comes', async t => {
    const store = await open(t)
    await withCompanies(t, store)
    let now = Date.parse('2026-11-22T12:00:00Z')
    const metering = openMetering(store, { now: () => now, retentionDays: 30 })
    t.teardown(() => metering.close())
    const start = Date.parse(coverageOf(DAY).startUtc)
    const reading = (site: string, slot: number) => ({ siteId: site, startUtc: new Date(start + slot * 900_000).toISOString(), endUtc: new Date(start + (slot + 1) * 900_000).toISOString(), kwh: 1 })
    const realise = (c: string) => all(store, c).filter(e => e.type === 'realise.modifie').map(e => [e.site_id, e.target_date, e.occurred_at])
    await metering.report([reading(P1, 0), reading(P3, 0)])
    await metering.report([reading(P1, 1)])
    now += 60_000
    await metering.report([reading(P1, 2)])
    t.same(realise('acme'), [[P1, DAY, '2026-11-22T12:00:00.000Z']], 'within 5 minutes: one event, the rest owed')
    t.same(realise('bolt'), [[P3, DAY, '2026-11-22T12:00:00.000Z']])
    const events = openEvents(store)
    t.equal(events.nextOwedMs(), Date.parse('2026-11-22T12:05:00Z'))
    now = Date.parse('2026-11-22T12:05:00Z')
    await events.flushOwed(now)
    t.same(realise('acme').slice(1), [[P1, DAY, '2026-11-22T12:05:00.000Z']], 'the owed one, once')
    t.equal(events.nextOwedMs(), undefined)
    await metering.report([reading(P1, 3)])
    t.equal(realise('acme').length, 2, 'told at 12:05: the next is owed again')
  })

  t.test('retention: events past events.retentionDays go; a cursor before them expired, with the oldest id kept', async t => {
    const store = await open(t)
    const events = openEvents(store, { retentionDays: 7 })
    const write = (atMs: number, n: number) => store.writeDurable(() => events.appendSync(
      Array.from({ length: n }, (_, i): EventDraft => ({ companyId: 'acme', type: 'realise.modifie', fields: `"site_id":"${P1}","n":${i}` })), atMs))
    await write(T0, 5)
    await write(T0 + 3 * 86_400_000, 5)
    t.equal(await events.prune(T0 + 8 * 86_400_000), 5)
    t.same(events.page('acme', 2, 10), { kind: 'expired', oldest: eventId(6), resume: eventId(5) })
    const fromOldest = events.page('acme', undefined, 10)
    t.same(fromOldest.kind === 'page' && fromOldest.events.map(e => JSON.parse(e).id), [6, 7, 8, 9, 10].map(eventId))
    const resumed = events.page('acme', 5, 10)
    t.equal(resumed.kind === 'page' && resumed.events.length, 5, 'the cursor the 410 gives reads every event kept')
    t.equal(await events.prune(T0 + 11 * 86_400_000), 5)
    t.same(events.page('acme', 0, 10), { kind: 'expired', oldest: undefined, resume: eventId(10) }, 'none kept: the cursor to go on from')
    t.same(events.page('acme', 10, 10), { kind: 'page', events: [], next: eventId(10) })
    await write(T0 + 11 * 86_400_000, 1)
    t.same(events.page('acme', 10, 10).kind === 'page' && JSON.parse((events.page('acme', 10, 10) as any).events[0]).id, eventId(11), 'ids go on after retention')
  })

  t.test('the next event of some types after a cursor (a webhook endpoint\'s next delivery): the first wanted, else how far to read past; expired before retention', async t => {
    const store = await open(t)
    const events = openEvents(store, { retentionDays: 7 })
    const write = (atMs: number, type: EventDraft['type']) => store.writeDurable(() => events.appendSync([{ companyId: 'acme', type, fields: '"n":0' }], atMs))
    await write(T0, 'perimetre.modifie')
    await write(T0 + 1000, 'perimetre.modifie')
    await write(T0 + 2000, 'instruction.statut')
    const third = events.page('acme', 2, 1)
    t.same(events.nextOf('acme', 0, ['instruction.statut'], 100), { kind: 'event', seq: 3, atMs: T0 + 2000, json: third.kind === 'page' ? third.events[0] : '' }, 'the first wanted, past two it does not want, as the feed serves it')
    t.same(events.nextOf('acme', 0, ['instruction.statut'], 2), { kind: 'skip', seq: 2, atMs: T0 }, 'none wanted within the limit: the last read, the first one\'s time')
    t.same(events.nextOf('acme', 3, ['instruction.statut'], 100), { kind: 'none' })
    t.equal(events.firstDueMs('acme', 0, ['instruction.statut'], 100), T0 + 2000)
    await write(T0 + 8 * 86_400_000, 'instruction.statut')
    t.equal(await events.prune(T0 + 8 * 86_400_000), 3)
    t.same(events.nextOf('acme', 1, ['instruction.statut'], 100), { kind: 'expired', resume: 3 }, 'a cursor before what retention kept')
    t.equal(events.firstDueMs('acme', 1, ['instruction.statut'], 100), T0 + 8 * 86_400_000, 'what is due past an expired cursor: the oldest kept')
  })

  t.test('handles of one store writing in turn, a write rolled back, retention of every company: one run of ids each, none given twice', async t => {
    const store = await open(t)
    // The door's and the solver's modules each open their own handle: each one's last id is only a guess.
    const [a, b] = [openEvents(store, { retentionDays: 1 }), openEvents(store, { retentionDays: 1 })]
    const write = (events: typeof a, companyId: string, atMs = T0) =>
      store.writeDurable(() => events.appendSync([{ companyId, type: 'realise.modifie', fields: '"n":1' }, { companyId, type: 'realise.modifie', fields: '"n":2' }], atMs))
    await write(a, 'acme')
    await write(b, 'acme')
    await write(b, 'bolt')
    await write(a, 'acme')
    store.faults.failWriteAfter = 1   // after its first event's put
    await t.rejects(write(a, 'acme'), { code: 'NO_STORE' })
    store.faults.failWriteAfter = undefined
    await write(b, 'acme')
    await write(a, 'acme')
    t.same(all(store, 'acme').map(e => e.id), Array.from({ length: 10 }, (_, i) => eventId(i + 1)), 'acme: 1 to 10, whichever handle wrote, the rolled-back ids given again')
    t.same(all(store, 'bolt').map(e => e.id), [eventId(1), eventId(2)])
    t.equal(a.lastSeq('acme'), 10)
    t.equal(b.lastSeq('bolt'), 2)
    t.equal(await b.prune(T0 + 2 * 86_400_000), 12, 'every company\'s expired events, acme\'s and bolt\'s')
    t.equal(a.lastSeq('acme'), 10, 'every event gone: the last id given is still known')
    await write(a, 'acme', T0 + 2 * 86_400_000)
    await write(b, 'bolt', T0 + 2 * 86_400_000)
    t.same(all(store, 'acme').map(e => e.id), [eventId(11), eventId(12)])
    t.same(all(store, 'bolt').map(e => e.id), [eventId(3), eventId(4)])
  })

  t.test('ids go on across a restart, and the bell rings once a write with events is durable', async t => {
    const dir = t.testdir()
    const first = await stores.openStore(dir)
    const one = openEvents(first)
    await first.writeDurable(() => one.appendSync([{ companyId: 'acme', type: 'realise.modifie', fields: '"n":1' }], T0))
    await first.close()
    const store = await open(t, dir)
    const bell = openEventBell()
    announceEvents(store, { bell })
    const events = openEvents(store)
    const before = bell.count()
    const writing = store.writeDurable(() => {
      events.appendSync([{ companyId: 'acme', type: 'realise.modifie', fields: '"n":2' }], T0)
      t.equal(bell.count(), before, 'not before the write is durable')
    })
    await writing
    t.equal(bell.count(), before + 1)
    t.same(all(store, 'acme').map(e => e.id), [eventId(1), eventId(2)])
  })

  const MANY = sized(12_345, 150_000)
  t.test(`${MANY.toLocaleString('en')} events of one company read page after page: none skipped across the page boundaries and the powers of ten`, async t => {
    const store = await open(t)
    const events = openEvents(store)
    const PER_WRITE = 5000
    for (let from = 0; from < MANY; from += PER_WRITE) {
      const n = Math.min(PER_WRITE, MANY - from)
      await store.writeDurable(() => events.appendSync(Array.from({ length: n }, (_, i): EventDraft => ({ companyId: 'acme', type: 'realise.modifie', fields: `"n":${from + i + 1}` })), T0))
    }
    // A few of another company's between: they take none of acme's ids.
    await store.writeDurable(() => events.appendSync([{ companyId: 'bolt', type: 'realise.modifie', fields: '"n":1' }], T0))
    let after: number | undefined
    let expected = 1
    let pages = 0
    for (;;) {
      const page = events.page('acme', after, 1000)
      if (page.kind !== 'page') throw new Error('expired')
      for (const text of page.events) {
        const e = JSON.parse(text)
        if (e.id !== eventId(expected) || e.n !== expected) { t.fail(`after ${expected - 1}: ${e.id} (n ${e.n})`); return }
        expected++
      }
      pages++
      if (page.events.length === 0) break
      after = Number(page.next)
    }
    t.equal(expected - 1, MANY, `every event once, in order, over ${pages} pages`)
    t.equal(events.lastSeq('bolt'), 1)
  })

  if (kind === 'postgres') {
    /** Two instances on one database, each its own replica (they end equal to it: store-kinds.ts). */
    const twoInstances = (t: Tap) => twoStores(t, stores)

    t.test('two instances on one database give one company one sequence of ids, whoever writes', async t => {
      const { a, b } = await twoInstances(t)
      const ea = openEvents(a)
      const eb = openEvents(b)
      const writes: Array<Promise<void>> = []
      for (let i = 0; i < 40; i++) {
        const [store, events] = i % 2 ? [b, eb] : [a, ea]
        writes.push(store.writeDurable(() => events.appendSync([{ companyId: 'acme', type: 'realise.modifie', fields: `"i":${i}` }], T0)))
      }
      await Promise.all(writes)
      for (const store of [a, b]) {
        // B's replica has what A wrote once the feed brought it: read when it has all 40.
        const deadline = Date.now() + 30_000
        while (openEvents(store).lastSeq('acme') < 40 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 20))
        const ids = all(store, 'acme').map(e => e.id)
        t.same(ids, Array.from({ length: 40 }, (_, i) => eventId(i + 1)), `${store === a ? 'a' : 'b'} reads ids 1 to 40, once each`)
      }
    })

    t.test('another instance\'s events reach this one through its change feed, named as events: what rings the bell here (plugin.ts)', async t => {
      const { a, b } = await twoInstances(t)
      const bell = openEventBell()
      const heard = b.onApplied(changes => { if (changes.has(EVENTS_DB)) bell.ring() })
      t.teardown(heard)
      const before = bell.count()
      const rung = bell.wait(30_000, before).rung
      await a.writeDurable(() => openEvents(a).appendSync([{ companyId: 'acme', type: 'realise.modifie', fields: '"n":1' }], T0))
      await rung
      t.ok(bell.count() > before, 'rung by the feed, not by the wait\'s end')
      t.equal(openEvents(b).lastSeq('acme'), 1, 'and the event is in this replica when it rings')
    })
  }
})
