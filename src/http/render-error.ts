/**
 * Renders an error in the wire format of its door: inbound `{error:{code,message,details}}`,
 * outbound (and unknown paths) `application/problem+json` (RFC 9457).
 * @module
 */
import type { ServerResponse } from 'node:http'
import { catalogue, EpxError, isEpxError, problemCodeOf, type ErrorCode } from '../errors.ts'
import { NOSNIFF, type Door } from './route.ts'

/** A rendered error: everything the door writes. */
export interface ErrorResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** The code that went on the wire (INTERNAL for anything that was not an EpxError). */
  readonly code: ErrorCode
  /** Set when the thrown value was not a wire EpxError: the door logs it. */
  readonly unexpected?: unknown
}

export interface InboundErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly details: Readonly<Record<string, string>> }
}

export interface ProblemBody {
  readonly type: string
  readonly title: string
  readonly status: number
  readonly detail: string
  readonly invalid_params?: ReadonlyArray<{ readonly name: string; readonly reason: string }>
  readonly code: string
}

/** The contract's inbound error body (section 7.2); `details` is `{}` when there are none. */
export function inboundBody (e: EpxError): InboundErrorBody {
  return { error: { code: e.code, message: e.message, details: e.details ?? {} } }
}

/**
 * DECISIONS.md "Outbound": `type` is `{base_url}/errors/<slug>`; 400 adds
 * `invalid_params` (`[{name, reason}]`); every problem carries its `code`, last.
 */
export function problemBody (e: EpxError, baseUrl: string): ProblemBody {
  const spec = catalogue[e.code] as { readonly slug?: string; readonly title?: string }
  const slug = spec.slug ?? e.code.toLowerCase().replace(/_/g, '-')
  const body = {
    type: `${baseUrl.replace(/\/+$/, '')}/errors/${slug}`,
    title: spec.title ?? e.code,
    status: e.status,
    detail: e.message,
  } as { -readonly [K in keyof ProblemBody]: ProblemBody[K] }
  if (e.status === 400) {
    body.invalid_params = Object.entries(e.details ?? {}).map(([name, reason]) => ({ name, reason }))
  }
  // RFC 9457 §3.2: what the client needs to go on (CURSOR_EXPIRED's oldest id), as members of the problem.
  if ((spec as { readonly extensions?: boolean }).extensions && e.details) Object.assign(body, e.details)
  body.code = problemCodeOf(e.code)
  return body
}

/**
 * Anything that is not a wire EpxError becomes a 500 INTERNAL: operator codes
 * (`EPX_*`) carry statuses that are not HTTP ones, and foreign errors are bugs.
 */
export function toWireError (err: unknown): { error: EpxError; unexpected?: unknown } {
  if (isEpxError(err) && !err.code.startsWith('EPX_') && err.status >= 400 && err.status <= 599) {
    return { error: err }
  }
  return { error: new EpxError('INTERNAL', [], { cause: err }), unexpected: err }
}

/**
 * Pure: status, headers and body of an error for a door (undefined door = unknown path).
 * The error's headers are those its code carries in the catalogue (`errors.ts`:
 * Retry-After, WWW-Authenticate, Allow) and the thrower's.
 */
export function renderError (err: unknown, door: Door | undefined, baseUrl: string): ErrorResponse {
  const { error, unexpected } = toWireError(err)
  const inbound = door === 'inbound'
  const body = JSON.stringify(inbound ? inboundBody(error) : problemBody(error, baseUrl))
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(error.headers ?? {})) headers[k.toLowerCase()] = v
  headers['content-type'] = inbound ? 'application/json' : 'application/problem+json'
  headers['x-content-type-options'] = NOSNIFF
  headers['content-length'] = String(Buffer.byteLength(body))
  return { status: error.status, headers, body, code: error.code, unexpected }
}

/**
 * Writes a rendered error. HEAD gets the headers without the body. A request whose
 * body was not read gets `Connection: close`: the door drops the rest of that body
 * within a bound in bytes and time, then closes (`linger.ts`), so an unauthenticated
 * client cannot keep the door reading, and a client still uploading gets the answer.
 */
export function sendError (res: ServerResponse, rendered: ErrorResponse, opts: { head: boolean; bodyUnread: boolean }): void {
  if (res.headersSent) {
    // A handler failed after it started answering: the only honest signal left is a cut.
    res.destroy()
    return
  }
  for (const name of res.getHeaderNames()) res.removeHeader(name)
  res.statusCode = rendered.status
  for (const [k, v] of Object.entries(rendered.headers)) res.setHeader(k, v)
  if (opts.bodyUnread) res.setHeader('connection', 'close')
  if (opts.head) res.end()
  else res.end(rendered.body)
}
