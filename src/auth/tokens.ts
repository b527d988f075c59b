/**
 * Bearer tokens (DECISIONS.md "Authentication and tenancy"): `epx_` + 43 base64url
 * characters (32 random bytes); only the SHA-256 hash is ever stored.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'

const TOKEN_SHAPE = /^epx_[A-Za-z0-9_-]{43}$/

/** A new secret; shown once, at creation. */
export function newTokenSecret (): string {
  return 'epx_' + randomBytes(32).toString('base64url')
}

/** The public id of a token: safe to log and to show. */
export function newTokenId (): string {
  return 'tok_' + randomBytes(8).toString('hex')
}

export function looksLikeToken (text: string): boolean {
  return TOKEN_SHAPE.test(text)
}

/**
 * Lookup key of a secret. A plain SHA-256 is enough for 256-bit random secrets (no
 * dictionary to attack), and it lets the store find the token by hash, so no secret
 * comparison happens in user code.
 */
export function hashToken (secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/** `30d`, `12h`, `15m`, `90s` → milliseconds; undefined when malformed. */
export function parseDuration (text: string): number | undefined {
  const m = /^([1-9][0-9]{0,6})([smhd])$/.exec(text)
  if (!m) return undefined
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd']
  return Number(m[1]) * unit
}
