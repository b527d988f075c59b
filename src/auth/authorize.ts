/**
 * The authentication chain of both API endpoints: the five ordered checks of
 * DECISIONS.md "Authentication and tenancy", in one function (`createAuthorizer`).
 * @module
 */
import { EpxError, NO_CREDENTIALS_HEADERS } from '../errors.ts'
import type { Caller } from './caller.ts'
import type { Companies, CompanyRecord } from '../store/companies.ts'
import { expiresAtMsOf, tokenState, type TokenRecord, type Tokens } from '../store/tokens.ts'
import { readStore } from '../store/open-store.ts'
import type { CertVerdict } from './client-cert.ts'
import { certificateMismatch } from './tenancy.ts'
import { hashToken, looksLikeToken } from './tokens.ts'
import type { Scope } from '../contract/scopes.ts'

export interface AuthorizeInput {
  /** The connection's certificate verdict (`clientCertVerdict`). */
  readonly cert: CertVerdict
  /** The raw `Authorization` header, if any. */
  readonly authorization: string | undefined
  /**
   * The scope the endpoint requires; `ANY_SCOPE`: any token of the company will do (a read
   * of the company's own perimeter, DECISIONS.md "Authentication and tenancy").
   */
  readonly scope: Scope | typeof ANY_SCOPE
  readonly now: Date
  /** The store generation (`store/generation.ts`) the door read for this request. */
  readonly generation: number
}

/** What an endpoint open to every token of the company asks for instead of a scope. */
export const ANY_SCOPE = 'any'

export interface AuthorizerDeps {
  readonly tokens: Pick<Tokens, 'byHash' | 'touch'>
  readonly companies: Pick<Companies, 'get'>
  /** Told when a revoked or expired token is presented (the audit trail). */
  readonly onDeadToken?: (token: TokenRecord, reason: 'revoked' | 'expired', nowMs: number) => void
}

/**
 * The chain, with a cache per connection (bench/README.md#where-the-doors-thread-spends-a-get): a keep-alive connection
 * that sends the same Authorization header again skips the hash and the token and
 * company reads while the store generation stays the same. The door reads the generation
 * from the store on every request, so an unavailable store still answers 503 and a
 * revocation or suspension (by the CLI too) applies to the next request; expiry and
 * the four other checks still run on every request, on the cached records.
 */
export function createAuthorizer (deps: AuthorizerDeps): (input: AuthorizeInput, connection: object) => Caller {
  const cache = new WeakMap<object, Found>()
  return (input, connection) => {
    if (!input.cert.ok) throw new EpxError('MTLS_REQUIRED', [input.cert.reason])
    const { generation } = input
    let found = cache.get(connection)
    if (found === undefined || found.generation !== generation || found.authorization !== input.authorization) {
      // Read after the generation, in the same read snapshot: a later write moves it.
      found = lookUp(input.authorization, deps, generation)
      cache.set(connection, found)
    }
    return checkFound(found, input.cert, input.scope, input.now.getTime(), deps)
  }
}

/** What a Bearer token resolved to; kept per connection by `createAuthorizer`. */
interface Found {
  readonly authorization: string | undefined
  readonly generation: number
  readonly token: TokenRecord
  readonly expiresAtMs: number
  /** Read on first need, after the token passed its own checks (null: no such company). */
  company?: CompanyRecord | null
  /** Last-used time as the store knows it (throttles `touch`). */
  lastUsedMs: number
  /** The certificate check's answer for the connection's certificate (`undefined` = not yet made). */
  mismatch?: string | null
  caller?: Caller
}

/** Check 2's reads: the token of the Bearer secret (401 when unknown) and its company. */
function lookUp (authorization: string | undefined, deps: AuthorizerDeps, generation: number): Found {
  const secret = bearerSecret(authorization)
  const token = readStore(() => deps.tokens.byHash(hashToken(secret)))
  if (!token) throw unauthorized('the Bearer token is unknown; send it exactly as it was issued, or ask the service operator for a new one')
  return {
    authorization, generation, token,
    expiresAtMs: expiresAtMsOf(token),
    lastUsedMs: token.lastUsedAt ? Date.parse(token.lastUsedAt) : -Infinity,
  }
}

/** Checks 2 (live token) to 5 on resolved records, in order. */
function checkFound (found: Found, cert: CertVerdict & { ok: true }, scope: Scope | typeof ANY_SCOPE, nowMs: number, deps: AuthorizerDeps): Caller {
  const { token } = found
  const state = tokenState(token, nowMs, found.expiresAtMs)
  if (state !== 'active') deps.onDeadToken?.(token, state, nowMs)
  if (state === 'revoked') throw unauthorized(`token ${token.id} was revoked at ${token.revokedAt}; create a new one in the web console ("Jetons d'accès" page), or ask the service operator`)
  if (state === 'expired') throw unauthorized(`token ${token.id} expired at ${token.expiresAt}; create a new one in the web console ("Jetons d'accès" page), or ask the service operator`)
  // Read in the same turn as the token (or the generation): one consistent snapshot.
  const company = found.company ??= readStore(() => deps.companies.get(token.companyId)) ?? null
  // A token whose company is gone is as dead as a revoked one.
  if (!company) throw unauthorized(`token ${token.id} belongs to no existing company; ask the service operator for a new token`)

  // 3. The certificate is the one bound to the token's company (the verdict is per connection).
  if (found.mismatch === undefined) found.mismatch = certificateMismatch(company, cert) ?? null
  if (found.mismatch !== null) throw new EpxError('MTLS_REQUIRED', [found.mismatch])

  // 4. The company is active.
  if (company.status !== 'active') throw new EpxError('COMPANY_SUSPENDED', [company.id])

  // 5. The token carries the endpoint's scope.
  if (scope !== ANY_SCOPE && !token.scopes.includes(scope)) throw new EpxError('SCOPE_DENIED', [scope])

  // Throttled, not awaited, never fails the request.
  if (!(nowMs - found.lastUsedMs < 60_000)) {
    deps.tokens.touch(token, nowMs)
    found.lastUsedMs = nowMs
  }
  return found.caller ??= {
    companyId: company.id,
    tokenId: token.id,
    certFingerprint256: cert.fingerprint256,
    perimeter: company.perimeter,
    ...(company.rateLimit ? { rateLimit: company.rateLimit } : {}),
  }
}

/** The secret of `Authorization: Bearer <secret>`; a 401 saying what is wrong otherwise. */
function bearerSecret (header: string | undefined): string {
  if (header === undefined || header.trim() === '') {
    throw new EpxError('UNAUTHORIZED', ['an Authorization header is required: Authorization: Bearer <token>'], { headers: NO_CREDENTIALS_HEADERS })
  }
  const m = /^Bearer +(\S+) *$/i.exec(header)
  if (!m) throw unauthorized('the Authorization header must read "Bearer <token>" (one space, no other scheme)')
  const secret = m[1]!
  if (!looksLikeToken(secret)) {
    throw unauthorized('the Bearer token is malformed: a token is "epx_" followed by 43 base64url characters')
  }
  return secret
}

/** A 401 for a request that sent something as its credentials (malformed included): the catalogue's challenge. */
function unauthorized (message: string): EpxError {
  return new EpxError('UNAUTHORIZED', [message])
}

