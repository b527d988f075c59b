/**
 * Webhook signatures as Standard Webhooks 1.0 has them (DECISIONS.md "Events for BSPs"):
 * the headers `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`,
 * a space-separated list of `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` under the
 * endpoint's secret (`whsec_` + the base64 of its key bytes). One signature per secret
 * in force, so a receiver still holding the previous secret during a rotation's overlap
 * verifies too. Both sides use this file: epx signs, the `epx-bsp` package verifies.
 *
 * node:crypto is the whole of it; the specification's own test vector is checked in
 * test/contract/webhook-signature.test.ts, which is what says any Standard Webhooks
 * library accepts what epx sends.
 * @module
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export const SECRET_PREFIX = 'whsec_'
/** Key bytes of a new secret: the specification asks for 24 to 64. */
const SECRET_BYTES = 32
/** A receiver's default tolerance between the timestamp and its clock (the specification's 5 minutes). */
export const DEFAULT_TOLERANCE_SECONDS = 300

// A type, not an interface: it is then a headers record as node and undici take one.
export type WebhookHeaders = {
  readonly 'webhook-id': string
  readonly 'webhook-timestamp': string
  readonly 'webhook-signature': string
}

/** A new secret, `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret (): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

/** The key bytes of a secret; a secret without the prefix is read as base64 too (as the reference libraries do). */
function keyOf (secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret
  const key = Buffer.from(b64, 'base64')
  if (key.length === 0) throw new TypeError('a webhook secret is "whsec_" followed by base64 key bytes')
  return key
}

/** One signature, `v1,<base64>`. */
export function signWebhook (secret: string, id: string, timestampSeconds: number, body: string | Uint8Array): string {
  return 'v1,' + createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.`).update(body).digest('base64')
}

/** The three headers of a delivery, signed with every secret in force (newest first). */
export function webhookHeaders (secrets: readonly string[], id: string, timestampSeconds: number, body: string): WebhookHeaders {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map(s => signWebhook(s, id, timestampSeconds, body)).join(' '),
  }
}

export type WebhookVerdict =
  | { readonly ok: true; readonly id: string; readonly timestampSeconds: number }
  | { readonly ok: false; readonly reason: string }

export interface VerifyWebhookOptions {
  /** The endpoint's secret, or several during a rotation (any one may match). */
  readonly secret: string | readonly string[]
  /** The request's headers (names in lower case, as node gives them). */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>
  /** The request's body exactly as received: the signature covers its bytes, not a re-serialized object. */
  readonly body: string | Uint8Array
  /** Seconds either side of the receiver's clock a timestamp may be (default 300). */
  readonly toleranceSeconds?: number
  /** The receiver's clock, Unix seconds (default: now). */
  readonly nowSeconds?: number
}

const header = (h: VerifyWebhookOptions['headers'], name: string): string | undefined => {
  const v = h[name]
  return typeof v === 'string' ? v : v?.[0]
}

/**
 * Checks a delivery as a receiver must before trusting it: the three headers present, the
 * timestamp within the tolerance (a replay of an old delivery fails), and one of the
 * `v1` signatures equal, compared in constant time, to the one made with a secret.
 */
export function verifyWebhook (o: VerifyWebhookOptions): WebhookVerdict {
  const id = header(o.headers, 'webhook-id')
  const timestamp = header(o.headers, 'webhook-timestamp')
  const signatures = header(o.headers, 'webhook-signature')
  if (!id || !timestamp || !signatures) return { ok: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' }
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'webhook-timestamp is not Unix seconds' }
  const ts = Number(timestamp)
  const now = o.nowSeconds ?? Math.floor(Date.now() / 1000)
  const tolerance = o.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  if (Math.abs(now - ts) > tolerance) return { ok: false, reason: `webhook-timestamp is ${Math.abs(now - ts)} s ${now >= ts ? 'behind' : 'ahead of'} this clock, beyond the ${tolerance} s tolerated` }
  const given = signatures.split(' ').filter(s => s.startsWith('v1,')).map(s => Buffer.from(s.slice(3), 'base64'))
  for (const secret of typeof o.secret === 'string' ? [o.secret] : o.secret) {
    const expected = Buffer.from(signWebhook(secret, id, ts, o.body).slice(3), 'base64')
    if (given.some(g => g.length === expected.length && timingSafeEqual(g, expected))) return { ok: true, id, timestampSeconds: ts }
  }
  return { ok: false, reason: 'no v1 signature matches the secret' }
}
