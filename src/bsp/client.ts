/**
 * The BSP's side of the two calls, on undici: one keep-alive connection pool presenting
 * the BSP's client certificate, the Bearer token on every request, and each answer read
 * into what a BSP acts on (a document and its validators, "nothing new", "retry after
 * N s", or the error body), and the status read of your programmes (an extension). What to do with an answer (retry, wait, write) is pull.ts's
 * and push.ts's business.
 * @module
 */
import { Agent, request, type Dispatcher } from 'undici'
import type { BesoinsAgreges } from '../contract/besoins-agreges.ts'
import type { Receipt } from '../contract/compiled.ts'
import type { StatusBody as ProgrammeStatus } from '../contract/programme-status.ts'
import type { RealiseBody } from '../contract/realise.ts'
import { INBOUND_PATH as PROGRAMME_PATH, OUTBOUND_PATH as BESOINS_PATH, REALISE_PATH } from '../contract/paths.ts'


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

/** What GET besoins-agreges answered, as a BSP acts on it. */
export type BesoinsAnswer =
  | { readonly kind: 'document'; readonly document: unknown; readonly text: string; readonly etag?: string; readonly lastModified?: string }
  | { readonly kind: 'unchanged'; readonly etag?: string; readonly lastModified?: string }
  | { readonly kind: 'retry'; readonly status: number; readonly retryAfterSecs?: number; readonly detail: string }
  | { readonly kind: 'refused'; readonly status: number; readonly detail: string; readonly body?: unknown }

/** What POST programme-soutirage answered. */
export type ProgrammeAnswer =
  | { readonly kind: 'received'; readonly receipt: Receipt }
  | { readonly kind: 'retry'; readonly status: number; readonly retryAfterSecs?: number; readonly detail: string }
  | { readonly kind: 'refused'; readonly status: number; readonly code?: string; readonly message: string; readonly details: Readonly<Record<string, string>> }

/** What GET programme-soutirage (the status read, an extension of the contract) answered. */
export type StatusAnswer =
  | { readonly kind: 'status'; readonly status: ProgrammeStatus; readonly etag?: string }
  | { readonly kind: 'unchanged'; readonly etag?: string }
  | { readonly kind: 'retry'; readonly status: number; readonly retryAfterSecs?: number; readonly detail: string }
  | { readonly kind: 'refused'; readonly status: number; readonly code?: string; readonly message: string; readonly details: Readonly<Record<string, string>> }

/** What GET realise (programme against delivery, an extension of the contract) answered. */
export type RealiseAnswer =
  | { readonly kind: 'realise'; readonly realise: RealiseBody; readonly etag?: string }
  | { readonly kind: 'unchanged'; readonly etag?: string }
  | { readonly kind: 'retry'; readonly status: number; readonly retryAfterSecs?: number; readonly detail: string }
  | { readonly kind: 'refused'; readonly status: number; readonly code?: string; readonly message: string; readonly details: Readonly<Record<string, string>> }

export interface BspClient {
  /** GET besoins-agreges; `etag`/`lastModified` of the last 200 make it conditional. */
  getBesoins(q: { siteId: string; targetDate: string; etag?: string; lastModified?: string }): Promise<BesoinsAnswer>
  /** POST programme-soutirage with the body as given (text or a value to serialize). */
  postProgramme(body: string | object): Promise<ProgrammeAnswer>
  /** GET programme-soutirage: what became of your programmes for a day; `etag` of the last answer makes it conditional. */
  getProgrammeStatus(q: { targetDate: string; siteId?: string; etag?: string }): Promise<StatusAnswer>
  /** GET realise: a site's day, programmed against delivered; `etag` of the last answer makes it conditional. */
  getRealise(q: { siteId: string; targetDate: string; etag?: string }): Promise<RealiseAnswer>
  close(): Promise<void>
}

export type { BesoinsAgreges, Receipt, ProgrammeStatus, RealiseBody }

