/**
 * The BSP's side of the two calls, on undici: one keep-alive connection pool presenting
 * the BSP's client certificate, the Bearer token on every request, and each answer read
 * into what a BSP acts on (a document and its validators, "nothing new", "retry after
 * N s", a refusal with its code, or a service out of reach), for the contract's two calls
 * and the reads of its extensions (status, realise, sites). Nothing but a misuse of the
 * options is thrown. What to do with an answer (retry, wait, write) is pull.ts's and
 * push.ts's business.
 * @module
 */
import { Agent, request, type Dispatcher } from 'undici'
import type { BesoinsAgreges } from '../contract/besoins-agreges.ts'
import type { Receipt, ReceiptEntry } from '../contract/receipt.ts'
import type { StatusBody as ProgrammeStatus, StatusEntry as ProgrammeStatusEntry } from '../contract/programme-status.ts'
import type { Creneau, RealiseBody, Totaux, Verdict } from '../contract/realise.ts'
import type { SiteEntry, SitesBody } from '../contract/sites.ts'
import { EVENTS_PATH, INBOUND_PATH as PROGRAMME_PATH, OUTBOUND_PATH as BESOINS_PATH, REALISE_PATH, SITES_PATH } from '../contract/paths.ts'


export interface BspClientOptions {
  /** The service's base URL, e.g. `https://epx.example.com:8443`; a path in it (`https://gw.example.com/epx`) prefixes the API's paths. */
  readonly url: string | URL
  /** PEM: the BSP's client certificate and key, and the CA that signed the service's certificate. */
  readonly cert: string | Buffer
  readonly key: string | Buffer
  readonly ca?: string | Buffer
  /** The Bearer token (from a file or a secret store, never a command-line argument). */
  readonly token: string
  /** Connections kept open to the service (default 4). */
  readonly connections?: number
  /** The clock a Retry-After given as a date is counted from (default the system's). */
  readonly now?: () => Date
}

/**
 * The request never got an HTTP answer: the service out of reach, a TLS handshake that
 * failed (the service's certificate not signed by `ca`, your certificate refused), the
 * connection cut. Returned like every other outcome, never thrown: `detail` says which.
 */
export interface Unreachable { readonly kind: 'unreachable'; readonly code?: string; readonly detail: string }

/**
 * The service asks to come back later (503, 429 RATE_LIMITED or QUOTA_EXCEEDED, or 404
 * NOT_PUBLISHED for besoins-agreges), not before `retryAfterSecs`. QUOTA_EXCEEDED: your
 * company's storage quota of the Paris day is used up, and `retryAfterSecs` runs to the
 * next Paris day: send nothing before then (push.ts does not retry it).
 */
export interface Retry { readonly kind: 'retry'; readonly status: number; readonly code?: string; readonly retryAfterSecs?: number; readonly detail: string }

/**
 * The service refused the request: asking again as is will not change the answer. `code`
 * is the error's (e.g. UNKNOWN_PATH: a wrong URL), whichever of the two error formats carried
 * it; `details` maps a JSON Pointer into the body, or a query parameter, to what to fix.
 */
export interface Refused {
  readonly kind: 'refused'
  readonly status: number
  readonly code?: string
  readonly message: string
  readonly details: Readonly<Record<string, string>>
}

/** What GET besoins-agreges answered, as a BSP acts on it. */
export type BesoinsAnswer =
  | { readonly kind: 'document'; readonly document: BesoinsAgreges; readonly text: string; readonly etag?: string; readonly lastModified?: string }
  | { readonly kind: 'unchanged'; readonly etag?: string; readonly lastModified?: string }
  | Retry
  | (Refused & { readonly detail: string; readonly body?: unknown })
  | Unreachable

/** What POST programme-soutirage answered. */
export type ProgrammeAnswer =
  | { readonly kind: 'received'; readonly receipt: Receipt }
  | Retry
  | Refused
  | Unreachable

/** What GET programme-soutirage (the status read, an extension of the contract) answered. */
export type StatusAnswer =
  | { readonly kind: 'status'; readonly status: ProgrammeStatus; readonly etag?: string }
  | { readonly kind: 'unchanged'; readonly etag?: string }
  | Retry
  | Refused
  | Unreachable

/** What GET realise (programme against delivery, an extension of the contract) answered. */
export type RealiseAnswer =
  | { readonly kind: 'realise'; readonly realise: RealiseBody; readonly etag?: string }
  | { readonly kind: 'unchanged'; readonly etag?: string }
  | Retry
  | Refused
  | Unreachable

