/**
 * One delivery's HTTP exchange (DECISIONS.md "Events for BSPs", Standard Webhooks 1.0):
 * `POST` of the event exactly as the feed serves it, with `webhook-id`,
 * `webhook-timestamp` and `webhook-signature` (contract/webhook-signature.ts), through the
 * endpoint's own undici pool, so a slow endpoint holds only its own connection. Any
 * answer is a result, a 2xx a delivery; a network error or a timeout is one too.
 * @module
 */
import type { Pool } from 'undici'
import { rootCertificates } from 'node:tls'
import { webhookHeaders } from '../contract/webhook-signature.ts'
import { isEpxError } from '../errors.ts'
import { checkedLookup } from './endpoint-address.ts'

export interface ConnectOptions {
  readonly allowPrivateNetworks: boolean
  /** A whole delivery's bound, connection included. */
  readonly requestTimeoutMs: number
  /** PEM certificates trusted beside the system's roots (`webhooks.caFile`). */
  readonly ca?: string
}

/** What an attempt came to: the status, or the error in a few words; how long it took. */
export interface Exchange {
  readonly status?: number
  readonly error?: string
  readonly latencyMs: number
}

/** At most this much of an answer is read (and dropped): its status is what counts. */
const ANSWER_LIMIT = 64 * 1024
const ERROR_TEXT = 300

/** undici, loaded with the first endpoint: a plugin no company registered one with never loads it. */
let undici: Promise<typeof import('undici')> | undefined

/** An endpoint's pool: one connection, the checked resolution, the timeouts. */
export async function endpointPool (url: URL, o: ConnectOptions): Promise<Pool> {
  const { Pool } = await (undici ??= import('undici'))
  return new Pool(url.origin, {
    connections: 1,
    pipelining: 1,
    headersTimeout: o.requestTimeoutMs,
    bodyTimeout: o.requestTimeoutMs,
    connect: {
      timeout: o.requestTimeoutMs,
      lookup: checkedLookup(url.href, o.allowPrivateNetworks),
      ...(o.ca ? { ca: [...rootCertificates, o.ca] } : {}),
    },
  })
}

/** An error as the delivery log shows it: its code and message, short. */
export function errorText (err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: unknown }
  // undici wraps what the socket said (a refused address, a certificate) as the cause.
  const inner = e.cause && typeof e.cause === 'object' ? errorText(e.cause) : undefined
  // A refused address says all in its message; a socket's code names its fault (ECONNREFUSED).
  const own = (isEpxError(err) ? e.message : [e.code, e.message].filter(Boolean).join(' ')) || String(err)
  const text = inner && !own.includes(inner) ? `${own}: ${inner}` : own
  return text.length > ERROR_TEXT ? text.slice(0, ERROR_TEXT - 3) + '...' : text
}

/** POSTs `body` (the event's JSON text) to `url` signed with `secrets`, within `timeoutMs`. */
export async function postEvent (pool: Pool, url: URL, o: {
  eventId: string; body: string; secrets: readonly string[]; timestampSeconds: number; timeoutMs: number; signal?: AbortSignal
}): Promise<Exchange> {
  const started = performance.now()
  const latency = (): number => Math.round(performance.now() - started)
  // One controller and a timer, not AbortSignal.any over AbortSignal.timeout: those two cost
  // ~5 % of the deliverer's thread a delivery (bench/README.md#the-0800-publications-webhooks-benchwebhooksts).
  const bound = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => { timedOut = true; bound.abort() }, o.timeoutMs)
  const cut = (): void => bound.abort()
  o.signal?.addEventListener('abort', cut)
  if (o.signal?.aborted) cut()
  const signal = bound.signal
  try {
    const res = await pool.request({
      method: 'POST',
      path: url.pathname + url.search,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'epx-webhooks',
        ...webhookHeaders(o.secrets, o.eventId, o.timestampSeconds, o.body),
      },
      body: o.body,
      signal,
    })
    await res.body.dump({ limit: ANSWER_LIMIT }).catch(() => {})
    return { status: res.statusCode, latencyMs: latency() }
  } catch (err) {
    return { error: timedOut ? `no answer within ${o.timeoutMs} ms (webhooks.requestTimeoutMs)` : errorText(err), latencyMs: latency() }
  } finally {
    clearTimeout(timer)
    o.signal?.removeEventListener('abort', cut)
  }
}
