import t, { type Test as Tap } from 'tap'
import { createProgrammeReader } from '../../src/http/read-programme.ts'
import type { CheckContext } from '../../src/http/check-programme.ts'
import { programme, siteId, type Body } from '../helpers/programme.ts'

// DECISIONS.md "Inbound", one test per rule: each asserts the status, the code and the
// exact JSON Pointer of the one violation. These run the real check (parse → schema →
// rules → batch) without HTTP; test/http/inbound.test.ts repeats a few through the door.

const ctx: CheckContext = {
  perimeter: 'all',
  provenance: { receivedAt: '2026-11-21T12:30:00.000Z', companyId: 'acme', tokenId: 'tok', certFingerprint256: 'AB:CD' },
}

function reader (o: { maxSites?: number; requireContiguous?: boolean } = {}) {
  return createProgrammeReader({ maxSites: o.maxSites ?? 5000, requireContiguous: o.requireContiguous ?? false })
}

async function violations (body: unknown, o: { maxSites?: number; requireContiguous?: boolean; perimeter?: CheckContext['perimeter'] } = {}) {
  const r = reader(o)
  const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
  try {
    await r.read(bytes, { ...ctx, perimeter: o.perimeter ?? 'all' })
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

t.test('an emitted_at that is not a UTC instant with Z is refused (an offset too)', async t => {
  await rejects(t, with_(b => { b.emitted_at = '2026-11-21T13:00:00+01:00' }), '/emitted_at', /UTC instant ending in Z/)
  await rejects(t, with_(b => { b.emitted_at = '2026-11-31T12:00:00Z' }), '/emitted_at', /UTC instant/)
})

t.test('a target_date that is not a real calendar date is refused', async t => {
  await rejects(t, with_(b => { b.target_date = '2026-02-30' }), '/target_date', /real calendar date YYYY-MM-DD/)
  await rejects(t, with_(b => { b.target_date = '22/11/2026' }), '/target_date', /real calendar date/)
})

t.test('a slot_duration_secs that is not a positive integer multiple of 900 is refused', async t => {
  for (const bad of [0, -900, 450, 1000, 900.5, '900']) {
    await rejects(t, with_(b => { (b as any).slot_duration_secs = bad }), '/slot_duration_secs', /positive integer multiple of 900/)
  }
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

t.test('a debut_utc or fin_utc off the 900 s boundary is refused', async t => {
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[0]!.debut_utc = '2026-11-21T23:07:00Z' }), `${slot0}/debut_utc`, /900 s boundary.*"2026-11-21T23:07:00Z"/)
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[3]!.fin_utc = '2026-11-22T00:00:30Z' }), '/sites/0/energie_programmee/3/fin_utc', /900 s boundary/)
})

t.test('a slot instant that is not a UTC instant is refused', async t => {
  await rejects(t, with_(b => { b.sites[0]!.energie_programmee[0]!.debut_utc = '2026-11-22T00:00:00+01:00' }), `${slot0}/debut_utc`, /UTC instant ending in Z/)
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
