import t, { type Test as Tap } from 'tap'
import { createProgrammeReader } from '../../src/apply/read-programme.ts'
import type { CheckContext } from '../../src/apply/check-programme.ts'
import { programme, siteId, type Body } from '../helpers/programme.ts'

// DECISIONS.md "Inbound", one test per rule: each asserts the status, the code and the
// exact JSON Pointer of the one violation. These run the real check (parse → schema →
// rules → batch) without HTTP; test/http/inbound.test.ts repeats a few through the door.

const ctx: CheckContext = {
  perimeter: 'all',
  provenance: { receivedAt: '2026-11-21T12:30:00.000Z', companyId: 'acme', tokenId: 'tok', certFingerprint256: 'AB:CD' },
}

interface ReadOptions {
  maxSites?: number
  requireContiguous?: boolean
  maxClockSkewSeconds?: number
  maxDaysAhead?: number
  maxSiteKw?: number
  perimeter?: CheckContext['perimeter']
  /** The server's clock (the time rules run only with it). */
  now?: string
  managed?: readonly string[]
}

function reader (o: ReadOptions = {}) {
  return createProgrammeReader({
    maxSites: o.maxSites ?? 5000, requireContiguous: o.requireContiguous ?? false, maxClockSkewSeconds: o.maxClockSkewSeconds, maxDaysAhead: o.maxDaysAhead, maxSiteKw: o.maxSiteKw,
  })
}

async function violations (body: unknown, o: ReadOptions = {}) {
  const r = reader(o)
  const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
  try {
    await r.read(bytes, {
      ...ctx,
      perimeter: o.perimeter ?? 'all',
      ...(o.now ? { nowMs: Date.parse(o.now) } : {}),
      ...(o.managed ? { managed: new Set(o.managed) } : {}),
    })
    return undefined
  } finally {
    await r.close()
  }
}