/** What GET sites (your company's perimeter, an extension of the contract) answered. */
export type SitesAnswer =
  | { readonly kind: 'sites'; readonly sites: SitesBody; readonly etag?: string }
  | { readonly kind: 'unchanged'; readonly etag?: string }
  | Retry
  | Refused
  | Unreachable

/** One event of the feed (DECISIONS.md "Events for BSPs"): its id, type and instant, and its type's members. */
export interface BspEvent {
  readonly id: string
  readonly type: 'besoins_agreges.publie' | 'instruction.statut' | 'realise.modifie' | 'perimetre.modifie'
  readonly occurred_at: string
  readonly [member: string]: unknown
}

/** What GET evenements (the events feed, an extension of the contract) answered. */
export type EventsAnswer =
  | { readonly kind: 'events'; readonly events: readonly BspEvent[]; readonly next: string }
  /** 410 CURSOR_EXPIRED: events were missed. Read the state again, then go on from `next`. */
  | { readonly kind: 'expired'; readonly next: string; readonly oldest?: string; readonly message: string }
  | Retry
  | Refused
  | Unreachable

export interface BspClient {
  /** GET besoins-agreges; `etag`/`lastModified` of the last 200 make it conditional. */
  getBesoins(q: { siteId: string; targetDate: string; etag?: string; lastModified?: string }): Promise<BesoinsAnswer>
  /** POST programme-soutirage with the body as given (text or a value to serialize). */
  postProgramme(body: string | object): Promise<ProgrammeAnswer>
  /** GET programme-soutirage: what became of your programmes for a day; `etag` of the last answer makes it conditional. */
  getProgrammeStatus(q: { targetDate: string; siteId?: string; etag?: string }): Promise<StatusAnswer>
  /** GET realise: a site's day, programmed against delivered; `etag` of the last answer makes it conditional. */
  getRealise(q: { siteId: string; targetDate: string; etag?: string }): Promise<RealiseAnswer>
  /** GET sites: your company's perimeter, with since when it holds each site (any token of the company); `etag` of the last answer makes it conditional. */
  getSites(q?: { etag?: string }): Promise<SitesAnswer>
  /** GET evenements: your events after `after` (absent: the oldest kept); with `waitSecs`, the answer waits that long for one. */
  getEvents(q: { after?: string; limit?: number; waitSecs?: number }): Promise<EventsAnswer>
  close(): Promise<void>
}

export type { BesoinsAgreges, BesoinsSite, JalonBesoin, PuissanceDisponible } from '../contract/besoins-agreges.ts'
export type { Receipt, ReceiptEntry, ProgrammeStatus, ProgrammeStatusEntry, RealiseBody, Creneau, Totaux, Verdict, SitesBody, SiteEntry }

type Headers = Record<string, string | string[] | undefined>
interface Answer { readonly status: number; readonly headers: Headers; readonly text: string }

