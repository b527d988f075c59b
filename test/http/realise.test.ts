import t, { type Test as Tap } from 'tap'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { eventually } from '../helpers/eventually.ts'
import { INBOUND_PATH, programme, siteId, type ProgrammeOptions } from '../helpers/programme.ts'
import { REALISE_PATH } from '../../src/contract/paths.ts'
import { coverageOf } from '../../src/contract/paris-day.ts'
import type { MeterReading } from '../../src/host/contract.ts'
import { openCompanies } from '../../src/store/companies.ts'

// docs/http-api.md "Programme against delivery": GET realise?site_id=S&target_date=D, an
// extension under the contract's base path, through the front door (mTLS, real tokens, LMDB),
// from meter values the host reports (EpxHandle.reportMetering).

const DAY = '2026-11-22'
const DAY_START = Date.parse(coverageOf(DAY).startUtc)
const iso = (ms: number) => new Date(ms).toISOString()
const reading = (site: string, slot: number, kwh: number, start = DAY_START): MeterReading =>
  ({ siteId: site, startUtc: iso(start + slot * 900_000), endUtc: iso(start + (slot + 1) * 900_000), kwh })

async function company (epx: TestEpx, id: string, perimeter: 'all' | string[], scopes: Parameters<TestEpx['addToken']>[1] = ['inbound:programme-soutirage', 'outbound:realise']) {
  const { cert } = await epx.addCompany(id, { perimeter })
  const { secret } = await epx.addToken(id, scopes)
  const send = (o: ProgrammeOptions = {}) => epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme(o) })
  const realise = (query: Record<string, string>, headers: Record<string, string> = {}, method = 'GET') =>
    epx.request({ method, path: REALISE_PATH, query, cert, token: secret, headers })
  const status = (query: Record<string, string>) => epx.request({ method: 'GET', path: INBOUND_PATH, query, cert, token: secret })
  return { cert, secret, send, realise, status }
}

/** Five programmed slots, one for each verdict a meter value can give, then an unprogrammed one. */
const KWH = [10, 0, 5, 0, 3]
const METERED = [reading(siteId(1), 0, 10), reading(siteId(1), 1, 0.05), reading(siteId(1), 2, 4), reading(siteId(1), 3, 1), reading(siteId(1), 5, 2)]

async function day (t: Tap, inWorker: boolean) {
  const epx = await startEpx(t, { config: { api: { inWorker } } })
  const acme = await company(epx, 'acme', [siteId(1), siteId(2)])
  t.equal((await acme.send({ slots: KWH.length, kwh: j => KWH[j]! })).status, 202)
  epx.clock.set('2026-11-23T00:00:00Z')
  const report = await epx.handle.reportMetering(METERED)
  t.same(report, { accepted: 5, refusedCount: 0, refused: [] })
  return { epx, acme }
}

