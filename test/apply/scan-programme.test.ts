import t from 'tap'
import { randomInt } from 'node:crypto'
import { scanProgramme } from '../../src/apply/scan-programme.ts'
import { createProgrammeCheck, type CheckContext, type CheckOptions, type CheckResult } from '../../src/apply/check-programme.ts'
import { coverageOf } from '../../src/contract/paris-day.ts'
import { formatUtcInstant } from '../../src/contract/instants.ts'
import { programme, siteId } from '../helpers/programme.ts'
import { prng, type Rng } from '../helpers/prng.ts'
import { sized } from '../helpers/long.ts'

// A programme in the shape a serializer writes is read straight from its bytes
// (src/apply/scan-programme.ts); every other body the general way, JSON.parse then each
// rule of DECISIONS.md "Inbound". The two must never differ: what the first accepts is
// the batch the second makes, byte for byte, and what it does not accept goes to the
// second, which refuses it with every detail or accepts it as before.

const SEED = process.env.EPX_PROPERTY_SEED === undefined ? randomInt(2 ** 31) : Number(process.env.EPX_PROPERTY_SEED)
const CASES = sized(3000, 100_000)

const provenance = { receivedAt: '2026-11-30T11:00:00.000Z', companyId: 'acme', tokenId: 'tok_acme', certFingerprint256: 'AB:CD' }

