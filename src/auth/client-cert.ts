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

const verdicts = new WeakMap<object, CertVerdict>()

/**
 * The verdict of the connection behind a request. `getPeerCertificate()` costs tens of
 * microseconds, so it runs once per connection and is cached for its keep-alive
 * requests; the WeakMap lets the entry go with the socket.
 */
export function clientCertVerdict (socket: PeerSocket): CertVerdict {
  let v = verdicts.get(socket)
  if (!v) {
    v = computeVerdict(socket)
    verdicts.set(socket, v)
  }
  return v
}

/**
 * DECISIONS.md "Robustness": with `rejectUnauthorized: false` the check is ours. It
 * needs `authorized === true` AND a non-empty peer certificate: over TLS 1.3 a resumed
 * session without any client certificate can report `authorized` with an empty one.
 */
export function computeVerdict (socket: PeerSocket): CertVerdict {
  const cert = socket.getPeerCertificate()
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