/** The body is refused with 400 INVALID_PROGRAMME_SOUTIRAGE_REQUEST and exactly one detail, at `pointer`. */
async function rejects (t: Tap, body: unknown, pointer: string, message: RegExp, o: Parameters<typeof violations>[1] = {}) {
  const err = await violations(body, o).then(() => undefined, (e: any) => e)
  t.ok(err, 'refused')
  t.equal(err?.status, 400)
  t.equal(err?.code, 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST')
  t.same(Object.keys(err?.details ?? {}), [pointer])
  t.match(err?.details?.[pointer], message)
}

const with_ = (patch: (b: Body) => void, base: Body = programme({ slots: 4 })): Body => {
  const b = structuredClone(base)
  patch(b)
  return b
}
const slot0 = '/sites/0/energie_programmee/0'

t.test('a body that is not JSON is refused at ""', async t => {
  await rejects(t, '{"schema_version": "v0.2",', '', /not valid JSON at line 1, column 27 \(character 26\)/)
})

t.test('a body that is JSON but not an object is refused at ""', async t => {
  await rejects(t, [programme()], '', /must be a JSON object/)
})

t.test('a missing schema_version is refused, naming the supported versions', async t => {
  await rejects(t, with_(b => { delete (b as any).schema_version }), '/schema_version', /is required.*"v0\.2"/)
})

t.test('a schema_version other than v0.2 is refused, naming the supported versions', async t => {
  await rejects(t, with_(b => { b.schema_version = 'v0.1' }), '/schema_version', /supported versions: "v0\.2"; got "v0\.1"/)
})

t.test('a type other than programme_soutirage is refused', async t => {
  await rejects(t, with_(b => { b.type = 'besoins_agreges' }), '/type', /must be "programme_soutirage"/)
})

t.test('an emitted_by that is not a non-empty string is refused', async t => {
  await rejects(t, with_(b => { b.emitted_by = '' }), '/emitted_by', /non-empty string/)
  await rejects(t, with_(b => { (b as any).emitted_by = 42 }), '/emitted_by', /non-empty string/)
})

t.test('an emitted_at that is not a UTC instant with Z is refused, saying exactly what is wrong', async t => {
  await rejects(t, with_(b => { b.emitted_at = '2026-11-21T13:00:00+01:00' }), '/emitted_at',
    /^must end in Z \(UTC\); got an offset \+01:00: write 2026-11-21T12:00:00Z instead; got "2026-11-21T13:00:00\+01:00"$/)
  await rejects(t, with_(b => { b.emitted_at = '2026-11-31T12:00:00Z' }), '/emitted_at', /^2026-11-31 is not a calendar date \(November 2026 has 30 days\)/)
  await rejects(t, with_(b => { b.emitted_at = '2026-13-01T12:00:00Z' }), '/emitted_at', /^month 13 does not exist/)
  await rejects(t, with_(b => { b.emitted_at = '2026-11-21T24:00:00Z' }), '/emitted_at', /^hour 24 does not exist/)
  await rejects(t, with_(b => { b.emitted_at = '2026-11-21T12:00:00.1234567890Z' }), '/emitted_at', /^the fraction of a second has at most 9 digits/)
  await rejects(t, with_(b => { b.emitted_at = '2026-11-21T12:00:00' }), '/emitted_at', /^must end in Z \(UTC\); got no time zone/)
})

t.test('an emitted_at in years 0000 to 0099 is a valid instant (not "must end in Z")', async t => {
  for (const emittedAt of ['0000-01-01T00:00:00Z', '0050-06-15T12:00:00Z', '0099-12-31T23:59:59.999Z', '0100-01-01T00:00:00Z', '9999-12-31T23:59:59.999999999Z']) {
    t.equal(await violations(with_(b => { b.emitted_at = emittedAt })), undefined, emittedAt)
  }
})

t.test('an emitted_at with a fraction of up to 9 digits is accepted', async t => {
  for (const emittedAt of ['2026-11-21T12:00:00.1Z', '2026-11-21T12:00:00.123456Z', '2026-11-21T12:00:00.123456789Z']) {
    t.equal(await violations(with_(b => { b.emitted_at = emittedAt })), undefined, emittedAt)
  }
})

t.test('a target_date that is not a real calendar date is refused', async t => {
  await rejects(t, with_(b => { b.target_date = '2026-02-30' }), '/target_date', /real calendar date YYYY-MM-DD/)
  await rejects(t, with_(b => { b.target_date = '22/11/2026' }), '/target_date', /real calendar date/)
})

t.test('a target_date whose Paris day has no quarter-hour grid (local mean time, before 1911-03-12) is refused at /target_date, once', async t => {
  // The tz database gives Paris UTC+00:09:21 until 1911: such a day starts at hh:50:39Z.
  for (const targetDate of ['0000-01-01', '0050-06-15', '0099-12-31', '0100-01-01', '1890-06-01', '1911-03-11']) {
    const b = with_(x => { x.emitted_at = `${targetDate}T00:00:00Z`; x.target_date = targetDate },
      programme({ targetDate: '2026-11-22', slots: 2 }))
    // Slots of that UTC day on the 900 s grid: only /target_date is reported.
    b.sites[0]!.energie_programmee = [0, 1].map(j => ({
      debut_utc: `${targetDate}T0${j}:00:00Z`, fin_utc: `${targetDate}T0${j}:15:00Z`, energie_kwh: 1,
    }))
    await rejects(t, b, '/target_date', /^the Europe\/Paris day .* does not start and end on UTC quarter-hours: Paris kept local mean time \(UTC\+00:09:21\) until 1911, so no 900 s slot grid fits the day; send a target_date from 1911-03-12 on$/)
  }
  const r = reader()
  const batch = await r.read(Buffer.from(JSON.stringify(programme({ targetDate: '1911-03-12', emittedAt: '1911-03-11T12:00:00Z' }))), ctx)
  await r.close()
  t.equal(batch.slotEnds[0], 96, '1911-03-12, the first day on the grid, has its 96 quarter-hours')
})

t.test('years 0000 to 0099 in slot instants are read as such: the coverage check speaks of them, not of "Z"', async t => {
  const b = with_(x => { x.sites[0]!.energie_programmee[0] = { debut_utc: '0050-06-15T00:00:00Z', fin_utc: '0050-06-15T00:15:00Z', energie_kwh: 1 } })
  await rejects(t, b, `${slot0}/debut_utc`, /slot outside the target day: 2026-11-22.*; got 0050-06-15T00:00:00Z/)
})

t.test('a slot_duration_secs that is not a positive integer multiple of 900 is refused', async t => {
  for (const bad of [0, -900, 450, 1000, 900.5, '900']) {
    await rejects(t, with_(b => { (b as any).slot_duration_secs = bad }), '/slot_duration_secs', /positive integer multiple of 900/)
  }
})

t.test('a slot_duration_secs longer than the longest day (25 h) is refused, however large (found by the campaign fuzz: 3.9e46 was a 500)', async t => {
  for (const bad of [90_900, 3.9287441789592566e+46, Number.MAX_VALUE]) {
    await rejects(t, with_(b => { (b as any).slot_duration_secs = bad }), '/slot_duration_secs', /at most 90000 \(a 25-hour day/)
  }
  // 90000 s itself is a valid length: only the slots (900 s long here) are then refused.
  const err = await violations(with_(b => { (b as any).slot_duration_secs = 90_000 })).then(() => undefined, (e: any) => e)
  t.notOk('/slot_duration_secs' in (err?.details ?? {}), '90000 s is not refused')
  t.ok(Object.keys(err?.details ?? {}).some(k => k.endsWith('/fin_utc')), 'the 900 s slots are')
})

t.test('sites missing or empty is refused', async t => {
  await rejects(t, with_(b => { delete (b as any).sites }), '/sites', /is required/)
  await rejects(t, with_(b => { b.sites = [] }), '/sites', /non-empty array of sites; got an empty array/)
})

t.test('more sites than the limit is refused', async t => {
  await rejects(t, programme({ sites: 3, slots: 1 }), '/sites', /at most 2 sites per programme/, { maxSites: 2 })
})

t.test('a site_id that is not PRM followed by 14 digits is refused', async t => {
  for (const bad of ['PRM_30000000000001', 'PRM3000000000001', 'prm30000000000001', 'PRM300000000000011']) {
    await rejects(t, with_(b => { b.sites[0]!.site_id = bad }), '/sites/0/site_id', /"PRM" followed by 14 digits/)
  }
})

t.test('the same site_id twice is refused at the second one', async t => {
  await rejects(t, programme({ sites: [siteId(1), siteId(2), siteId(1)], slots: 1 }), '/sites/2/site_id', /appears twice \(also at \/sites\/0\)/)
})

t.test("a site outside the caller's perimeter is refused with 400, saying so", async t => {
  await rejects(t, programme({ sites: 2, slots: 1 }), '/sites/1/site_id', /outside your company's perimeter/, { perimeter: [siteId(1)] })
})

t.test('a site the solver does not manage is refused, whatever the perimeter', async t => {
  const managed = [siteId(1), siteId(2)]
  const b = programme({ sites: [siteId(1), 'PRM99999999999999'], slots: 1 })
  await rejects(t, b, '/sites/1/site_id', /^site PRM99999999999999 is not managed by this service's solver: no programme for it can be applied; check the site_id/, { managed })
  await rejects(t, b, '/sites/1/site_id', /is not managed/, { managed, perimeter: [siteId(1), 'PRM99999999999999'] })
  // Outside the perimeter, the perimeter's message: a company learns nothing of the sites beyond it.
  await rejects(t, b, '/sites/1/site_id', /outside your company's perimeter/, { managed, perimeter: [siteId(1)] })
  t.equal(await violations(programme({ sites: 2, slots: 1 }), { managed }), undefined, 'managed sites are accepted')
})

const NOW = '2026-11-21T12:30:00Z'

t.test('an emitted_at more than inbound.maxClockSkewSeconds ahead of the server clock is refused, giving the server time', async t => {
  await rejects(t, programme({ emittedAt: '2062-11-21T12:30:00Z', slots: 1 }), '/emitted_at',
    /^is 13149 days ahead of this server's clock \(2026-11-21T12:30:00\.000Z\); at most 300 s ahead is accepted.*check the clock and the time zone/, { now: NOW })
  await rejects(t, programme({ emittedAt: '2026-11-21T12:42:00Z', slots: 1 }), '/emitted_at', /^is 720 s ahead/, { now: NOW })
  await rejects(t, programme({ emittedAt: '2026-11-21T12:35:00.001Z', slots: 1 }), '/emitted_at', /^is 301 s ahead.*at most 300 s/, { now: NOW })
  t.equal(await violations(programme({ emittedAt: '2026-11-21T12:35:00Z', slots: 1 }), { now: NOW }), undefined, 'exactly the skew is accepted')
  await rejects(t, programme({ emittedAt: '2026-11-21T12:31:00Z', slots: 1 }), '/emitted_at', /at most 30 s ahead/, { now: NOW, maxClockSkewSeconds: 30 })
  t.equal(await violations(programme({ emittedAt: '2062-11-21T12:30:00Z', slots: 1 })), undefined, 'no server clock given: not checked')
})

t.test('a target_date before today (Europe/Paris) is refused: the day is over', async t => {
  await rejects(t, programme({ targetDate: '2020-01-01', emittedAt: '2026-11-21T12:00:00Z', slots: 1 }), '/target_date',
    /^the day is over: 2020-01-01 is before today \(2026-11-21, Europe\/Paris; server time 2026-11-21T12:30:00\.000Z\)/, { now: NOW })
  // 23:30Z on the 20th is already the 21st in Paris.
  await rejects(t, programme({ targetDate: '2026-11-20', emittedAt: '2026-11-20T23:00:00Z', slots: 1 }), '/target_date', /the day is over/, { now: '2026-11-20T23:30:00Z' })
})

t.test("today's target_date stays accepted (an intraday correction)", async t => {
  t.equal(await violations(programme({ targetDate: '2026-11-21', emittedAt: '2026-11-21T12:00:00Z' }), { now: NOW }), undefined)
})

t.test('a target_date after today + inbound.maxDaysAhead is refused, naming the last day accepted', async t => {
  t.equal(await violations(programme({ targetDate: '2026-11-28', slots: 1 }), { now: NOW }), undefined, 'today + 7 is accepted')
  await rejects(t, programme({ targetDate: '2026-11-29', slots: 1 }), '/target_date',
    /^2026-11-29 is too far ahead: the latest target_date accepted today \(2026-11-21, Europe\/Paris\) is 2026-11-28, 7 day\(s\) ahead/, { now: NOW })
  await rejects(t, programme({ targetDate: '2026-11-22', slots: 1 }), '/target_date', /latest target_date accepted today \(2026-11-21, Europe\/Paris\) is 2026-11-21/, { now: NOW, maxDaysAhead: 0 })
})

t.test('the time rules hold off the thread too (a big body)', async t => {
  const r = createProgrammeReader({ maxSites: 5000, requireContiguous: false, offThreadBytes: 1 })
  t.teardown(() => r.close())
  const err = await r.read(Buffer.from(JSON.stringify(programme({ targetDate: '2026-11-29', emittedAt: '2062-01-01T00:00:00Z', sites: [siteId(1), siteId(9)], slots: 1 }))),
    { ...ctx, nowMs: Date.parse(NOW), managed: new Set([siteId(1)]) }).then(() => undefined, (e: any) => e)
  t.same(Object.keys(err?.details ?? {}).sort(), ['/emitted_at', '/sites/1/site_id', '/target_date'])
})

t.test('a debut_utc or fin_utc off the 900 s boundary is refused', async t => {
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[0]!.debut_utc = '2026-11-21T23:07:00Z' }), `${slot0}/debut_utc`, /900 s boundary.*"2026-11-21T23:07:00Z"/)
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[3]!.fin_utc = '2026-11-22T00:00:30Z' }), '/sites/0/energie_programmee/3/fin_utc', /900 s boundary/)
})