t.test('each verdict from known meter values; totals; 304 until a late correction changes the ETag', async t => {
  for (const inWorker of [false, true]) {
    const { epx, acme } = await day(t, inWorker)
    const res = await acme.realise({ site_id: siteId(1), target_date: DAY })
    t.equal(res.status, 200, res.text)
    t.equal(res.headers['cache-control'], 'private, no-cache')
    t.match(res.headers.etag, /^W\/"[A-Za-z0-9_-]+"$/)
    const body = res.json()
    t.same(Object.keys(body), ['site_id', 'target_date', 'instruction_id', 'creneaux', 'totaux'])
    t.equal(body.instruction_id, `ProgrammeSoutirage-${DAY}-rev-20261121T120000Z`)
    t.equal(body.creneaux.length, 96)
    t.same(body.creneaux.slice(0, 7), [
      { debut_utc: '2026-11-21T23:00:00Z', fin_utc: '2026-11-21T23:15:00Z', energie_programmee_kwh: 10, energie_realisee_kwh: 10, verdict: 'met' },
      { debut_utc: '2026-11-21T23:15:00Z', fin_utc: '2026-11-21T23:30:00Z', energie_programmee_kwh: 0, energie_realisee_kwh: 0.05, verdict: 'curtailment_respected' },
      { debut_utc: '2026-11-21T23:30:00Z', fin_utc: '2026-11-21T23:45:00Z', energie_programmee_kwh: 5, energie_realisee_kwh: 4, verdict: 'short', manque_kwh: 1 },
      { debut_utc: '2026-11-21T23:45:00Z', fin_utc: '2026-11-22T00:00:00Z', energie_programmee_kwh: 0, energie_realisee_kwh: 1, verdict: 'curtailment_broken' },
      { debut_utc: '2026-11-22T00:00:00Z', fin_utc: '2026-11-22T00:15:00Z', energie_programmee_kwh: 3, energie_realisee_kwh: null, verdict: 'no_data' },
      { debut_utc: '2026-11-22T00:15:00Z', fin_utc: '2026-11-22T00:30:00Z', energie_programmee_kwh: null, energie_realisee_kwh: 2, verdict: 'unconstrained' },
      { debut_utc: '2026-11-22T00:30:00Z', fin_utc: '2026-11-22T00:45:00Z', energie_programmee_kwh: null, energie_realisee_kwh: null, verdict: 'unconstrained' },
    ], `the verdicts (inWorker ${inWorker})`)
    t.same(body.totaux, {
      energie_programmee_kwh: 18, energie_realisee_kwh: 17.05, manque_kwh: 1,
      verdicts: { met: 1, short: 1, curtailment_respected: 1, curtailment_broken: 1, no_data: 1, unconstrained: 91 },
      tardifs: 0,
    })

    const same = await acme.realise({ site_id: siteId(1), target_date: DAY }, { 'if-none-match': res.headers.etag! })
    t.equal(same.status, 304)
    t.equal(same.headers.etag, res.headers.etag)
    t.equal(same.text, '')

    // The meter's late correction of slot 2: it was met after all.
    t.equal((await epx.handle.reportMetering([reading(siteId(1), 2, 4.96)])).accepted, 1)
    const corrected = await acme.realise({ site_id: siteId(1), target_date: DAY }, { 'if-none-match': res.headers.etag! })
    t.equal(corrected.status, 200, 'a new meter value is a new ETag')
    t.not(corrected.headers.etag, res.headers.etag)
    t.match(corrected.json().creneaux[2], { energie_realisee_kwh: 4.96, verdict: 'met' })
    t.notOk('manque_kwh' in corrected.json().creneaux[2])
    t.equal(corrected.json().totaux.manque_kwh, 0)

    const head = await acme.realise({ site_id: siteId(1), target_date: DAY }, {}, 'HEAD')
    t.equal(head.status, 200)
    t.equal(head.headers.etag, corrected.headers.etag)
    t.equal(head.text, '')
  }
})

t.test('the scope, the perimeter and the 404 of nothing to compare', async t => {
  const { epx, acme } = await day(t, false)
  const reader = await company(epx, 'reader', 'all', ['outbound:besoins-agreges'])
  const denied = await reader.realise({ site_id: siteId(1), target_date: DAY })
  t.equal(denied.status, 403)
  t.equal(denied.json().code, 'SCOPE_DENIED')
  t.match(denied.headers['www-authenticate'], /scope="outbound:realise"/)

  // Another company, whose perimeter is site 3 alone: site 1 answers as nothing to compare.
  const other = await company(epx, 'other', [siteId(3)])
  const outside = await other.realise({ site_id: siteId(1), target_date: DAY })
  t.equal(outside.status, 404)
  t.equal(outside.json().code, 'NOTHING_TO_COMPARE')
  t.equal(outside.headers['content-type'], 'application/problem+json')
  const none = await acme.realise({ site_id: siteId(2), target_date: DAY })
  t.equal(none.status, 404, 'in the perimeter, but neither a programme nor a meter value')
  t.same(none.json(), (await other.realise({ site_id: siteId(2), target_date: DAY })).json(), 'outside the perimeter reads exactly as nothing there')

  // Meter values alone, no programme: every slot unconstrained, the energy still told.
  await epx.handle.reportMetering([reading(siteId(2), 0, 1.5)])
  const metered = (await acme.realise({ site_id: siteId(2), target_date: DAY })).json()
  t.equal(metered.instruction_id, null)
  t.same(metered.totaux, { energie_programmee_kwh: 0, energie_realisee_kwh: 1.5, manque_kwh: 0, verdicts: { met: 0, short: 0, curtailment_respected: 0, curtailment_broken: 0, no_data: 0, unconstrained: 96 }, tardifs: 0 })

  const bad = await acme.realise({ site_id: 'PRM1', target_date: '2026-02-30' })
  t.equal(bad.status, 400)
  t.same(bad.json().invalid_params.map((p: { name: string }) => p.name).sort(), ['site_id', 'target_date'])
  t.match(bad.json().detail, /site_id, target_date/)
})