/** A result with its typed arrays as bytes, so that two results compare exactly (-0, NaN, views of larger buffers). */
function plain (r: CheckResult): unknown {
  if (!r.ok) return r
  const bytes = (a: ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex')
  const { records, recordEnds, starts, kwh, slotEnds, ...rest } = r.batch
  return { ok: true, ...rest, records: bytes(records), recordEnds: bytes(recordEnds), starts: bytes(starts), kwh: bytes(kwh), slotEnds: bytes(slotEnds) }
}

const checks = new Map<string, { fast: ReturnType<typeof createProgrammeCheck>; general: ReturnType<typeof createProgrammeCheck> }>()
function bothWays (opts: CheckOptions) {
  const key = JSON.stringify(opts)
  let c = checks.get(key)
  if (!c) checks.set(key, c = { fast: createProgrammeCheck(opts), general: createProgrammeCheck(opts, false) })
  return c
}

t.test('a programme as a serializer writes it is read from its bytes, into the batch JSON.parse and the rules make of it', async t => {
  const opts = { maxSites: 5000, requireContiguous: true }
  const nowMs = Date.parse('2027-03-27T12:00:00Z')
  const ctx: CheckContext = { perimeter: 'all', provenance, nowMs }
  const { fast, general } = bothWays(opts)
  const bodies: Array<[string, string]> = [
    ['1 site × 96', JSON.stringify(programme({ targetDate: '2027-03-29', emittedAt: '2027-03-27T11:00:00Z', kwh: j => j % 11 === 0 ? 0 : Math.round(j * 61.7) / 100 }))],
    ['100 sites × 92 (the spring day)', JSON.stringify(programme({ targetDate: '2027-03-28', emittedAt: '2027-03-27T11:00:00Z', sites: 100, kwh: (j, i) => (i * 7 + j) % 60 }))],
    ['3 sites', JSON.stringify(programme({ targetDate: '2027-03-28', emittedAt: '2027-03-27T11:00:00Z', sites: 3 }))],
    ['indented by JSON.stringify', JSON.stringify(programme({ targetDate: '2027-03-28', emittedAt: '2027-03-27T11:00:00Z', sites: 2 }), null, 2)],
    ['fields in another order, a slot\'s too', JSON.stringify(reordered(programme({ targetDate: '2027-03-28', emittedAt: '2027-03-27T11:00:00Z', sites: 2, kwh: j => j / 3 })))],
    ['as Python\'s json.dumps writes it', JSON.stringify(programme({ targetDate: '2027-03-28', emittedAt: '2027-03-27T11:00:00Z', sites: 2 })).replaceAll('":', '": ').replaceAll(',"', ', "')],
    ['a space after a slot\'s last colon', JSON.stringify(programme({ targetDate: '2027-03-28', emittedAt: '2027-03-27T11:00:00Z' })).replaceAll('"energie_kwh":', '"energie_kwh": ')],
    ['no slot at all', JSON.stringify(programme({ targetDate: '2027-03-28', emittedAt: '2027-03-27T11:00:00Z', slots: 0 }))],
    ['a site name in UTF-8', JSON.stringify({ ...programme({ targetDate: '2027-03-28', emittedAt: '2027-03-27T11:00:00Z' }), emitted_by: 'Agrégateur 🚚' })],
  ]
  for (const [name, text] of bodies) {
    const bytes = Buffer.from(text)
    t.ok(scanProgramme(bytes), `${name}: read from its bytes`)
    const r = fast(bytes, ctx)
    t.ok(r.ok, `${name}: accepted`)
    t.strictSame(plain(r), plain(general(bytes, ctx)), `${name}: the same batch as JSON.parse and the rules make`)
  }
})

t.test('what the bytes\' reader leaves to the general reading', async t => {
  const base = programme({ targetDate: '2027-03-28', emittedAt: '2027-03-27T11:00:00Z', slots: 3 })
  const text = JSON.stringify(base)
  const slot0 = JSON.stringify(base.sites[0]!.energie_programmee[0])
  const cases: Array<[string, string]> = [
    ['an escape in a string', text.replace('"Site 1"', '"Sit\\u0065 1"')],
    ['a field the contract does not name', text.replace('{"schema_version"', '{"note":"x","schema_version"')],
    ['a field twice (JSON.parse keeps the last)', text.replace(slot0, slot0.replace('}', ',"energie_kwh":7}'))],
    ['__proto__', text.replace('{"schema_version"', '{"__proto__":{},"schema_version"')],
    ['a gap between slots', JSON.stringify({ ...base, sites: [{ ...base.sites[0]!, energie_programmee: [base.sites[0]!.energie_programmee[0]!, base.sites[0]!.energie_programmee[2]!] }] })],
    ['an instant spelled otherwise', text.replace(base.sites[0]!.energie_programmee[1]!.fin_utc, base.sites[0]!.energie_programmee[1]!.fin_utc.replace('Z', '.000Z'))],
    ['a negative number', text.replace('"energie_kwh":2.5', '"energie_kwh":-2.5')],
    ['trailing text', text + 'x'],
    ['a byte order mark', '\uFEFF' + text],
  ]
  for (const [name, body] of cases) t.equal(scanProgramme(Buffer.from(body)), undefined, name)
})

t.test(`any body, either way the same outcome: a seeded campaign of programmes and their faults (seed ${SEED}, ${CASES} bodies)`, async t => {
  t.comment(`seed ${SEED}: EPX_PROPERTY_SEED=${SEED} replays it`)
  const rng = prng(SEED)
  let read = 0
  let accepted = 0
  for (let c = 0; c < CASES; c++) {
    const k = makeCase(rng)
    const bytes = Buffer.from(k.text, k.latin1 ? 'latin1' : 'utf8')
    const { fast, general } = bothWays(k.opts)
    const a = fast(bytes, k.ctx)
    const b = general(bytes, k.ctx)
    if (scanProgramme(bytes)) read++
    if (b.ok) accepted++
    const same = JSON.stringify(plain(a)) === JSON.stringify(plain(b))
    if (!same) {
      t.strictSame(plain(a), plain(b), `case ${c} (${k.faults.join(', ') || 'no fault'}): ${k.text.slice(0, 300)}`)
      return
    }
  }
  t.pass(`${CASES} bodies: ${read} read from their bytes, ${accepted} accepted, every outcome the same`)
  t.ok(read > CASES / 5 && read < CASES * 0.8, `both readings exercised (${read} of ${CASES} from the bytes)`)
  t.ok(accepted > CASES / 5 && accepted < CASES * 0.8, `both outcomes exercised (${accepted} of ${CASES} accepted)`)
})

function reordered (body: ReturnType<typeof programme>) {
  const { sites, ...envelope } = body
  return {
    sites: sites.map(s => ({ energie_programmee: s.energie_programmee.map(x => ({ energie_kwh: x.energie_kwh, fin_utc: x.fin_utc, debut_utc: x.debut_utc })), site_id: s.site_id, site_name: s.site_name })),
    ...envelope,
  }
}

// ---- The campaign's bodies: a JSON tree whose every value is the text it is written as.

type Node = string | { readonly fields: Array<[string, Node]> } | Node[]

function render (n: Node, style: Style, depth = 0): string {
  if (typeof n === 'string') return n
  const pad = style.indent ? '\n' + style.indent.repeat(depth + 1) : ''
  const close = style.indent ? '\n' + style.indent.repeat(depth) : ''
  if (Array.isArray(n)) return n.length === 0 ? '[]' : `[${n.map(x => pad + render(x, style, depth + 1)).join(',')}${close}]`
  return n.fields.length === 0
    ? '{}'
    : `{${n.fields.map(([k, v]) => `${pad}${JSON.stringify(k)}${style.colon}${render(v, style, depth + 1)}`).join(',')}${close}}`
}

interface Style { readonly indent: string; readonly colon: string }

interface Case {
  readonly text: string
  readonly latin1?: boolean
  readonly opts: CheckOptions
  readonly ctx: CheckContext
  readonly faults: string[]
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)]!
const q = (s: string) => JSON.stringify(s)