t.test('a slot instant that is not a UTC instant is refused, saying exactly what is wrong', async t => {
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[0]!.debut_utc = '2026-11-22T00:00:00+01:00' }), `${slot0}/debut_utc`,
    /^must end in Z \(UTC\); got an offset \+01:00: write 2026-11-21T23:00:00Z instead/)
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[0]!.fin_utc = '2026-11-21T24:15:00Z' }), `${slot0}/fin_utc`, /^hour 24 does not exist/)
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[1]!.debut_utc = '2026-02-30T23:15:00Z' }), '/sites/0/energie_programmee/1/debut_utc',
    /^2026-02-30 is not a calendar date/)
})

t.test('a slot instant with a fraction of a second is refused as not on the 900 s boundary', async t => {
  for (const debut of ['2026-11-21T23:00:00.5Z', '2026-11-21T23:00:00.000001Z', '2026-11-21T23:00:00.000000001Z']) {
    await rejects(t, with_(b => { b.sites[0]!.energie_programmee[0]!.debut_utc = debut }), `${slot0}/debut_utc`,
      /^must be aligned to a 900 s boundary \(HH:00, HH:15, HH:30 or HH:45, with no seconds and no fraction of a second\); got "/)
  }
})

t.test('a slot instant spelled with a zero fraction (JavaScript toISOString) is the same instant', async t => {
  const b = programme({ slots: 4 })
  for (const s of b.sites[0]!.energie_programmee) { s.debut_utc = s.debut_utc.replace('Z', '.000Z'); s.fin_utc = s.fin_utc.replace('Z', '.000000000Z') }
  t.equal(await violations(b), undefined)
})

t.test('fin_utc - debut_utc not equal to slot_duration_secs is refused at fin_utc', async t => {
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[3]!.fin_utc = '2026-11-22T00:15:00Z' }),
    '/sites/0/energie_programmee/3/fin_utc', /debut_utc \+ slot_duration_secs \(900 s\), i\.e\. 2026-11-22T00:00:00Z/)
})