t.test('a DST day answers every quarter-hour of it: 92 in spring, 100 in autumn', async t => {
  for (const [date, slots, now] of [['2027-03-28', 92, '2027-03-27T10:00:00Z'], ['2026-10-25', 100, '2026-10-24T10:00:00Z']] as const) {
    const epx = await startEpx(t, { now })
    const acme = await company(epx, 'acme', 'all')
    // Every slot 2 kWh; the last hour a curtailment.
    const kwh = (j: number) => j >= slots - 4 ? 0 : 2
    t.equal((await acme.send({ targetDate: date, emittedAt: now, kwh })).status, 202)
    epx.clock.set(coverageOf(date).endUtc)
    const start = Date.parse(coverageOf(date).startUtc)
    // Met, except the third slot short; the last slot breaks its curtailment; slot 5 never metered.
    const readings = Array.from({ length: slots }, (_, j) => reading(siteId(1), j, j === 2 ? 1.5 : j === slots - 1 ? 0.5 : kwh(j), start)).filter((_, j) => j !== 5)
    t.equal((await epx.handle.reportMetering(readings)).accepted, slots - 1)
    const body = (await acme.realise({ site_id: siteId(1), target_date: date })).json()
    t.equal(body.creneaux.length, slots, `${date}: ${slots} slots`)
    t.equal(body.creneaux[slots - 1].fin_utc, coverageOf(date).endUtc)
    t.same(body.totaux.verdicts, { met: slots - 6, short: 1, curtailment_respected: 3, curtailment_broken: 1, no_data: 1, unconstrained: 0 }, date)
    t.equal(body.totaux.manque_kwh, 0.5)
    t.equal(body.totaux.energie_programmee_kwh, (slots - 4) * 2)
  }
})

t.test('a kept answer is served again as it was, until the programme or a meter value changes it', async t => {
  for (const inWorker of [false, true]) {
    const { epx, acme } = await day(t, inWorker)
    const get = (headers: Record<string, string> = {}) => acme.realise({ site_id: siteId(1), target_date: DAY }, headers)
    const first = await get()
    const again = await get()
    t.equal(again.text, first.text, 'the same bytes')
    t.equal(again.headers.etag, first.headers.etag)

    // The same programme sent again with other values overwrites it (DECISIONS.md "Inbound"): same id, new answer.
    epx.clock.set('2026-11-21T14:00:00Z')   // the day before, when programmes for it are taken
    t.equal((await acme.send({ slots: KWH.length, kwh: j => j === 0 ? 12 : KWH[j]! })).status, 202)
    const resent = await get({ 'if-none-match': first.headers.etag! })
    t.equal(resent.status, 200, `a re-sent programme is a new ETag (inWorker ${inWorker})`)
    t.equal(resent.json().instruction_id, first.json().instruction_id)
    t.match(resent.json().creneaux[0], { energie_programmee_kwh: 12, energie_realisee_kwh: 10, verdict: 'short', manque_kwh: 2 })

    // A later programme supersedes it.
    t.equal((await acme.send({ emittedAt: '2026-11-21T13:00:00Z', slots: 1, kwh: () => 1 })).status, 202)
    const later = await get({ 'if-none-match': resent.headers.etag! })
    t.equal(later.status, 200)
    t.equal(later.json().instruction_id, `ProgrammeSoutirage-${DAY}-rev-20261121T130000Z`)
    t.same(later.json().totaux.verdicts, { met: 1, short: 0, curtailment_respected: 0, curtailment_broken: 0, no_data: 0, unconstrained: 95 })
    t.equal((await get({ 'if-none-match': later.headers.etag! })).status, 304)
  }
})

