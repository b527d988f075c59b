/**
 * Row 2: property-based fuzz of POST bodies (fast-check) against a running daemon. Bodies
 * are arbitrary JSON, or a valid programme with one thing changed (a value's type, a field
 * removed, a big number, deep nesting, unicode, a `__proto__` key, a huge array within the
 * body limit). The property (DECISIONS.md "Inbound"): never a 5xx; every 400 is
 * `{ error: { code: 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST', message, details } }` whose
 * detail keys are `""` or JSON Pointers into the body; every 202 is for a body that keeps
 * the contract's rules (checked here by a reading of the contract independent of epx's),
 * the sanity bound on a slot's power included: above it, a 400 is the promise kept.
 * @module
 */
import fc from 'fast-check'
import { request } from 'undici'
import { INBOUND_PATH, programme, siteId, type Body } from '../helpers/programme.ts'
import { agentFor, pool, seedDataDir, startHost, targetDate, tempDir } from './daemon.ts'
import { info, zero, type Figure } from './report.ts'

export interface FuzzOptions {
  readonly requests: number
  readonly connections?: number
  readonly seed?: number
  readonly budgetMs: number
}

export interface FuzzResult {
  readonly requests: number
  readonly seed: number
  readonly statuses: Record<string, number>
  readonly serverErrors: number
  readonly malformedErrors: number
  readonly acceptedInvalid: number
  readonly transportErrors: number
  readonly examples: string[]
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }

/** Every path of a JSON value, as token lists (the root included). */
function paths (v: unknown, at: string[] = [], out: string[][] = []): string[][] {
  out.push(at)
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...at, String(i)], out))
  else if (v && typeof v === 'object') for (const k of Object.keys(v)) paths((v as Record<string, unknown>)[k], [...at, k], out)
  return out
}

/** Deep nesting is spliced in as text (JSON.stringify itself would overflow its stack). */
const DEEP = '\u0001deep:'
const deep = (depth: number): Json => DEEP + depth
const spliceDeep = (text: string): string =>
  text.replace(/"\\u0001deep:(\d+)"/g, (_, n: string) => '['.repeat(Number(n)) + '1' + ']'.repeat(Number(n)))

/** Values a mutated field takes. */
const odd: fc.Arbitrary<Json> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>,
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  // 1e306 kWh: an infinite floor once in kW; 25,000.01 kWh a quarter-hour: just above the sanity bound.
  fc.constantFrom<Json>(1e308, 1e306, 25_000.01, -1e308, 2 ** 53 + 1, -0, 1e-320, 0.1, -1, 900.5, '', ' ', 'v0.2', 'PRM3000000000000１',
    '2026-02-30', '2026-11-22T00:00:00+01:00', '0099-01-01T00:00:00Z', '2026-11-21T23:00:00.123456789Z', '\u0000', '\ud800', '𝟘𝟙'),
  fc.integer({ min: 1, max: 20_000 }).map(deep),
)

type Mutation = { kind: 'replace' | 'delete' | 'huge' | 'proto'; at: number; value: Json }