t.test("a slot outside the target date's Paris coverage is refused", async t => {
  await rejects(t, with_(b => {
    b.sites[0]!.energie_programmee[0] = { debut_utc: '2026-11-21T22:45:00Z', fin_utc: '2026-11-21T23:00:00Z', energie_kwh: 1 }
  }), `${slot0}/debut_utc`, /outside the target day: 2026-11-22 \(Europe\/Paris\) covers \[2026-11-21T23:00:00Z, 2026-11-22T23:00:00Z\)/)
})

t.test('slots not in strictly increasing order are refused ("not contiguous")', async t => {
  const b = with_(b => { const s = b.sites[0]!.energie_programmee; [s[1], s[2]] = [s[2]!, s[1]!] })
  await rejects(t, b, '/sites/0/energie_programmee/2/debut_utc', /slots not contiguous.*increasing order/)
})

t.test('overlapping slots are refused ("not contiguous")', async t => {
  const b = programme({ slots: 4, slotSecs: 1800 })
  b.sites[0]!.energie_programmee[1] = { debut_utc: '2026-11-21T23:15:00Z', fin_utc: '2026-11-21T23:45:00Z', energie_kwh: 1 }
  await rejects(t, b, '/sites/0/energie_programmee/1/debut_utc', /before the previous one ends \(2026-11-21T23:30:00Z\)/)
})