export function createBspClient (opts: BspClientOptions): BspClient {
  const base = checkOptions(opts)
  // A service behind a reverse proxy under a path (`https://gw.example.com/epx`) keeps it:
  // the API's paths are appended to the base URL's path, not put in its place. Every call
  // builds its URL here, so none can drop it.
  const prefix = base.pathname.replace(/\/+$/, '')
  const endpoint = (path: string, query: Record<string, string | undefined> = {}) => {
    const url = new URL(prefix + path, base.origin)
    for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, value)
    return url
  }
  const agent: Dispatcher = new Agent({
    connections: opts.connections ?? 4,
    connect: { cert: opts.cert, key: opts.key, ...(opts.ca ? { ca: opts.ca } : {}) },
  })
  const auth = `Bearer ${opts.token}`
  const now = opts.now ?? (() => new Date())

  /** One request; a failure before any HTTP answer (network, TLS) is returned, as the others. */
  async function call (url: URL, o: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string }): Promise<Answer | Unreachable> {
    try {
      const res = await request(url, { ...o, headers: { authorization: auth, ...o.headers }, dispatcher: agent })
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() }
    } catch (err) {
      return unreachable(err)
    }
  }

  /** An answer without its document: the service asks to retry (503, or 429 over the company's request budget or storage quota), or refuses. */
  const failed = (a: Answer): Retry | Refused => {
    const e = readError(a)
    if (a.status === 503 || a.status === 429) return { kind: 'retry', status: a.status, code: e.code, retryAfterSecs: retryAfter(a.headers, now()), detail: e.message }
    return { kind: 'refused', status: a.status, code: e.code, message: e.message, details: e.details }
  }

  const conditional = (etag?: string): Record<string, string> => ({ accept: 'application/json', ...(etag ? { 'if-none-match': etag } : {}) })

  /** A conditional GET of an extension's read (status, realise): its document, a 304, or why not. */
  async function read<A> (url: URL, etag: string | undefined, found: (body: unknown, etag?: string) => A): Promise<A | { kind: 'unchanged'; etag?: string } | Retry | Refused | Unreachable> {
    const a = await call(url, { method: 'GET', headers: conditional(etag) })
    if (!('status' in a)) return a
    const tag = header(a.headers, 'etag')
    if (a.status === 304) return { kind: 'unchanged', etag: tag }
    if (a.status !== 200) return failed(a)
    const body = readJson(a.text)
    return body === undefined ? notJson(a) : found(body, tag)
  }

  return {
    async getBesoins (q) {
      const headers = conditional(q.etag)
      // If-None-Match wins on the server; If-Modified-Since helps only without an ETag.
      if (!q.etag && q.lastModified) headers['if-modified-since'] = q.lastModified
      const a = await call(endpoint(BESOINS_PATH, { site_id: q.siteId, target_date: q.targetDate }), { method: 'GET', headers })
      if (!('status' in a)) return a
      const etag = header(a.headers, 'etag')
      const lastModified = header(a.headers, 'last-modified')
      if (a.status === 200) {
        const document = readJson(a.text)
        return document === undefined ? notJson(a) : { kind: 'document', document: document as BesoinsAgreges, text: a.text, etag, lastModified }
      }
      if (a.status === 304) return { kind: 'unchanged', etag, lastModified }
      const e = readError(a)
      // A 404 is "not yet" only as NOT_PUBLISHED (or without a code, from an older service):
      // UNKNOWN_PATH is a wrong URL, never worth a retry.
      if ((a.status === 404 && (e.code === undefined || e.code === 'NOT_PUBLISHED')) || a.status === 503 || a.status === 429) {
        return { kind: 'retry', status: a.status, code: e.code, retryAfterSecs: retryAfter(a.headers, now()), detail: e.message }
      }
      return { kind: 'refused', status: a.status, code: e.code, message: e.message, details: e.details, detail: e.message, body: readJson(a.text) }
    },

    async postProgramme (body) {
      const a = await call(endpoint(PROGRAMME_PATH), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      })
      if (!('status' in a)) return a
      if (a.status === 202) {
        const receipt = readJson(a.text)
        return receipt === undefined ? notJson(a) : { kind: 'received', receipt: receipt as Receipt }
      }
      return failed(a)
    },

    getProgrammeStatus: q => read(endpoint(PROGRAMME_PATH, { target_date: q.targetDate, site_id: q.siteId }), q.etag,
      (status, etag): StatusAnswer => ({ kind: 'status', status: status as ProgrammeStatus, etag })),

    getRealise: q => read(endpoint(REALISE_PATH, { site_id: q.siteId, target_date: q.targetDate }), q.etag,
      (realise, etag): RealiseAnswer => ({ kind: 'realise', realise: realise as RealiseBody, etag })),

    getSites: (q = {}) => read(endpoint(SITES_PATH), q.etag,
      (sites, etag): SitesAnswer => ({ kind: 'sites', sites: sites as SitesBody, etag })),
    async getEvents (q) {
      const a = await call(endpoint(EVENTS_PATH, {
        apres: q.after, limite: q.limit === undefined ? undefined : String(q.limit), attente: q.waitSecs === undefined ? undefined : String(q.waitSecs),
      }), { method: 'GET', headers: { accept: 'application/json' } })
      if (!('status' in a)) return a
      const body = readJson(a.text) as { evenements?: BspEvent[]; suivant?: string; oldest_id?: string; code?: string; detail?: string } | undefined
      if (a.status === 200) return body && Array.isArray(body.evenements) && typeof body.suivant === 'string' ? { kind: 'events', events: body.evenements, next: body.suivant } : notJson(a)
      if (a.status === 410 && body?.code === 'CURSOR_EXPIRED' && typeof body.suivant === 'string') {
        return { kind: 'expired', next: body.suivant, ...(body.oldest_id ? { oldest: body.oldest_id } : {}), message: body.detail ?? 'the cursor expired' }
      }
      return failed(a)
    },

    close: () => agent.close(),
  }
}