export function createBspClient (opts: BspClientOptions): BspClient {
  const base = new URL(opts.url)
  // A service behind a reverse proxy under a path (`https://gw.example.com/epx`) keeps it:
  // the API's paths are appended to the base URL's path, not put in its place.
  const prefix = base.pathname.replace(/\/+$/, '')
  const endpoint = (path: string) => new URL(prefix + path, base.origin)
  const agent: Dispatcher = new Agent({
    connections: opts.connections ?? 4,
    connect: { cert: opts.cert, key: opts.key, ...(opts.ca ? { ca: opts.ca } : {}) },
  })
  const auth = `Bearer ${opts.token}`
  const now = opts.now ?? (() => new Date())

  return {
    async getBesoins (q) {
      const url = endpoint(BESOINS_PATH)
      url.searchParams.set('site_id', q.siteId)
      url.searchParams.set('target_date', q.targetDate)
      const headers: Record<string, string> = { authorization: auth, accept: 'application/json' }
      // If-None-Match wins on the server; If-Modified-Since helps only without an ETag.
      if (q.etag) headers['if-none-match'] = q.etag
      else if (q.lastModified) headers['if-modified-since'] = q.lastModified
      const res = await request(url, { method: 'GET', headers, dispatcher: agent })
      const text = await res.body.text()
      const etag = header(res.headers, 'etag')
      const lastModified = header(res.headers, 'last-modified')
      if (res.statusCode === 200) return { kind: 'document', document: JSON.parse(text), text, etag, lastModified }
      if (res.statusCode === 304) return { kind: 'unchanged', etag, lastModified }
      const problem = readJson(text) as { detail?: string; code?: string } | undefined
      const detail = problem?.detail ?? `HTTP ${res.statusCode}`
      // A 404 is "not yet" only as NOT_PUBLISHED: UNKNOWN_PATH is a wrong URL, never worth a retry.
      if ((res.statusCode === 404 && problem?.code !== 'UNKNOWN_PATH') || res.statusCode === 503) {
        return { kind: 'retry', status: res.statusCode, retryAfterSecs: retryAfter(res.headers, now()), detail }
      }
      return { kind: 'refused', status: res.statusCode, detail, body: problem }
    },

    async postProgramme (body) {
      const res = await request(endpoint(PROGRAMME_PATH), {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
        dispatcher: agent,
      })
      const text = await res.body.text()
      if (res.statusCode === 202) return { kind: 'received', receipt: JSON.parse(text) as Receipt }
      const error = (readJson(text) as { error?: { code?: string; message?: string; details?: Record<string, string> } } | undefined)?.error
      const message = error?.message ?? `HTTP ${res.statusCode}`
      if (res.statusCode === 503) return { kind: 'retry', status: 503, retryAfterSecs: retryAfter(res.headers, now()), detail: message }
      return { kind: 'refused', status: res.statusCode, code: error?.code, message, details: error?.details ?? {} }
    },

    async getProgrammeStatus (q) {
      const url = endpoint(PROGRAMME_PATH)
      url.searchParams.set('target_date', q.targetDate)
      if (q.siteId !== undefined) url.searchParams.set('site_id', q.siteId)
      const headers: Record<string, string> = { authorization: auth, accept: 'application/json' }
      if (q.etag) headers['if-none-match'] = q.etag
      const res = await request(url, { method: 'GET', headers, dispatcher: agent })
      const text = await res.body.text()
      const etag = header(res.headers, 'etag')
      if (res.statusCode === 200) return { kind: 'status', status: JSON.parse(text) as ProgrammeStatus, etag }
      if (res.statusCode === 304) return { kind: 'unchanged', etag }
      const error = (readJson(text) as { error?: { code?: string; message?: string; details?: Record<string, string> } } | undefined)?.error
      const message = error?.message ?? `HTTP ${res.statusCode}`
      if (res.statusCode === 503) return { kind: 'retry', status: 503, retryAfterSecs: retryAfter(res.headers, now()), detail: message }
      return { kind: 'refused', status: res.statusCode, code: error?.code, message, details: error?.details ?? {} }
    },

    async getRealise (q) {
      const url = new URL(REALISE_PATH, base)
      url.searchParams.set('site_id', q.siteId)
      url.searchParams.set('target_date', q.targetDate)
      const headers: Record<string, string> = { authorization: auth, accept: 'application/json' }
      if (q.etag) headers['if-none-match'] = q.etag
      const res = await request(url, { method: 'GET', headers, dispatcher: agent })
      const text = await res.body.text()
      const etag = header(res.headers, 'etag')
      if (res.statusCode === 200) return { kind: 'realise', realise: JSON.parse(text) as RealiseBody, etag }
      if (res.statusCode === 304) return { kind: 'unchanged', etag }
      // problem+json, as besoins-agreges: `invalid_params` names each query parameter at fault.
      const problem = readJson(text) as { detail?: string; code?: string; invalid_params?: Array<{ name: string; reason: string }> } | undefined
      const message = problem?.detail ?? `HTTP ${res.statusCode}`
      if (res.statusCode === 503) return { kind: 'retry', status: 503, retryAfterSecs: retryAfter(res.headers, now()), detail: message }
      return {
        kind: 'refused', status: res.statusCode, code: problem?.code, message,
        details: Object.fromEntries((problem?.invalid_params ?? []).map(p => [p.name, p.reason])),
      }
    },

    close: () => agent.close(),
  }
}

function header (headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name]
  return Array.isArray(v) ? v[0] : v
}

/** Retry-After in seconds (RFC 9110 §10.2.3: seconds or an HTTP date). */
function retryAfter (headers: Record<string, string | string[] | undefined>, now: Date): number | undefined {
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