t.test('a programme for today received at 06:15 in Paris: its 25 slots already over are late, counted apart; the instruction applied at cycle 1 keeps its verdicts for those hours', async t => {
  for (const inWorker of [false, true]) {
    const epx = await startEpx(t, { config: { api: { inWorker } } })
    const acme = await company(epx, 'acme', 'all')
    t.equal((await acme.send({ kwh: () => 2.5 })).status, 202)
    const governing = `ProgrammeSoutirage-${DAY}-rev-20261121T120000Z`
    const cycle = epx.ref.runCycle()
    await eventually(() => acme.status({ target_date: DAY }), r => r.json().instructions[0]?.status === 'applied')

    epx.clock.set('2026-11-22T05:15:00Z')
    // Curtailments and floors of 80 kWh for the quarter-hours already over: had they been judged, broken and short.
    const sent = await acme.send({ emittedAt: '2026-11-22T05:15:00Z', kwh: j => j < 25 ? (j % 6 === 0 ? 0 : 80) : 2.5 })
    t.equal(sent.status, 202)
    t.match(sent.json().instructions[0], { status: 'queued', periods_over: 25 })
    const late = `ProgrammeSoutirage-${DAY}-rev-20261122T051500Z`

    epx.clock.set('2026-11-23T00:00:00Z')
    await epx.handle.reportMetering(Array.from({ length: 96 }, (_, j) => reading(siteId(1), j, 2.6)))
    const body = (await acme.realise({ site_id: siteId(1), target_date: DAY })).json()
    t.equal(body.instruction_id, late)
    t.same(body.creneaux[0], {
      debut_utc: '2026-11-21T23:00:00Z', fin_utc: '2026-11-21T23:15:00Z', instruction_id: governing,
      energie_programmee_kwh: 2.5, energie_realisee_kwh: 2.6, verdict: 'met',
      tardif: { instruction_id: late, energie_programmee_kwh: 0, verdict: 'late' },
    }, `the first quarter-hour: the instruction applied at cycle ${cycle.cycle}'s verdict, the late slot beside (inWorker ${inWorker})`)
    t.same(body.creneaux.slice(0, 25).map((c: any) => [c.instruction_id, c.verdict, c.tardif?.verdict]), Array(25).fill([governing, 'met', 'late']))
    t.same(body.creneaux.slice(25).filter((c: any) => 'instruction_id' in c || 'tardif' in c), [], 'from 06:15, the new one governs')
    t.same(body.totaux, {
      energie_programmee_kwh: 240, energie_realisee_kwh: 249.6, manque_kwh: 0,
      verdicts: { met: 96, short: 0, curtailment_respected: 0, curtailment_broken: 0, no_data: 0, unconstrained: 0 },
      tardifs: 25,
    }, 'no broken curtailment, no shortfall from the late slots')

    // The status read tells the same timeline.
    const status = (await acme.status({ target_date: DAY })).json()
    t.same(status.instructions.map((i: any) => [i.instruction_id, i.status, i.in_force, i.not_in_force_reason]), [
      [late, 'queued', [{ from: '2026-11-22T05:15:00Z' }], undefined],
      [governing, 'superseded', [{ from: '2026-11-21T12:30:00Z', until: '2026-11-22T05:15:00Z' }], 'superseded'],
    ])
  }
})

t.test('close() while a whole day of meter values is being written: the report completes, and its values are there after a restart', async t => {
  const epx = await startEpx(t, { now: '2026-11-23T00:00:00Z', sites: 3 })
  const acme = await company(epx, 'acme', 'all')
  const sites = Array.from({ length: 500 }, (_, i) => 'PRM' + String(31_000_000_000_000 + i))
  const readings: MeterReading[] = []
  for (let j = 0; j < 96; j++) for (const site of [siteId(1), ...sites]) readings.push(reading(site, j, 1.25))
  const closed = epx.handle
  const pending = closed.reportMetering(readings)
  await epx.restart()
  t.equal((await pending).accepted, readings.length, 'the report in flight resolved')
  await t.rejects(closed.reportMetering([reading(siteId(1), 0, 1)]), { code: 'NO_STORE' }, 'a closed handle refuses a report')
  const body = (await acme.realise({ site_id: siteId(1), target_date: DAY })).json()
  t.equal(body.totaux.energie_realisee_kwh, 96 * 1.25)
})