function applyMutation (valid: Body, m: Mutation): string {
  // fast-check may map one generated value more than once: never change it in place.
  const body = structuredClone(valid)
  const all = paths(body).filter(p => p.length > 0)
  const path = all[m.at % all.length]!
  const parent = path.slice(0, -1).reduce<any>((o, k) => o[k], body)
  const key = path.at(-1)!
  if (m.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(Number(key), 1)
    else delete parent[key]
  } else if (m.kind === 'huge') {
    // An array far over any count limit, still well inside the 10 MiB body limit.
    const small = typeof m.value !== 'object' && JSON.stringify(m.value).length < 64 && !String(m.value).startsWith(DEEP)
    parent[key] = Array.from({ length: 6000 }, (_, i) => small ? m.value : i)
  } else if (m.kind === 'replace') {
    parent[key] = m.value
  }
  const text = spliceDeep(JSON.stringify(body))
  if (m.kind !== 'proto') return text
  // JSON.stringify never writes a `__proto__` key: splice one in after an opening brace.
  const braces = [...text.matchAll(/\{/g)].map(x => x.index!)
  const i = braces[m.at % braces.length]! + 1
  return `${text.slice(0, i)}"__proto__":${spliceDeep(JSON.stringify(m.value))},"constructor":{"prototype":{"polluted":true}}${text[i] === '}' ? '' : ','}${text.slice(i)}`
}

export function bodies (day: string): fc.Arbitrary<string> {
  const valid = fc.record({
    sites: fc.integer({ min: 1, max: 3 }),
    slots: fc.integer({ min: 0, max: 8 }),
    second: fc.integer({ min: 0, max: 86_399 }),
  }).map(o => programme({
    targetDate: day, sites: Array.from({ length: o.sites }, (_, i) => siteId(i + 1)), slots: o.slots,
    // Yesterday (UTC): never ahead of the server's clock (inbound.maxClockSkewSeconds).
    emittedAt: new Date(Date.parse(`${day}T00:00:00Z`) - 2 * 86_400_000 + o.second * 1000).toISOString(),
  }))
  const mutation: fc.Arbitrary<Mutation> = fc.record({
    kind: fc.constantFrom('replace', 'replace', 'replace', 'delete', 'huge', 'proto'),
    at: fc.nat(),
    value: odd,
  })
  return fc.oneof(
    { weight: 2, arbitrary: fc.oneof(fc.json({ maxDepth: 4 }), fc.integer({ min: 1, max: 20_000 }).map(n => spliceDeep(JSON.stringify(deep(n))))) },
    { weight: 1, arbitrary: valid.map(b => JSON.stringify(b)) },
    { weight: 7, arbitrary: fc.tuple(valid, mutation).map(([b, m]) => applyMutation(b, m)) },
  )
}

/** RFC 6901: a pointer resolves when each token names an own member (the last may be the missing field). */
function pointsIntoBody (pointer: string, body: unknown): boolean {
  if (pointer === '') return true
  if (!pointer.startsWith('/')) return false
  const tokens = pointer.slice(1).split('/').map(t => t.replace(/~1/g, '/').replace(/~0/g, '~'))
  let at: unknown = body
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!
    const own = at !== null && typeof at === 'object' && Object.hasOwn(at, t) && (!Array.isArray(at) || /^(0|[1-9]\d*)$/.test(t))
    if (!own) return i === tokens.length - 1 && at !== null && typeof at === 'object'
    at = (at as Record<string, unknown>)[t]
  }
  return true
}

