/**
 * TLS session resumption that keeps the certificate verdict (DECISIONS.md "Robustness":
 * the certificate check must hold under resumption). A resumed connection skips the
 * certificate exchange, so what its socket reports is not trusted: the server keeps its
 * own cache, keyed by session id, of the identity each full handshake proved, and a
 * resumed connection adopts exactly that identity (`auth/client-cert.ts`).
 *
 * - Only TLS 1.2 sessions resume. Session tickets stay off (`SSL_OP_NO_TICKET`): a ticket
 *   carries its verdict in OpenSSL's session state, and a TLS 1.3 ticket resumed without
 *   a certificate reports `authorized` (the open Node issue DECISIONS.md names). TLS 1.3
 *   resumes by a PSK identity that node 20's session callbacks never see (they get the
 *   ClientHello's legacy session id, random in TLS 1.3), so a TLS 1.3 client always gets
 *   a full handshake and its sessions are not kept.
 * - Only a session whose certificate chained to the client CA is kept: resuming any other
 *   would prove nothing, and an anonymous client cannot fill the cache to evict others.
 * - Bounded (`api.tls.sessionCacheSize`, oldest out first) and timed
 *   (`api.tls.sessionTimeoutSeconds`, by the injected clock and by OpenSSL's own check).
 * - A session whose certificate the revocation list now names is refused: the client gets
 *   a full handshake and its 403. A connection that resumes is checked against the list
 *   in force at its first request, as an open connection is when the list changes.
 * - A resumed connection whose session is no longer in the cache (evicted between the
 *   ClientHello and the end of the handshake) is closed: its verdict cannot be recovered.
 * @module
 */
import type { Server } from 'node:tls'
import type { TLSSocket } from 'node:tls'
import type { Clock } from '../host/contract.ts'
import { adoptIdentity, judge, provenIdentity, type ProvenIdentity, type RevocationCheck } from '../auth/client-cert.ts'

export interface SessionCacheOptions {
  /** Sessions kept at most; 0 turns resumption off. */
  readonly size: number
  readonly timeoutSeconds: number
  readonly clock: Clock
}

interface Kept {
  readonly data: Buffer
  readonly expiresAt: number
  readonly proven: ProvenIdentity
  /** The revocation generation `proven` was last checked at. */
  generation: number
}

/** What the cache did, for the tests and the bench. */
export interface SessionStats {
  kept: number
  resumed: number
  refused: number
}

/**
 * Keeps the sessions of `server`'s TLS 1.2 full handshakes with their proven identity,
 * and resumes them. `revocation` is consulted when a session is offered.
 */
export function keepSessionVerdicts (server: Server, opts: SessionCacheOptions, revocation: RevocationCheck | undefined): SessionStats {
  const stats: SessionStats = { kept: 0, resumed: 0, refused: 0 }
  if (opts.size <= 0) return stats
  const ttlMs = opts.timeoutSeconds * 1000
  // Sessions whose handshake is not over yet, apart: a handshake of anyone, certificate
  // or not, must not push a proven session out.
  const pending = new Map<string, Buffer>()
  const kept = new Map<string, Kept>()

  server.on('newSession', (id: Buffer, data: Buffer, done: () => void) => {
    if (sessionVersion(data) === TLS12) addBounded(pending, id.toString('hex'), data, opts.size)
    done()
  })

  server.on('resumeSession', (id: Buffer, done: (err: null, data: Buffer | null) => void) => {
    const key = id.toString('hex')
    const k = kept.get(key)
    if (k === undefined) return done(null, null)
    if (opts.clock.now().getTime() >= k.expiresAt || !stillValid(k, revocation)) {
      kept.delete(key)
      stats.refused++
      return done(null, null)
    }
    done(null, k.data)
  })

  const refuse = (socket: TLSSocket) => {
    stats.refused++
    socket.destroy()
  }
  server.on('secureConnection', (socket: TLSSocket) => {
    const resumed = socket.isSessionReused()
    if (socket.getProtocol() !== 'TLSv1.2') {
      if (resumed) refuse(socket)   // never from this cache: whatever resumed it, its verdict is unknown
      return
    }
    const key = sessionIdOf(socket.getSession())
    if (!resumed) {
      const data = key === undefined ? undefined : pending.get(key)
      if (data === undefined) return
      pending.delete(key!)
      const proven = provenIdentity(socket)
      if (!proven.chained.ok) return
      addBounded(kept, key!, { data, expiresAt: opts.clock.now().getTime() + ttlMs, proven, generation: -1 }, opts.size)
      stats.kept++
      return
    }
    const k = key === undefined ? undefined : kept.get(key)
    if (k === undefined) return refuse(socket)
    stats.resumed++
    adoptIdentity(socket, k.proven)
  })
  return stats
}

/** Whether a kept session's certificate is still not revoked (checked once per list). */
function stillValid (k: Kept, revocation: RevocationCheck | undefined): boolean {
  if (revocation === undefined || k.generation === revocation.generation) return true
  k.generation = revocation.generation
  return judge(k.proven, revocation).ok
}

/** Adds `key` last; past `size` entries, the oldest goes (a Map iterates in insertion order). */
function addBounded<V> (map: Map<string, V>, key: string, value: V, size: number): void {
  map.delete(key)
  map.set(key, value)
  if (map.size > size) map.delete(map.keys().next().value!)
}

const TLS12 = 0x0303

/**
 * OpenSSL's session encoding (ssl/ssl_asn1.c): SEQUENCE { version INTEGER, ssl_version
 * INTEGER, cipher OCTET STRING, session_id OCTET STRING, … }. Node gives the session id
 * in 'newSession' and 'resumeSession' but not on the socket, so it is read here.
 */
export function sessionFields (der: Buffer | undefined): { version: number; id: Buffer } | undefined {
  if (der === undefined) return undefined
  let at = 0
  const header = (tag: number): number | undefined => {
    if (der[at++] !== tag) return undefined
    let len = der[at++]
    if (len === undefined) return undefined
    if (len & 0x80) {
      const n = len & 0x7f
      if (n === 0 || n > 3) return undefined
      len = 0
      for (let i = 0; i < n; i++) len = (len << 8) | (der[at++] ?? 0)
    }
    return at + len <= der.length ? len : undefined
  }
  const field = (tag: number): Buffer | undefined => {
    const len = header(tag)
    if (len === undefined) return undefined
    at += len
    return der.subarray(at - len, at)
  }
  if (header(0x30) === undefined || field(0x02) === undefined) return undefined
  const version = field(0x02)
  if (version === undefined || field(0x04) === undefined) return undefined
  const id = field(0x04)
  if (id === undefined) return undefined
  if (version.length === 0 || version.length > 6) return undefined
  return { version: version.readUIntBE(0, version.length), id }
}

function sessionVersion (der: Buffer): number | undefined {
  return sessionFields(der)?.version
}

function sessionIdOf (der: Buffer | undefined): string | undefined {
  const f = sessionFields(der)
  return f === undefined || f.id.length === 0 ? undefined : f.id.toString('hex')
}