t.test("the reference host's late meter correction: 304 until it, then 200 with a new ETag and the corrected slot", async t => {
  const epx = await startEpx(t, { now: '2026-11-22T10:01:00Z' })   // 11:01 in Paris
  const acme = await company(epx, 'acme', 'all')
  const reports: Array<Promise<unknown>> = []
  const sent: MeterReading[][] = []
  epx.ref.meterInto(r => { sent.push([...r]); const p = epx.handle.reportMetering(r); reports.push(p); return p })
  const cycle = async (at: string) => { epx.clock.set(at); epx.ref.runCycle(); await Promise.all(reports) }
  const get = (headers: Record<string, string> = {}) => acme.realise({ site_id: siteId(1), target_date: DAY }, headers)

  await cycle('2026-11-22T10:01:00Z')
  const first = await get()
  t.equal(first.status, 200, first.text)
  t.equal(first.json().creneaux.filter((c: { energie_realisee_kwh: number | null }) => c.energie_realisee_kwh !== null).length, 44, 'the day up to 11:00 in Paris, metered')
  await cycle('2026-11-22T10:06:59Z')
  t.equal(sent.length, 1, 'nothing closed, nothing corrected: nothing reported')
  t.equal((await get({ 'if-none-match': first.headers.etag! })).status, 304)

  await cycle('2026-11-22T10:07:00Z')
  t.equal(sent.length, 2)
  const corrected = sent[1]!.find(r => r.siteId === siteId(1))!
  t.ok(corrected, 'the correction is every site\'s, the first among them')
  const logged = epx.logs().find(l => typeof l.msg === 'string' && l.msg.startsWith('meter correction'))
  t.match(logged, { level: 30, startUtc: corrected.startUtc, endUtc: corrected.endUtc }, 'logged, naming the slot')
  const after = await get({ 'if-none-match': first.headers.etag! })
  t.equal(after.status, 200, 'a late correction of one slot is a new ETag')
  t.not(after.headers.etag, first.headers.etag)
  const index = first.json().creneaux.findIndex((c: { debut_utc: string }) => Date.parse(c.debut_utc) === Date.parse(corrected.startUtc))
  t.ok(index >= 0 && index < 44, `a slot of an earlier hour (${index})`)
  t.not(first.json().creneaux[index].energie_realisee_kwh, corrected.kwh)
  t.equal(after.json().creneaux[index].energie_realisee_kwh, corrected.kwh, 'the corrected value')
  const others = (body: { creneaux: unknown[] }) => body.creneaux.filter((_, j) => j !== index)
  t.same(others(after.json()), others(first.json()), 'every other slot as it was')
  t.equal((await get({ 'if-none-match': after.headers.etag! })).status, 304)
})

t.test('a past day\'s figures for each company do not change when the site changes hands later (DECISIONS.md "In force, quarter-hour by quarter-hour")', async t => {
  for (const inWorker of [false, true]) {
    const { epx, acme } = await day(t, inWorker)
    const before = await acme.realise({ site_id: siteId(1), target_date: DAY })
    t.equal(before.status, 200, before.text)
    // The next morning, site 1 goes to beta: acme keeps site 2 only.
    epx.clock.set('2026-11-23T08:00:00Z')
    await openCompanies(epx.store, { onePerSite: false, now: () => epx.clock.now().getTime() }).update('acme', c => ({ ...c, perimeter: [siteId(2)] }))
    const { cert } = await epx.addCompany('beta', { perimeter: [siteId(1)], since: epx.clock.now().toISOString() })
    const { secret } = await epx.addToken('beta', ['outbound:realise'])
    const after = await acme.realise({ site_id: siteId(1), target_date: DAY })
    t.equal(after.status, 200, `acme held site 1 that day: its day is still its own (inWorker ${inWorker})`)
    t.equal(after.text, before.text, 'the same figures, byte for byte')
    t.equal(after.headers.etag, before.headers.etag)
    const beta = await epx.request({ method: 'GET', path: REALISE_PATH, query: { site_id: siteId(1), target_date: DAY }, cert, token: secret })
    t.equal(beta.status, 404, 'beta did not hold site 1 that day: no meter value of it is shown')
    t.equal(beta.json().code, 'NOTHING_TO_COMPARE')
  }
})

