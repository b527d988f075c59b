/**
 * The client-certificate verdict of one TLS connection: does it carry a certificate
 * that chains to the configured client CA, and which identity does it prove.
 * @module
 */
import type { TLSSocket } from 'node:tls'
import { canonicalSubject } from './subject.ts'

/** What a connection proved, computed once per TLS connection. */
export type CertVerdict =
  | {
    readonly ok: true
    /** Canonical subject (`canonicalSubject`), or null when it cannot be bound (see below). */
    readonly subject: string | null
    /** SHA-256 fingerprint as node prints it (`AB:CD:…`). */
    readonly fingerprint256: string
  }
  | { readonly ok: false; readonly reason: string }

/** The part of a TLS socket the verdict reads; a seam for the resumption unit test. */
export type PeerSocket = Pick<TLSSocket, 'authorized' | 'authorizationError' | 'getPeerCertificate'>

/** The revocation list in force (`auth/revocation.ts`); `generation` moves when it changes. */
export interface RevocationCheck {
  readonly generation: number
  /** Whether the certificate of `serial` (hex) issued by `issuer` (canonical DN) is revoked. */
  revoked(issuer: string, serial: string): boolean
}

/**
 * What a full handshake proved, before any revocation list: the chain's verdict and the
 * issuer and serial a list names. A resumed TLS session adopts its full handshake's
 * (`http/tls-sessions.ts`), so a resumption never proves more than the handshake did.
 */
export interface ProvenIdentity {
  readonly chained: CertVerdict
  readonly issuer: unknown
  readonly serial: string
  /** The certificate's notAfter, epoch ms (Infinity when it has none to read). */
  readonly notAfterMs: number
}

/** A connection's identity, and the revocation generation its verdict was last checked at. */
interface Entry {
  readonly proven: ProvenIdentity
  generation: number
  verdict: CertVerdict
}

const entries = new WeakMap<object, Entry>()

/**
 * The verdict of the connection behind a request. `getPeerCertificate()` costs tens of
 * microseconds, so it runs once per connection and is cached for its keep-alive
 * requests; the WeakMap lets the entry go with the socket. With a revocation list the
 * verdict is checked again only when the list's generation moves, so a keep-alive
 * request pays one number comparison and a certificate revoked meanwhile is refused on
 * its connection's next request. A certificate that expires while its connection is
 * open is refused from that connection's next request too: the handshake checked its
 * validity once, and a connection may live on for as long as it keeps being used.
 * `nowMs` is the system clock's, the one OpenSSL checked the handshake with.
 */
export function clientCertVerdict (socket: PeerSocket, revocation: RevocationCheck | undefined, nowMs: number): CertVerdict {
  const e = entries.get(socket) ?? enter(socket, readIdentity(socket))
  if (revocation !== undefined && e.generation !== revocation.generation) {
    e.generation = revocation.generation
    e.verdict = judge(e.proven, revocation)
  }
  return nowMs < e.proven.notAfterMs || !e.verdict.ok ? e.verdict : expired(e.proven.notAfterMs)
}

/** The identity a connection's own handshake proved (read once, shared with its verdict). */
export function provenIdentity (socket: PeerSocket): ProvenIdentity {
  return (entries.get(socket) ?? enter(socket, readIdentity(socket))).proven
}

/**
 * Gives a resumed connection the identity of the handshake it resumes, in place of what
 * its own socket reports; its first request checks it against the list in force.
 */
export function adoptIdentity (socket: object, proven: ProvenIdentity): void {
  enter(socket, proven)
}

/** The verdict of `proven` under the revocation list in force. */
export function judge (proven: ProvenIdentity, revocation?: RevocationCheck): CertVerdict {
  return revocation !== undefined && proven.chained.ok && isRevoked(proven, revocation) ? REVOKED : proven.chained
}

function readIdentity (socket: PeerSocket): ProvenIdentity {
  const cert = socket.getPeerCertificate()
  const notAfterMs = typeof cert?.valid_to === 'string' ? Date.parse(cert.valid_to) : NaN
  return {
    chained: computeVerdict(socket, cert),
    issuer: cert?.issuer,
    serial: String(cert?.serialNumber ?? ''),
    notAfterMs: Number.isNaN(notAfterMs) ? Infinity : notAfterMs,
  }
}

function enter (socket: object, proven: ProvenIdentity): Entry {
  const e: Entry = { proven, generation: -1, verdict: proven.chained }
  entries.set(socket, e)
  return e
}

const REVOKED: CertVerdict = {
  ok: false,
  reason: 'the client certificate was revoked by its CA (it is listed in the CA\'s revocation list); ' +
    'ask your CA or the service operator for a new certificate and use it instead',
}

function expired (notAfterMs: number): CertVerdict {
  return {
    ok: false,
    reason: `the client certificate expired at ${new Date(notAfterMs).toISOString()}, after this connection was opened; ` +
      'connect again with a current certificate (ask your CA or the service operator for a new one)',
  }
}

function isRevoked (e: ProvenIdentity, revocation: RevocationCheck): boolean {
  if (!e.issuer || typeof e.issuer !== 'object' || e.serial === '') return false
  let issuer: string
  try {
    issuer = canonicalSubject(e.issuer as Record<string, string | string[]>)
  } catch {
    return false   // unreachable for a certificate that chained; no CRL names an unreadable issuer
  }
  return revocation.revoked(issuer, e.serial)
}

/**
 * DECISIONS.md "Robustness": with `rejectUnauthorized: false` the check is ours. It
 * needs `authorized === true` AND a non-empty peer certificate: over TLS 1.3 a resumed
 * session without any client certificate can report `authorized` with an empty one.
 */
export function computeVerdict (socket: PeerSocket, cert = socket.getPeerCertificate()): CertVerdict {
  const present = cert !== null && typeof cert === 'object' && Object.keys(cert).length > 0 &&
    typeof cert.fingerprint256 === 'string' && cert.fingerprint256.length > 0
  if (!present) {
    return { ok: false, reason: 'a client certificate is required (mTLS); none was presented on this connection' }
  }
  if (socket.authorized !== true) {
    const why = socket.authorizationError ? ` (${String(socket.authorizationError)})` : ''
    return { ok: false, reason: `the client certificate does not chain to the client CA of this service${why}; use the certificate issued to your company` }
  }
  return { ok: true, subject: bindableSubject(cert.subject), fingerprint256: cert.fingerprint256 }
}

/**
 * A value holding a DN separator could forge another subject once flattened to
 * `K=V,K=V` (CN `a,O=b` would read as `CN=a,O=b`), so such a subject binds to nothing.
 */
function bindableSubject (subject: unknown): string | null {
  if (!subject || typeof subject !== 'object') return null
  for (const v of Object.values(subject as Record<string, unknown>)) {
    for (const one of Array.isArray(v) ? v : [v]) {
      if (typeof one !== 'string' || /[,=+]/.test(one)) return null
    }
  }
  try {
    const canonical = canonicalSubject(subject as Record<string, string | string[]>)
    return canonical.length > 0 ? canonical : null
  } catch {
    return null
  }
}
