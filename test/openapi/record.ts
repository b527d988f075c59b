/**
 * Real runs for the description's examples: activates the plugin as the tests do (real
 * TLS, real LMDB in a temp folder, the reference host on a fixed clock), makes one request
 * per status of each operation and records what came back. The clock, the sites and the
 * base URL are fixed, so two runs record the same bytes (the committed file is compared).
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { startEpx, type TestRequest } from '../helpers/epx.ts'
import { programme } from '../helpers/programme.ts'
import { EVENTS_PATH, INBOUND_PATH, OUTBOUND_PATH, REALISE_PATH, SITES_PATH } from '../../src/http/route.ts'
import { openEvents } from '../../src/store/events.ts'

/** `{base_url}` in the examples (problem `type`s). */
export const EXAMPLE_BASE_URL = 'https://epx.example.com'
/** The body limit while recording, so the 413 example stays small. */
const RECORD_MAX_BODY = 16_384

export interface Recorded {
  /** Operation key: `GET`, `HEAD`, `POST`, or `other` (unknown path, other method). */
  readonly operation: 'GET' | 'HEAD' | 'POST' | 'GET status' | 'HEAD status' | 'GET realise' | 'HEAD realise' | 'GET sites' | 'HEAD sites' | 'GET page' | 'HEAD page' | 'GET evenements' | 'other'
  /** What this example shows, e.g. `notPublished`. */
  readonly name: string
  readonly summary: string
  readonly request: { readonly method: string; readonly path: string; readonly headers: Record<string, string>; readonly body?: unknown }
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body?: unknown
  /** For an accepted request: what its body is an example of, e.g. `oneSite`. */
  readonly requestName?: string
  readonly requestSummary?: string
}

/** Headers that change with every run or say nothing about the API. */
const UNRECORDED = new Set(['date', 'connection', 'keep-alive', 'content-length'])