t.test('an answer kept for a poller is made again when the site changes hands that day: the tenure is read again once the store moved (DECISIONS.md "Tenure")', async t => {
  const epx = await startEpx(t)
  const acme = await company(epx, 'acme', [siteId(1), siteId(2)])
  // No programme: only the tenure tells what is acme's (no effective instruction changes with it).
  epx.clock.set('2026-11-22T08:00:00Z')
  await epx.handle.reportMetering(Array.from({ length: 32 }, (_, j) => reading(siteId(1), j, 2.5)))
  const first = await acme.realise({ site_id: siteId(1), target_date: DAY })
  t.equal(first.status, 200, first.text)
  t.equal((await acme.realise({ site_id: siteId(1), target_date: DAY })).headers.etag, first.headers.etag, 'polled again: the answer kept')
  // 09:00 UTC is 10:00 in Paris: acme holds site 1 for the day's first 40 quarter-hours only.
  epx.clock.set('2026-11-22T09:00:00Z')
  await openCompanies(epx.store, { onePerSite: false, now: () => epx.clock.now().getTime() }).update('acme', c => ({ ...c, perimeter: [siteId(2)] }))
  await company(epx, 'beta', [siteId(1)])
  epx.clock.set('2026-11-23T00:00:00Z')
  const after = await acme.realise({ site_id: siteId(1), target_date: DAY })
  t.equal(after.status, 200, after.text)
  t.not(after.headers.etag, first.headers.etag, 'a new answer')
  t.equal(first.json().creneaux.length, 96, 'before: every quarter-hour of the day was acme\'s')
  t.equal(after.json().creneaux.length, 40, 'after: the 40 it held')
})

t.test('a site handed over at 10:00 Paris: each company is judged on the quarter-hours that began while it held the site, by its own instruction (DECISIONS.md "Tenure")', async t => {
  const epx = await startEpx(t)
  const acme = await company(epx, 'acme', [siteId(1), siteId(2)])
  t.equal((await acme.send({ kwh: () => 2 })).status, 202)
  await epx.ref.runCycle()
  // 09:00 UTC is 10:00 in Paris: quarter-hour 40 of the day begins at the transfer.
  epx.clock.set('2026-11-22T09:00:00Z')
  await openCompanies(epx.store, { onePerSite: false, now: () => epx.clock.now().getTime() }).update('acme', c => ({ ...c, perimeter: [siteId(2)] }))
  const beta = await company(epx, 'beta', [siteId(1)])
  const sent = await beta.send({ emittedAt: '2026-11-22T09:00:00Z', kwh: () => 3 })
  t.equal(sent.status, 202, sent.text)
  await epx.ref.runCycle()
  epx.clock.set('2026-11-23T00:00:00Z')
  await epx.handle.reportMetering(Array.from({ length: 96 }, (_, j) => reading(siteId(1), j, 2.5)))

  const mine = (await acme.realise({ site_id: siteId(1), target_date: DAY })).json()
  const theirs = (await beta.realise({ site_id: siteId(1), target_date: DAY })).json()
  const judged = (body: any) => body.creneaux.filter((c: any) => 'verdict' in c)
  t.same(judged(mine).map((c: any) => [c.energie_programmee_kwh, c.verdict]), Array(40).fill([2, 'met']),
    'acme: the 40 quarter-hours begun before 10:00, by its instruction')
  t.equal(judged(mine)[39].fin_utc, '2026-11-22T09:00:00Z')
  t.same(judged(theirs).map((c: any) => [c.energie_programmee_kwh, c.verdict]), Array(56).fill([3, 'short']),
    'beta: the 56 from 10:00 on, by its own')
  t.equal(judged(theirs)[0].debut_utc, '2026-11-22T09:00:00Z')
  t.equal(mine.totaux.energie_realisee_kwh + theirs.totaux.energie_realisee_kwh, 96 * 2.5, 'every metered quarter-hour counted once, for one company')
})