export function wellFormedError (text: string, sent: string): string | undefined {
  let parsed: any
  try { parsed = JSON.parse(text) } catch { return 'not JSON' }
  const e = parsed?.error
  if (!e || e.code !== 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST') return `code ${JSON.stringify(e?.code)}`
  if (typeof e.message !== 'string' || !e.message) return 'no message'
  if (!e.details || typeof e.details !== 'object' || Array.isArray(e.details)) return 'no details object'
  // DECISIONS.md "Inbound": what is wrong is in `details` (the body as a whole under "").
  if (!Object.keys(e.details).length) return 'empty details'
  let body: unknown
  try { body = JSON.parse(sent) } catch { body = undefined }
  for (const [k, v] of Object.entries(e.details)) {
    if (typeof v !== 'string' || !v) return `detail ${JSON.stringify(k)} has no message`
    if (body === undefined ? k !== '' : !pointsIntoBody(k, body)) return `detail key ${JSON.stringify(k)} does not point into the body`
  }
  return undefined
}

/**
 * DECISIONS.md "Inbound", sanity bound: `inbound.maxSiteKw` by default, which the
 * campaign's daemon keeps. Written here, not imported: the oracle reads the contract, not epx.
 */
const MAX_SITE_KW = 100_000

/** The contract's rules a 202 body must keep, read independently of epx's validator. */
export function breaksARule (sent: string): string | undefined {
  let b: any
  try { b = JSON.parse(sent) } catch { return 'not JSON' }
  if (!b || typeof b !== 'object' || Array.isArray(b)) return 'not an object'
  if (b.schema_version !== 'v0.2') return 'schema_version'
  if (b.type !== 'programme_soutirage') return 'type'
  if (typeof b.emitted_by !== 'string' || !b.emitted_by) return 'emitted_by'
  if (typeof b.emitted_at !== 'string' || !/Z$/.test(b.emitted_at)) return 'emitted_at'
  if (typeof b.target_date !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(b.target_date)) return 'target_date'
  if (!Number.isInteger(b.slot_duration_secs) || b.slot_duration_secs <= 0 || b.slot_duration_secs % 900) return 'slot_duration_secs'
  if (!Array.isArray(b.sites) || !b.sites.length) return 'sites'
  const ids = new Set<string>()
  for (const s of b.sites) {
    if (!s || typeof s.site_id !== 'string' || !/^PRM[0-9]{14}$/.test(s.site_id) || ids.has(s.site_id)) return 'site_id'
    ids.add(s.site_id)
    if (!Array.isArray(s.energie_programmee)) return 'energie_programmee'
    for (const slot of s.energie_programmee) {
      if (!slot || typeof slot.energie_kwh !== 'number' || !Number.isFinite(slot.energie_kwh) || slot.energie_kwh < 0) return 'energie_kwh'
      if (slot.energie_kwh * 3600 / b.slot_duration_secs > MAX_SITE_KW) return 'energie_kwh (power above inbound.maxSiteKw)'
      if (typeof slot.debut_utc !== 'string' || typeof slot.fin_utc !== 'string') return 'debut_utc/fin_utc'
    }
  }
  return undefined
}

export async function fuzz (o: FuzzOptions): Promise<FuzzResult> {
  const dataDir = tempDir('fuzz')
  const { bsp } = await seedDataDir(dataDir, [{ id: 'bsp' }])
  const day = targetDate()
  const seed = o.seed ?? Date.now() % 2 ** 31
  const host = await startHost({ dataDir, sites: 20 })
  const agent = agentFor(bsp.cert, o.connections ?? 8)
  const statuses: Record<string, number> = {}
  const examples: string[] = []
  let serverErrors = 0
  let malformedErrors = 0
  let acceptedInvalid = 0
  let transportErrors = 0
  let done = 0
  const deadline = Date.now() + o.budgetMs
  // A 5xx keeps its whole body (up to 64 KiB) in the JSON results: it is the bug's reproduction.
  const note = (what: string, sent: string, whole = false) => { if (examples.length < 5) examples.push(`${what}; body: ${sent.slice(0, whole ? 65_536 : 160)}`) }
  try {
    const arb = bodies(day)
    const CHUNK = 1000
    for (let c = 0; done < o.requests && Date.now() < deadline; c++) {
      const chunk = fc.sample(arb, { numRuns: Math.min(CHUNK, o.requests - done), seed: seed + c })
      await pool(chunk.length, o.connections ?? 8, async i => {
        const sent = chunk[i]!
        try {
          const res = await request(`${host.origin}${INBOUND_PATH}`, {
            method: 'POST', dispatcher: agent, body: sent,
            headers: { authorization: `Bearer ${bsp.inbound}`, 'content-type': 'application/json' },
            headersTimeout: 30_000, bodyTimeout: 30_000,
          })
          const text = await res.body.text()
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
          if (res.statusCode >= 500) { serverErrors++; note(`${res.statusCode} ${text.slice(0, 120)}`, sent, true) }
          if (res.statusCode === 400) {
            const why = wellFormedError(text, sent)
            if (why) { malformedErrors++; note(`400 ${why}: ${text.slice(0, 160)}`, sent) }
          }
          if (res.statusCode === 202) {
            const why = breaksARule(sent)
            if (why) { acceptedInvalid++; note(`202 although ${why} breaks a rule`, sent) }
          }
        } catch (err) {
          transportErrors++
          note(`transport: ${(err as Error).message}`, sent)
        }
      })
      done += chunk.length
      if (!host.child.alive) throw new Error(`the daemon died during the fuzz: ${host.child.stderrTail}`)
    }
  } finally {
    await agent.close().catch(() => {})
    await host.child.stop()
  }
  return { requests: done, seed, statuses, serverErrors, malformedErrors, acceptedInvalid, transportErrors, examples }
}

export function fuzzFigures (r: FuzzResult, minRequests: number): Figure[] {
  return [
    { name: 'requests (fast-check bodies)', value: r.requests, target: `≥ ${minRequests}`, met: r.requests >= minRequests },
    info('statuses', Object.entries(r.statuses).map(([k, v]) => `${k}×${v}`).join(' ')),
    zero('5xx answers', r.serverErrors),
    zero('400s not in the contract\'s error format', r.malformedErrors),
    zero('202s for a body that breaks a rule', r.acceptedInvalid),
    zero('transport errors (no answer)', r.transportErrors),
    info('seed (replay: --seed)', r.seed),
    ...r.examples.map((e, i) => info(`example ${i + 1}`, e)),
  ]
}