/**
 * The options as a JavaScript caller may pass them (no compiler to check them): each
 * mistake named with what to give, before any connection is tried.
 */
function checkOptions (opts: BspClientOptions): URL {
  const problem = (what: string) => new TypeError(`createBspClient: ${what}`)
  if (typeof opts !== 'object' || opts === null) throw problem('give the options { url, cert, key, ca, token }')
  if (opts.url === undefined || opts.url === '') throw problem('options.url is missing: give the service\'s base URL, e.g. https://epx.example.com:8443')
  const url = opts.url instanceof URL ? opts.url : URL.canParse(String(opts.url)) ? new URL(String(opts.url)) : undefined
  if (!url || url.protocol !== 'https:') throw problem(`options.url ${JSON.stringify(String(opts.url))} is not an https:// URL, e.g. https://epx.example.com:8443`)
  if (url.search || url.hash) throw problem(`options.url ${url.href} has a query or a fragment: give the base URL only (a path is kept as a prefix)`)
  for (const name of ['cert', 'key'] as const) {
    const v = opts[name]
    if (!(typeof v === 'string' || Buffer.isBuffer(v)) || v.length === 0) throw problem(`options.${name} is missing: give your client ${name === 'cert' ? 'certificate' : 'private key'}, PEM (a string or a Buffer, e.g. readFileSync('client.${name === 'cert' ? 'crt' : 'key'}'))`)
  }
  if (opts.ca !== undefined && !(typeof opts.ca === 'string' || Buffer.isBuffer(opts.ca))) throw problem('options.ca must be PEM, a string or a Buffer (or left out for the system\'s CAs)')
  if (typeof opts.token !== 'string' || opts.token.trim() === '') throw problem('options.token is missing: give the Bearer token, read from a file or a secret store')
  if (opts.connections !== undefined && !(Number.isInteger(opts.connections) && opts.connections > 0)) throw problem(`options.connections ${String(opts.connections)} is not a positive whole number`)
  return url
}

/** What a failed request's error says, from whichever transport failed (undici, TLS, the system). */
function unreachable (err: unknown): Unreachable {
  const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } }
  const code = typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : undefined
  const message = typeof e?.message === 'string' && e.message ? e.message : String(err)
  const detail = code && !message.includes(code) ? `${code}: ${message}` : message
  return code ? { kind: 'unreachable', code, detail } : { kind: 'unreachable', detail }
}

/**
 * An error answer's code, message and details, from either of the API's two formats: the
 * inbound `{ error: { code, message, details } }` and problem+json (RFC 9457: `code`,
 * `detail`, `invalid_params`), which every door answers for a wrong path. A body that is
 * neither (a proxy's page) leaves the status to speak.
 */
function readError (a: Answer): { code?: string; message: string; details: Record<string, string> } {
  const body = readJson(a.text) as {
    error?: { code?: unknown; message?: unknown; details?: Record<string, string> }
    code?: unknown; detail?: unknown; invalid_params?: Array<{ name: string; reason: string }>
  } | undefined
  const text = (v: unknown) => typeof v === 'string' && v ? v : undefined
  if (body && typeof body === 'object' && body.error && typeof body.error === 'object') {
    return { code: text(body.error.code), message: text(body.error.message) ?? `HTTP ${a.status}`, details: { ...(body.error.details ?? {}) } }
  }
  if (body && typeof body === 'object') {
    const details = Array.isArray(body.invalid_params) ? Object.fromEntries(body.invalid_params.map(p => [p.name, p.reason])) : {}
    return { code: text(body.code), message: text(body.detail) ?? `HTTP ${a.status}`, details }
  }
  return { message: `HTTP ${a.status}`, details: {} }
}

/** A success status whose body is not JSON: not the service's answer (a proxy in the way). */
function notJson (a: Answer): Refused & { readonly detail: string } {
  const message = `HTTP ${a.status} with a body that is not JSON: is --url the service's address?`
  return { kind: 'refused', status: a.status, message, detail: message, details: {} }
}

function header (headers: Headers, name: string): string | undefined {
  const v = headers[name]
  return Array.isArray(v) ? v[0] : v
}

/** Retry-After in seconds (RFC 9110 §10.2.3: seconds or an HTTP date). */
function retryAfter (headers: Headers, now: Date): number | undefined {
  const v = header(headers, 'retry-after')
  if (v === undefined) return undefined
  if (/^\d+$/.test(v)) return Number(v)
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now.getTime()) / 1000))
}

function readJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