/** Energies as a serializer or a person might write them, all valid JSON numbers >= 0. */
const ENERGIES = ['0', '1', '2.5', '12.34', '60', '0.000001', '1e2', '2.5E-1', '5e0', '0.1', '123.45678901234567', '3.0', '25000.5']
/** What a fault can put in a number's place: above the sanity bound, negative, or not a JSON number. */
const BAD_NUMBERS = ['99999999999999999', '1.7976931348623157e308', '-0', '-2.5', '1e400', '00', '1.', '.5', '"5"', 'null', 'true', '1e', '-', '+1', 'NaN', '1e-400', '0x10']
const BAD_INSTANTS = (ms: number) => [
  formatUtcInstant(ms).replace('Z', '.000Z'), formatUtcInstant(ms).replace('Z', '+00:00'), formatUtcInstant(ms).toLowerCase(),
  formatUtcInstant(ms + 7 * 60_000), formatUtcInstant(ms + 900_000), formatUtcInstant(ms - 86_400_000), '2027-02-30T00:00:00Z', '', 'x'.repeat(20),
  formatUtcInstant(ms).replace('T', ' '), formatUtcInstant(ms + 1),
]

function makeCase (rng: Rng): Case {
  const faults: string[] = []
  const targetDate = pick(rng, ['2026-12-01', '2027-03-28', '2027-10-31', '2027-06-15'])
  const cov = coverageOf(targetDate)
  const dayStart = Date.parse(cov.startUtc)
  const nowMs = dayStart - 10 * 3_600_000
  const emittedAt = formatUtcInstant(nowMs - 3_600_000 + rng.int(4) * 1000)
  const siteCount = 1 + rng.int(3)
  const duration = rng.chance(0.9) ? 900 : 1800
  const per = cov.slots * 900 / duration
  /** `count` contiguous slots from the day's slot `first` (negative: before the day). */
  const slotsFrom = (first: number, count: number): Node[] => Array.from({ length: count }, (_, j) => {
    const at = dayStart + (first + j) * duration * 1000
    return { fields: [['debut_utc', q(formatUtcInstant(at))], ['fin_utc', q(formatUtcInstant(at + duration * 1000))], ['energie_kwh', pick(rng, ENERGIES)]] }
  })
  const sites: Array<{ fields: Array<[string, Node]> }> = []
  for (let s = 0; s < siteCount; s++) {
    const first = rng.chance(0.5) ? 0 : rng.int(per)
    const count = rng.chance(0.1) ? 0 : 1 + rng.int(Math.min(12, per - first))
    sites.push({ fields: [['site_id', q(siteId(s + 1))], ['site_name', q(`Depot ${s + 1}`)], ['energie_programmee', slotsFrom(first, count)]] })
  }
  const envelope: { fields: Array<[string, Node]> } = {
    fields: [
      ['schema_version', q('v0.2')], ['type', q('programme_soutirage')], ['emitted_by', q('Campaign BSP')],
      ['emitted_at', q(emittedAt)], ['target_date', q(targetDate)], ['slot_duration_secs', String(duration)], ['sites', sites],
    ],
  }
  let opts: CheckOptions = { maxSites: 5000, requireContiguous: rng.chance(0.5) }
  let ctx: CheckContext = { perimeter: 'all', provenance, nowMs }
  let style: Style = { indent: '', colon: ':' }
  let latin1 = false
  let after = (text: string) => text

  const isObject = (x: Node | undefined): x is { fields: Array<[string, Node]> } => typeof x === 'object' && !Array.isArray(x)
  const slotList = (site: { fields: Array<[string, Node]> }) => { const l = site.fields.find(f => f[0] === 'energie_programmee')?.[1]; return Array.isArray(l) ? l : undefined }
  const aSlot = () => { const all = sites.flatMap(s => slotList(s) ?? []).filter(isObject); return all.length ? all[rng.int(all.length)] : undefined }
  const aSite = () => sites[rng.int(sites.length)]!
  const aSlotList = () => slotList(aSite())

  const FAULTS: Array<[string, () => void]> = [
    ['indented', () => { style = { indent: pick(rng, ['  ', '\t', ' ']), colon: pick(rng, [': ', ':', ' : ']) } }],
    ['fields reordered', () => { const o = pick(rng, [envelope, aSite(), aSlot() ?? envelope]); o.fields.reverse() }],
    ['a bad number', () => { const s = aSlot(); if (s) s.fields[2] = ['energie_kwh', pick(rng, BAD_NUMBERS)] }],
    ['a bad instant', () => {
      const s = aSlot()
      const f = rng.int(2)
      const ms = s ? Date.parse(JSON.parse(s.fields[f]![1] as string)) : NaN
      if (ms === ms) s!.fields[f] = [s!.fields[f]![0], q(pick(rng, BAD_INSTANTS(ms)))]
    }],
    ['a slot removed', () => { const l = aSlotList(); if (l && l.length > 2) l.splice(1 + rng.int(l.length - 2), 1) }],
    ['a slot twice', () => { const l = aSlotList(); if (l && l.length) { const k = rng.int(l.length); l.splice(k, 0, l[k]!) } }],
    ['two slots swapped', () => { const l = aSlotList(); if (l && l.length > 1) { const k = rng.int(l.length - 1); [l[k], l[k + 1]] = [l[k + 1]!, l[k]!] } }],
    ['a field twice', () => { const o = pick(rng, [envelope, aSite(), aSlot() ?? envelope]); const f = o.fields[rng.int(o.fields.length)]!; o.fields.push([f[0], f[1]]) }],
    ['a field twice, another value', () => { const s = aSlot(); if (s) s.fields.push(['energie_kwh', '7']) }],
    ['a field missing', () => { const o = pick(rng, [envelope, aSite(), aSlot() ?? envelope]); o.fields.splice(rng.int(o.fields.length), 1) }],
    ['an extra field', () => { const o = pick(rng, [envelope, aSite(), aSlot() ?? envelope]); o.fields.splice(rng.int(o.fields.length + 1), 0, [pick(rng, ['note', '__proto__', 'constructor', 'Site_id']), pick(rng, ['1', '{}', '{"prototype":{}}', '"x"', '[]'])]) }],
    ['a string escaped', () => { const s = aSite(); s.fields[1] = ['site_name', pick(rng, ['"D\\u00e9p\\u00f4t"', '"a\\"b"', '"\\\\"', '"tab\\t"'])] }],
    ['a name in UTF-8', () => { const s = aSite(); s.fields[1] = ['site_name', q(pick(rng, ['Dépôt', '倉庫 🚚', '\u2028']))] }],
    ['a byte that is not UTF-8', () => { const s = aSite(); s.fields[1] = ['site_name', '"D\xe9p\xf4t"']; latin1 = true }],
    ['a control character in a string', () => { const s = aSite(); s.fields[1] = ['site_name', '"a\u0001b"'] }],
    ['a bad site id', () => { const s = aSite(); s.fields[0] = ['site_id', pick(rng, [q('PRM123'), q(siteId(1)), '12', q('prm30000000000001')])] }],
    ['a site outside the perimeter', () => { ctx = { ...ctx, perimeter: [siteId(2), siteId(3)] } }],
    ['a site not managed', () => { ctx = { ...ctx, managed: new Set([siteId(1)]) } }],
    ['a bound below the energies', () => { opts = { ...opts, maxSiteKw: pick(rng, [10, 100, 240]) } }],
    ['another slot length', () => { envelope.fields[5] = ['slot_duration_secs', pick(rng, ['1800', '900.0', '900.5', '0', '-900', '9e2', '"900"', '1e400'])] }],
    ['an envelope value', () => {
      const [k, v] = pick(rng, [['schema_version', '"v0.1"'], ['type', '"programme"'], ['emitted_by', '""'], ['emitted_at', q(formatUtcInstant(nowMs + 3_600_000))],
        ['emitted_at', '"2027-01-01T00:00:00.5Z"'], ['emitted_at', '"2026-11-30T10:00:00+01:00"'], ['target_date', '"2020-01-01"'], ['target_date', '"2027-02-30"'],
        ['target_date', q('2026-12-02')], ['sites', '[]'], ['sites', '{}'], ['emitted_by', '42']] as Array<[string, string]>)
      const f = envelope.fields.find(x => x[0] === k)
      if (f) f[1] = v
    }],
    ['the day before today', () => { ctx = { ...ctx, nowMs: nowMs + 3 * 86_400_000 } }],
    ['no object', () => { after = () => pick(rng, ['', '[]', '"programme"', '42', 'null']) }],
    ['cut short', () => { after = text => text.slice(0, rng.int(text.length)) }],
    ['text after it', () => { after = text => text + pick(rng, ['x', ' ', '\n', '{}', ',']) }],
    ['space before it', () => { after = text => pick(rng, [' ', '\n\t', '\uFEFF']) + text }],
    ['a slot not an object', () => { const l = aSlotList(); if (l && l.length) l[rng.int(l.length)] = pick(rng, ['null', '[]', '"slot"', '1']) }],
    ['slots past the day\'s end', () => { aSite().fields[2] = ['energie_programmee', slotsFrom(per - 1 - rng.int(3), 2 + rng.int(3))] }],
    ['slots before the day\'s start', () => { aSite().fields[2] = ['energie_programmee', slotsFrom(-1 - rng.int(3), 2 + rng.int(5))] }],
    ['no slots', () => { const s = aSite(); s.fields[2] = ['energie_programmee', pick(rng, ['[]', 'null', '{}'])] }],
  ]
  const n = rng.chance(0.4) ? 0 : 1 + rng.int(2)
  for (let f = 0; f < n; f++) {
    const [name, apply] = pick(rng, FAULTS)
    faults.push(name)
    apply()
  }
  return { text: after(render(envelope, style)), latin1, opts, ctx, faults }
}