t.test('energie_kwh missing, not a finite number, or negative is refused', async t => {
  await rejects(t, with_(b => { delete (b.sites[0]!.energie_programmee[0] as any).energie_kwh }), `${slot0}/energie_kwh`, /is required/)
  await rejects(t, with_(b => { (b.sites[0]!.energie_programmee[0] as any).energie_kwh = '2.5' }), `${slot0}/energie_kwh`, /finite number >= 0.*; got "2\.5"/)
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[0]!.energie_kwh = -0.5 }), `${slot0}/energie_kwh`, /finite number >= 0.*; got -0\.5/)
  // JSON has no Infinity, but 1e400 parses to it.
  const text = JSON.stringify(programme({ slots: 1 })).replace('"energie_kwh":2.5', '"energie_kwh":1e400')
  await rejects(t, text, `${slot0}/energie_kwh`, /finite number >= 0.*; got Infinity/)
})

t.test('sanity bound: a slot whose power is above inbound.maxSiteKw (default 100,000 kW) is refused at its energie_kwh, naming the bound and how to change it', async t => {
  // Found by the campaign fuzz: 1e306 kWh was accepted, its floor Infinity, and the realise read answered null for the slot.
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[2]!.energie_kwh = 1e306 }), '/sites/0/energie_programmee/2/energie_kwh',
    /^1e\+306 kWh over a 900 s slot is a power beyond any finite number of kW .*sanity bound of 100000 kW per site \(inbound\.maxSiteKw\).*raise inbound\.maxSiteKw/)
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[0]!.energie_kwh = 1e300 }), `${slot0}/energie_kwh`, /is a power of 4e\+300 kW/)
  // The bound itself is accepted: 25,000 kWh over a quarter-hour is 100,000 kW.
  t.equal(await violations(with_(b => { b.sites[0]!.energie_programmee[0]!.energie_kwh = 25_000 })), undefined, 'at the bound')
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[0]!.energie_kwh = 25_000.01 }), `${slot0}/energie_kwh`, /is a power of 100000\.04 kW/)
  // Power, not energy: the same energy over a half-hour slot is half the power.
  const halfHours = programme({ slots: 2, slotSecs: 1800, kwh: j => j === 0 ? 50_000 : 50_001 })
  await rejects(t, halfHours, '/sites/0/energie_programmee/1/energie_kwh', /50001 kWh over a 1800 s slot is a power of 100002 kW/)
  // Configured: inbound.maxSiteKw.
  t.equal(await violations(programme({ slots: 2, kwh: () => 2.5 }), { maxSiteKw: 10 }), undefined, '2.5 kWh a quarter-hour is 10 kW')
  await rejects(t, programme({ slots: 2, kwh: j => j === 1 ? 2.6 : 2.5 }), '/sites/0/energie_programmee/1/energie_kwh', /sanity bound of 10 kW per site/, { maxSiteKw: 10 })
})