export async function recordExamples (): Promise<Recorded[]> {
  const dir = mkdtempSync(join(tmpdir(), 'epx-openapi-'))
  const teardowns: Array<() => unknown> = []
  // startEpx wants a tap Test for its folder and teardown: these two are all it uses.
  const t = { testdir: () => dir, teardown: (f: () => unknown) => { teardowns.push(f) } } as unknown as Test
  try {
    return await record(t)
  } finally {
    for (const f of teardowns.reverse()) await f()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function record (t: Test): Promise<Recorded[]> {
  const epx = await startEpx(t, {
    sites: 1,
    checkResponses: false,   // the description is what is being made
    config: { api: { publicBaseUrl: EXAMPLE_BASE_URL, rateLimit: {} }, inbound: { maxBodyBytes: RECORD_MAX_BODY } },
  })
  const { cert } = await epx.addCompany('acme')
  const { secret: outbound } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const { secret: inbound } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const { secret: realise } = await epx.addToken('acme', ['outbound:realise'])
  const { secret: evenements } = await epx.addToken('acme', ['outbound:evenements'])
  const { cert: suspendedCert } = await epx.addCompany('dormant', { status: 'suspended' })
  const { secret: suspended } = await epx.addToken('dormant', ['outbound:besoins-agreges', 'inbound:programme-soutirage'])
  const site = 'PRM30000000000001'
  const day = '2026-11-22'
  await epx.handle.publish({ targetDate: day })

  const out: Recorded[] = []
  const go = async (operation: Recorded['operation'], name: string, summary: string, r: TestRequest) => {
    const res = await epx.request(r)
    const url = new URL(r.path, 'https://x')
    for (const [k, v] of Object.entries(r.query ?? {})) url.searchParams.set(k, v)
    const headers: Record<string, string> = {}
    if (r.token !== undefined) headers.authorization = 'Bearer <token>'
    if (r.body !== undefined && typeof r.body === 'object') headers['content-type'] = 'application/json'
    Object.assign(headers, r.headers)
    const resHeaders = Object.fromEntries(Object.entries(res.headers).filter(([k]) => !UNRECORDED.has(k)).sort(([a], [b]) => a.localeCompare(b)))
    out.push({
      operation, name, summary,
      request: { method: r.method ?? 'GET', path: url.pathname + url.search, headers, ...(typeof r.body === 'object' ? { body: r.body } : r.body !== undefined ? { body: String(r.body).slice(0, 200) } : {}) },
      status: res.status,
      headers: resHeaders,
      ...(res.text === '' ? {} : { body: /json/.test(res.headers['content-type'] ?? '') ? res.json() : res.text }),
    })
    return res
  }
  const get = (query: Record<string, string>, o: Partial<TestRequest> = {}): TestRequest =>
    ({ method: 'GET', path: OUTBOUND_PATH, query, cert, token: outbound, ...o })
  const pair = { site_id: site, target_date: day }

  const ok = await go('GET', 'latest', 'The latest revision of a site and day', get(pair))
  await go('GET', 'notModified', 'If-None-Match with the ETag last received: nothing new', get(pair, { headers: { 'if-none-match': ok.headers.etag! } }))
  await go('GET', 'notModifiedSince', 'If-Modified-Since with the Last-Modified last received', get(pair, { headers: { 'if-modified-since': ok.headers['last-modified']! } }))
  await go('GET', 'invalidQuery', 'site_id not a PRM, target_date not a calendar date', get({ site_id: 'PRM123', target_date: '2026-02-30' }))
  await go('GET', 'noToken', 'No Authorization header', get(pair, { token: undefined }))
  await go('GET', 'invalidToken', 'A token unknown, expired or revoked', get(pair, { token: 'epx_' + 'A'.repeat(43) }))
  await go('GET', 'noCertificate', 'No client certificate', get(pair, { cert: null }))
  await go('GET', 'suspended', 'The company is suspended', get(pair, { cert: suspendedCert, token: suspended }))
  await go('GET', 'scopeDenied', 'A token without outbound:besoins-agreges', get(pair, { token: inbound }))
  await go('GET', 'notPublished', 'Nothing published for the pair (yet)', get({ site_id: site, target_date: '2026-11-23' }))

  // The events feed, after the company's first event (its perimeter, which retention may already have taken: it was added 30 days ago).
  const feed = (query: Record<string, string>, o: Partial<TestRequest> = {}): TestRequest =>
    ({ method: 'GET', path: EVENTS_PATH, query, cert, token: evenements, ...o })
  const events = await go('GET evenements', 'evenements', 'Your events after a cursor: the publication of a site of your perimeter', feed({ apres: '000000000000001', limite: '100' }))
  await go('GET evenements', 'nothingNew', 'Nothing after the cursor (and attente=0, the default): the same cursor back', feed({ apres: events.json().suivant }))
  await go('GET evenements', 'invalidQuery', 'limite out of range, attente not a number of seconds', feed({ limite: '0', attente: 'soon' }))
  await go('GET evenements', 'noToken', 'No Authorization header', feed({}, { token: undefined }))
  await go('GET evenements', 'noCertificate', 'No client certificate', feed({}, { cert: null }))
  await go('GET evenements', 'scopeDenied', 'A token without outbound:evenements', feed({}, { token: outbound }))
  epx.faults.unavailable = true
  await go('GET evenements', 'storeUnavailable', 'The store cannot answer', feed({}))
  epx.faults.unavailable = false
  await go('other', 'methodNotAllowedEvenements', 'A method evenements does not serve', feed({}, { method: 'POST' }))
  // Retention 8 days on: every event so far is gone, and a cursor from before them expired.
  await openEvents(epx.store, { retentionDays: 7 }).prune(epx.clock.now().getTime() + 8 * 86_400_000)
  await go('GET evenements', 'cursorExpired', 'A cursor older than the oldest event kept: read the state again, then go on from suivant', feed({ apres: '000000000000001' }))
  epx.faults.unavailable = true
  await go('GET', 'storeUnavailable', 'The store cannot answer', get(pair))
  epx.faults.unavailable = false
  await go('HEAD', 'latest', 'The headers of GET, no body', get(pair, { method: 'HEAD' }))

  const body = programme({ targetDate: day, slots: 8, kwh: j => (j < 4 ? 2.5 : 0) })
  const post = (o: Partial<TestRequest> = {}): TestRequest =>
    ({ method: 'POST', path: INBOUND_PATH, cert, token: inbound, body, ...o })
  await go('POST', 'received', 'A programme for one site: one instruction persisted', post())
  // The clock stands at 2026-11-21T12:30Z: today's first two hours are over.
  await go('POST', 'late', 'A programme for today whose every period had begun before it was received: kept, never applied',
    post({ body: programme({ targetDate: '2026-11-21', slots: 8 }) }))
  const overBound = structuredClone(body)
  overBound.sites[0]!.energie_programmee[3]!.energie_kwh = 1e306
  await go('POST', 'aboveSanityBound', 'A slot whose power is above the sanity bound (inbound.maxSiteKw, 100,000 kW by default)', post({ body: overBound }))
  const broken = structuredClone(body)
  broken.sites[0]!.energie_programmee[1]!.debut_utc = '2026-11-21T23:20:00Z'
  broken.sites[0]!.energie_programmee[2]!.energie_kwh = -1
  delete (broken as Partial<typeof broken>).schema_version
  await go('POST', 'invalidProgramme', 'Every problem at once, keyed by JSON Pointer', post({ body: broken }))
  await go('POST', 'notJson', 'A body that is not JSON', post({ body: '{"schema_version": "v0.2",', headers: { 'content-type': 'application/json' } }))
  await go('POST', 'noToken', 'No Authorization header', post({ token: undefined }))
  await go('POST', 'invalidToken', 'A token unknown, expired or revoked', post({ token: 'epx_' + 'A'.repeat(43) }))
  await go('POST', 'noCertificate', 'No client certificate', post({ cert: null }))
  await go('POST', 'scopeDenied', 'A token without inbound:programme-soutirage', post({ token: outbound }))
  await go('POST', 'suspended', 'The company is suspended', post({ cert: suspendedCert, token: suspended }))
  await go('POST', 'tooLarge', `A body over the limit (inbound.maxBodyBytes, default 10 MiB; ${RECORD_MAX_BODY} bytes here)`, post({ body: { ...body, padding: 'x'.repeat(RECORD_MAX_BODY) } }))
  await go('POST', 'notJsonType', 'Content-Type other than application/json', post({ body: 'schema_version=v0.2', headers: { 'content-type': 'text/plain' } }))
  epx.faults.unavailable = true
  await go('POST', 'storeUnavailable', 'The store cannot answer: nothing was persisted, send it again', post())
  epx.faults.unavailable = false

  const status = (query: Record<string, string>, o: Partial<TestRequest> = {}): TestRequest =>
    ({ method: 'GET', path: INBOUND_PATH, query, cert, token: inbound, ...o })
  const read = await go('GET status', 'status', 'Your instructions for a day, newest first: one queued', status({ target_date: day }))
  await go('GET status', 'notModified', 'If-None-Match with the ETag last received: no status changed', status({ target_date: day }, { headers: { 'if-none-match': read.headers.etag! } }))
  await go('GET status', 'invalidQuery', 'target_date missing, site_id not a PRM', status({ site_id: 'PRM123' }))
  await go('GET status', 'noToken', 'No Authorization header', status({ target_date: day }, { token: undefined }))
  await go('GET status', 'noCertificate', 'No client certificate', status({ target_date: day }, { cert: null }))
  await go('GET status', 'scopeDenied', 'A token without inbound:programme-soutirage', status({ target_date: day }, { token: outbound }))
  epx.faults.unavailable = true
  await go('GET status', 'storeUnavailable', 'The store cannot answer', status({ target_date: day }))
  epx.faults.unavailable = false
  await go('HEAD status', 'status', 'The headers of the status read, no body', status({ target_date: day }, { method: 'HEAD' }))

  // The first two hours of the day have closed; their meter values are in (the last one short).
  epx.clock.set('2026-11-22T01:00:00Z')
  const report = await epx.handle.reportMetering(Array.from({ length: 8 }, (_, j) => ({
    siteId: site,
    startUtc: new Date(Date.parse('2026-11-21T23:00:00Z') + j * 900_000).toISOString(),
    endUtc: new Date(Date.parse('2026-11-21T23:15:00Z') + j * 900_000).toISOString(),
    kwh: j < 3 ? 2.6 : j === 3 ? 2.1 : j === 5 ? 0.4 : 0,
  })))
  if (report.accepted !== 8) throw new Error(`meter values refused: ${JSON.stringify(report.refused)}`)
  const realised = (query: Record<string, string>, o: Partial<TestRequest> = {}): TestRequest =>
    ({ method: 'GET', path: REALISE_PATH, query, cert, token: realise, ...o })
  const day0 = await go('GET realise', 'realise', 'The day so far: 8 slots metered, one short, one curtailment broken', realised(pair))
  await go('GET realise', 'notModified', 'If-None-Match with the ETag last received: no new meter value', realised(pair, { headers: { 'if-none-match': day0.headers.etag! } }))
  await go('GET realise', 'invalidQuery', 'site_id not a PRM, target_date missing', realised({ site_id: 'PRM123' }))
  await go('GET realise', 'noToken', 'No Authorization header', realised(pair, { token: undefined }))
  await go('GET realise', 'noCertificate', 'No client certificate', realised(pair, { cert: null }))
  await go('GET realise', 'scopeDenied', 'A token without outbound:realise', realised(pair, { token: outbound }))
  await go('GET realise', 'nothingToCompare', 'No programme of yours and no meter value for the site and day', realised({ site_id: site, target_date: '2026-11-20' }))
  epx.faults.unavailable = true
  await go('GET realise', 'storeUnavailable', 'The store cannot answer', realised(pair))
  epx.faults.unavailable = false
  await go('HEAD realise', 'realise', 'The headers of the realise read, no body', realised(pair, { method: 'HEAD' }))
  await go('other', 'methodNotAllowedRealise', 'A method realise does not serve', realised(pair, { method: 'POST' }))

  // A company of two sites, added before acme (so it, not acme's "all sites", holds them: DECISIONS.md
  // "Tenure"), added last so the reads above are acme's: its perimeter read, with a token of any scope.
  const { cert: pairCert } = await epx.addCompany('pair', { perimeter: [site, 'PRM30000000000002'], since: '2026-10-01T00:00:00Z' })
  const { secret: pairToken } = await epx.addToken('pair', ['outbound:realise'])
  const sites = (o: Partial<TestRequest> = {}): TestRequest => ({ method: 'GET', path: SITES_PATH, cert: pairCert, token: pairToken, ...o })
  const perimeter = await go('GET sites', 'sites', 'Your company\'s sites, and since when it holds each', sites())
  await go('GET sites', 'notModified', 'If-None-Match with the ETag last received: the perimeter is unchanged', sites({ headers: { 'if-none-match': perimeter.headers.etag! } }))
  await go('GET sites', 'allSites', 'A perimeter of every site the service manages', sites({ cert, token: outbound }))
  await go('GET sites', 'noToken', 'No Authorization header', sites({ token: undefined }))
  await go('GET sites', 'noCertificate', 'No client certificate', sites({ cert: null }))
  await go('GET sites', 'suspended', 'The company is suspended', sites({ cert: suspendedCert, token: suspended }))
  epx.faults.unavailable = true
  await go('GET sites', 'storeUnavailable', 'The store cannot answer', sites())
  epx.faults.unavailable = false
  await go('HEAD sites', 'sites', 'The headers of the perimeter read, no body', sites({ method: 'HEAD' }))
  await go('other', 'methodNotAllowedSites', 'A method sites does not serve', sites({ method: 'POST' }))

  // A company whose budgets are one request (epx company limits): its second request of a kind is over budget.
  const { cert: hastyCert } = await epx.addCompany('hasty')
  await epx.companies.update('hasty', c => ({ ...c, rateLimit: { get: { perSecond: 1, burst: 1 }, post: { perSecond: 1, burst: 1 } } }))
  const { secret: hasty } = await epx.addToken('hasty', ['outbound:besoins-agreges', 'inbound:programme-soutirage', 'outbound:realise', 'outbound:evenements'])
  const asHasty = { cert: hastyCert, token: hasty }
  await epx.request(get(pair, asHasty))
  await go('GET', 'rateLimited', 'Over the company\'s GET budget: wait Retry-After', get(pair, asHasty))
  await go('GET status', 'rateLimited', 'Over the company\'s GET budget (the status read spends it too)', status({ target_date: day }, asHasty))
  await go('GET realise', 'rateLimited', 'Over the company\'s GET budget (the realise read spends it too)', realised(pair, asHasty))
  await go('GET sites', 'rateLimited', 'Over the company\'s GET budget (the perimeter read spends it too)', sites(asHasty))
  await go('GET evenements', 'rateLimited', 'Over the company\'s GET budget (the events feed spends it too)', feed({}, asHasty))
  await epx.request(post({ ...asHasty, body: undefined, headers: { 'content-type': 'text/plain' } }))
  await go('POST', 'rateLimited', 'Over the company\'s POST budget: refused before its body was read', post(asHasty))
  // A company whose storage quota is one byte a day (epx company limits --quota-bytes): any programme would cross it.
  const { cert: thriftyCert } = await epx.addCompany('thrifty')
  await epx.companies.update('thrifty', c => ({ ...c, quotaBytesPerDay: 1 }))
  const { secret: thrifty } = await epx.addToken('thrifty', ['inbound:programme-soutirage'])
  await go('POST', 'quotaExceeded', 'Over the company\'s storage quota of the day: refused whole; send nothing before Retry-After (the next Paris day)', post({ cert: thriftyCert, token: thrifty }))

  // A problem type's page: no certificate, no token.
  await go('GET page', 'page', 'The page of rate-limited', { path: '/errors/rate-limited', cert: null })
  await go('HEAD page', 'page', 'Its headers, no body', { method: 'HEAD', path: '/errors/rate-limited', cert: null })
  await go('other', 'methodNotAllowedPage', 'A method a problem type\'s page does not serve', { method: 'POST', path: '/errors/rate-limited', cert: null })
  await go('other', 'unknownPath', 'A path the API does not serve', { path: '/api/v0.5/energy-programs/unknown', cert, token: outbound })
  await go('other', 'methodNotAllowedOutbound', 'A method besoins-agreges does not serve', get(pair, { method: 'DELETE' }))
  await go('other', 'methodNotAllowedInbound', 'A method programme-soutirage does not serve', post({ method: 'DELETE', body: undefined }))
  await epx.close()
  return out.map(r => r.name === 'tooLarge' ? { ...r, request: { ...r.request, body: '(a body over the limit)' } }
    : r.operation === 'POST' && r.name === 'received'
      ? { ...r, requestName: 'oneSite', requestSummary: 'One site, the first two hours of its day programmed: 2.5 kWh per quarter-hour for an hour, then 0 (a curtailment)' }
      : r.operation === 'POST' && r.name === 'late'
        ? { ...r, requestName: 'todayTooLate', requestSummary: 'Today\'s first two hours, sent at 12:30Z: every period had begun (answered `late`)' }
        : r)
}
