/**
 * Receiving epx's webhooks (DECISIONS.md "Events for BSPs", Standard Webhooks 1.0): the
 * answers an endpoint owes the service, written once. `createWebhookHandler` answers one request
 * whatever the server framework (give it the body's bytes as received: the signature
 * covers them, not a re-serialized object); `webhookReceiver` is the same as a
 * node:http/https request listener; `seenIds` keeps handled ids in memory.
 *
 * - `GET ?echo=VALUE`, the service's check at registration: 200 with VALUE.
 * - `POST`: 401 saying why when the signature, the secret or the timestamp does not
 *   verify; the event handed to `onEvent` once verified. Delivery is at least once, so an
 *   id already in `seen` is answered 200 without calling `onEvent` again, and one still
 *   being handled 409 (the service sends it again later). A handler that throws answers
 *   500: the service retries, and the id is not marked seen.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { verifyWebhook } from '../contract/webhook-signature.ts'
import type { BspEvent } from './client.ts'

/** Ids already handled: a `Set<string>` is one; a table of your database keeps them across restarts. */
export interface SeenIds {
  has(id: string): boolean | Promise<boolean>
  add(id: string): unknown
}

export interface WebhookReceiverOptions {
  /**
   * The endpoint's secret (`whsec_...`), or several while a rotation overlaps (any one may
   * match); a function is asked at each delivery (a secret kept in a file that a rotation
   * rewrites, or one not known yet when the receiver starts to answer the registration check).
   */
  readonly secret: string | readonly string[] | (() => string | readonly string[])
  /** Called once per verified event; answer quickly (the service waits for the answer before the next event). */
  readonly onEvent: (event: BspEvent) => void | Promise<void>
  /** Where handled ids are kept, to answer a delivery sent again without handling it twice. */
  readonly seen?: SeenIds
  /** Seconds either side of this clock a `webhook-timestamp` may be (default 300). */
  readonly toleranceSeconds?: number
  /** This clock, Unix seconds (default: now). */
  readonly nowSeconds?: () => number
  /** A body above this many bytes is refused with 413 (default 1 MiB; an event is a few hundred bytes). */
  readonly maxBodyBytes?: number
  /** `webhookReceiver` tells each answer of 400 or more here, e.g. to log why a delivery was refused. */
  readonly onRefused?: (refusal: { readonly method: string; readonly url: string; readonly status: number; readonly reason: string }) => void
}

export interface WebhookRequest {
  readonly method: string
  /** The request's target, path and query (`/hooks/epx?echo=abc`). */
  readonly url: string
  /** Names in lower case, as node gives them. */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>
  readonly body: string | Uint8Array
}

export interface WebhookAnswer {
  readonly status: number
  /** Plain text: the echoed value, or what happened and why. */
  readonly body: string
  readonly headers?: Readonly<Record<string, string>>
  /** The event handed to `onEvent` (absent when the request was refused or was a duplicate). */
  readonly event?: BspEvent
}

const DEFAULT_MAX_BODY_BYTES = 1 << 20

/** A `SeenIds` in memory keeping the latest `max` ids: enough for the 24 h a delivery is retried, forgotten at a restart. */
export function seenIds (max = 100_000): SeenIds {
  const ids = new Set<string>()
  return {
    has: id => ids.has(id),
    add: id => {
      ids.add(id)
      // A Set iterates in insertion order: the first is the oldest.
      if (ids.size > max) ids.delete(ids.values().next().value!)
    },
  }
}

/** Answers one request (Express, Fastify...: give it the raw body); the state that lasts between requests (ids being handled) is the receiver's, so make one per endpoint. */
export function createWebhookHandler (o: WebhookReceiverOptions): (req: WebhookRequest) => Promise<WebhookAnswer> {
  const handling = new Set<string>()
  return async req => {
    if (req.method === 'GET' || req.method === 'HEAD') {
      const echo = new URL(req.url, 'http://receiver').searchParams.get('echo')
      return echo === null ? { status: 400, body: 'a GET is the service\'s registration check, with ?echo=VALUE' } : { status: 200, body: echo }
    }
    if (req.method !== 'POST') return { status: 405, body: `${req.method} is not a delivery: the service POSTs events`, headers: { allow: 'GET, HEAD, POST' } }
    const secret = typeof o.secret === 'function' ? o.secret() : o.secret
    if (secret.length === 0) return { status: 401, body: 'this receiver has no secret yet: give it the whsec_ secret shown when the endpoint was registered' }
    const verdict = verifyWebhook({
      secret, headers: req.headers, body: req.body,
      ...(o.toleranceSeconds !== undefined ? { toleranceSeconds: o.toleranceSeconds } : {}),
      ...(o.nowSeconds ? { nowSeconds: o.nowSeconds() } : {}),
    })
    if (!verdict.ok) return { status: 401, body: verdict.reason }
    const event = parseEvent(req.body)
    if (typeof event === 'string') return { status: 400, body: event }
    const id = verdict.id
    if (handling.has(id)) return { status: 409, body: `${id} is being handled: send it again later` }
    handling.add(id)
    try {
      if (await o.seen?.has(id)) return { status: 200, body: `${id} already received` }
      await o.onEvent(event)
      await o.seen?.add(id)
      return { status: 200, body: `${id} received`, event }
    } catch (err) {
      return { status: 500, body: `${id} not handled: ${(err as Error)?.message ?? String(err)}` }
    } finally {
      handling.delete(id)
    }
  }
}

/** The event in a verified body, or what is wrong with it. */
function parseEvent (body: string | Uint8Array): BspEvent | string {
  let value: unknown
  try {
    value = JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'))
  } catch {
    return 'the body is not JSON'
  }
  const e = value as Partial<BspEvent> | null
  return typeof e === 'object' && e !== null && typeof e.id === 'string' && typeof e.type === 'string' ? e as BspEvent : 'the body is not an event: an object with an id and a type'
}

/** A node:http/https request listener answering as `createWebhookHandler` says: `createServer(webhookReceiver({ secret, onEvent }))`. */
export function webhookReceiver (o: WebhookReceiverOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const handle = createWebhookHandler(o)
  const max = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const send = (req: IncomingMessage, res: ServerResponse, a: WebhookAnswer, head: boolean) => {
    if (a.status >= 400) o.onRefused?.({ method: req.method ?? '', url: req.url ?? '', status: a.status, reason: a.body })
    res.writeHead(a.status, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', ...a.headers })
    res.end(head ? undefined : a.body)
  }
  return (req, res) => {
    const tooLarge = () => {
      res.setHeader('connection', 'close')
      send(req, res, { status: 413, body: `the body is over ${max} bytes` }, false)
    }
    if (Number(req.headers['content-length'] ?? 0) > max) return tooLarge()
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > max) {
        tooLarge()
        req.destroy()
      } else chunks.push(chunk)
    })
    req.on('error', () => req.destroy())
    req.on('end', () => {
      handle({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks) })
        .then(a => send(req, res, a, req.method === 'HEAD'), err => send(req, res, { status: 500, body: String(err) }, false))
    })
  }
}