t.test('the sanity bound holds off the thread too (a big body), configured', async t => {
  const r = createProgrammeReader({ maxSites: 5000, requireContiguous: false, offThreadBytes: 1, maxSiteKw: 10 })
  t.teardown(() => r.close())
  const err = await r.read(Buffer.from(JSON.stringify(programme({ slots: 3, kwh: j => j === 2 ? 1e306 : j === 1 ? 2.6 : 2.5 }))), ctx).then(() => undefined, (e: any) => e)
  t.equal(err?.status, 400)
  t.same(Object.keys(err?.details ?? {}), ['/sites/0/energie_programmee/1/energie_kwh', '/sites/0/energie_programmee/2/energie_kwh'])
  t.match(err?.details, { '/sites/0/energie_programmee/1/energie_kwh': /bound of 10 kW/, '/sites/0/energie_programmee/2/energie_kwh': /beyond any finite number/ })
})

t.test('gaps between slots are allowed by default, and refused with inbound.requireContiguous', async t => {
  const gap = with_(b => { b.sites[0]!.energie_programmee.splice(1, 1) })
  t.equal(await violations(gap), undefined, 'a gap is "no constraint"')
  await rejects(t, gap, '/sites/0/energie_programmee/1/debut_utc', /gap from 2026-11-21T23:15:00Z to 2026-11-21T23:30:00Z/, { requireContiguous: true })
})

t.test('an empty energie_programmee is valid: an instruction with 0 periods', async t => {
  const r = reader()
  const batch = await r.read(Buffer.from(JSON.stringify(programme({ slots: 0 }))), ctx)
  await r.close()
  t.equal(batch.slotEnds[0], 0)
})

t.test('unknown extra fields are ignored, at every level', async t => {
  const b: any = programme({ slots: 2 })
  b.future_field = { x: 1 }
  b.sites[0].zone = 'north'
  b.sites[0].energie_programmee[0].comment = 'peak'
  t.equal(await violations(b), undefined)
})

t.test('every violation is reported at once, keyed by pointer', async t => {
  const b: any = programme({ sites: 2, slots: 2 })
  b.type = 'x'
  b.sites[1].site_id = 'PRM1'
  b.sites[0].energie_programmee[1].energie_kwh = -1
  const err = await violations(b).catch(e => e)
  t.same(Object.keys(err.details).sort(), ['/sites/0/energie_programmee/1/energie_kwh', '/sites/1/site_id', '/type'])
})

t.test('at most 100 violations are reported', async t => {
  const b = programme({ slots: 150, slotSecs: 450 * 2 })
  for (const s of b.sites[0]!.energie_programmee) s.energie_kwh = -1
  const err = await violations(b).catch(e => e)
  t.equal(Object.keys(err.details).length, 100)
  t.match(err.message, /100 \(or more\) problem\(s\)/)
})

t.test('DST days: 92 quarter-hours on 2027-03-28 and 100 on 2026-10-25 are accepted', async t => {
  for (const [targetDate, slots] of [['2027-03-28', 92], ['2026-10-25', 100]] as const) {
    const r = reader()
    const batch = await r.read(Buffer.from(JSON.stringify(programme({ targetDate, emittedAt: '2026-10-01T08:00:00Z' }))), ctx)
    await r.close()
    t.equal(batch.slotEnds[0], slots, `${targetDate}: ${slots} slots`)
  }
})

t.test('DST days: a slot past the end of a short day is outside its coverage', async t => {
  // 2027-03-28 ends at 22:00Z: a 96-slot day's slot 92 starts exactly there.
  const b = programme({ targetDate: '2027-03-28', emittedAt: '2026-10-01T08:00:00Z', slots: 93 })
  await rejects(t, b, '/sites/0/energie_programmee/92/debut_utc', /2027-03-28 \(Europe\/Paris\) covers \[2027-03-27T23:00:00Z, 2027-03-28T22:00:00Z\), 92 quarter-hours/)
})

t.test('keys __proto__ and constructor.prototype never reach an object', async t => {
  await rejects(t, '{"__proto__": {"polluted": true}, "schema_version": "v0.2"}', '', /"__proto__".*not allowed/)
  await rejects(t, '{"sites": [{"constructor": {"prototype": {"polluted": true}}}]}', '', /not allowed/)
  t.equal(({} as any).polluted, undefined)
})
