/**
 * The authentication chain of both API endpoints: the five ordered checks of
 * DECISIONS.md "Authentication and tenancy", in one function.
 * @module
 */
import { EpxError, isEpxError } from '../errors.ts'
import type { Caller } from './caller.ts'
import type { Companies, CompanyRecord } from '../store/companies.ts'
import type { Tokens } from '../store/tokens.ts'
import type { CertVerdict } from './client-cert.ts'
import { certificateMismatch } from './tenancy.ts'
import { hashToken, looksLikeToken, type Scope } from './tokens.ts'

export interface AuthorizeInput {
  /** The connection's certificate verdict (`clientCertVerdict`). */
  readonly cert: CertVerdict
  /** The raw `Authorization` header, if any. */
  readonly authorization: string | undefined
  /** The scope the endpoint requires. */
  readonly scope: Scope
  readonly now: Date
}

export interface AuthorizeDeps {
  readonly tokens: Pick<Tokens, 'byHash' | 'touch'>
  readonly companies: Pick<Companies, 'get'>
}

/** RFC 6750 §3: every 401 names the scheme and realm. */
const WWW_AUTHENTICATE = { 'www-authenticate': 'Bearer realm="epx"' }

/** Returns the caller, or throws the EpxError of the first check that fails. */
export function authorize (input: AuthorizeInput, deps: AuthorizeDeps): Caller {
  // 1. A certificate that chains to the client CA (computed once per connection).
  if (!input.cert.ok) throw new EpxError('MTLS_REQUIRED', [input.cert.reason])
  const cert = input.cert

  // 2. A live Bearer token.
  const secret = bearerSecret(input.authorization)
  const token = readStore(() => deps.tokens.byHash(hashToken(secret)))
  if (!token) throw unauthorized('the Bearer token is unknown; send it exactly as it was issued, or ask the service operator for a new one')
  const nowMs = input.now.getTime()
  if (token.revokedAt) throw unauthorized(`token ${token.id} was revoked at ${token.revokedAt}; ask the service operator for a new token`)
  if (token.expiresAt && Date.parse(token.expiresAt) <= nowMs) {
    throw unauthorized(`token ${token.id} expired at ${token.expiresAt}; ask the service operator for a new token`)
  }
  const company: CompanyRecord | undefined = readStore(() => deps.companies.get(token.companyId))
  // A token whose company is gone is as dead as a revoked one.
  if (!company) throw unauthorized(`token ${token.id} belongs to no existing company; ask the service operator for a new token`)

  // 3. The certificate is the one bound to the token's company.
  const mismatch = certificateMismatch(company, cert)
  if (mismatch) throw new EpxError('MTLS_REQUIRED', [mismatch])

  // 4. The company is active.
  if (company.status !== 'active') throw new EpxError('COMPANY_SUSPENDED', [company.id])

  // 5. The token carries the endpoint's scope.
  if (!token.scopes.includes(input.scope)) throw new EpxError('SCOPE_DENIED', [input.scope])

  deps.tokens.touch(token, nowMs)   // throttled, not awaited, never fails the request
  return {
    companyId: company.id,
    tokenId: token.id,
    certFingerprint256: cert.fingerprint256,
    perimeter: company.perimeter,
  }
}

/** The secret of `Authorization: Bearer <secret>`; a 401 saying what is wrong otherwise. */
function bearerSecret (header: string | undefined): string {
  if (header === undefined || header.trim() === '') {
    throw unauthorized('an Authorization header is required: Authorization: Bearer <token>')
  }
  const m = /^Bearer +(\S+) *$/i.exec(header)
  if (!m) throw unauthorized('the Authorization header must read "Bearer <token>" (one space, no other scheme)')
  const secret = m[1]!
  if (!looksLikeToken(secret)) {
    throw unauthorized('the Bearer token is malformed: a token is "epx_" followed by 43 base64url characters')
  }
  return secret
}

function unauthorized (message: string): EpxError {
  return new EpxError('UNAUTHORIZED', [message], { headers: WWW_AUTHENTICATE })
}

/**
 * DECISIONS.md "Robustness": a store that cannot answer is a 503, never a 401, since
 * a 401 tells an operator its token is dead.
 */
function readStore<T> (read: () => T): T {
  try {
    return read()
  } catch (err) {
    if (isEpxError(err) && err.code === 'NO_STORE') throw err
    throw new EpxError('NO_STORE', [], { cause: err, headers: { 'retry-after': '5' } })
  }
}
