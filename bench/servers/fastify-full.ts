/**
 * Server D, what a team would build with Fastify to do per request what epx does, the
 * usual way: server C (fastify-peer.ts, a durable lmdb-js commit per POST) plus
 * - the request log: Fastify's own (pino's two lines a request, `incoming request` and
 *   `request completed`), to a file through the destination E's log uses;
 * - the caller's check on every request: the client certificate verified against the
 *   client CA and its SHA-256 fingerprint (read once per connection) bound to a company, the bearer token looked up
 *   by its SHA-256 hash in lmdb-js (unknown, revoked, expired: 401), the company active
 *   and the token's scope the route's (403);
 * - the GET's document read from lmdb-js with its validators: 200 with `ETag`, 304 on a
 *   matching `If-None-Match`, 404 for a site the company does not hold.
 * What it leaves out of epx's work: the rate limit, the contract's rules beyond the
 * schema, the audit trail, the solver's queue, the delivery receipts.
 * @module
 */
import { createHash, X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TLSSocket } from 'node:tls'
import type { FastifyReply } from 'fastify'
import { open } from 'lmdb'
import pino from 'pino'
import { failStart, serverConfig } from './harness.ts'
import { lmdbPersist, startFastifyPeer } from './fastify-peer.ts'

/** What bench/run.ts hands D: its folder, the bench client's certificate, the tokens' secrets and the GET's site and day. */
interface DOptions {
  readonly dir: string
  readonly clientCertPem: string
  readonly secrets: { readonly outbound: string; readonly inbound: string }
  readonly siteId: string
  readonly targetDate: string
}

interface TokenRecord { companyId: string; scopes: string[]; expiresAt: number | null; revokedAt: number | null }
interface CompanyRecord { status: 'active' | 'suspended'; certFingerprint256: string; perimeter: 'all' | string[] }
interface DocumentMeta { etag: string; lastModified: string }

/** E's log destination (servers/epx.ts): synchronous, 4 KiB a write. */
const LOG_BUFFER_BYTES = 4096

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')

/**
 * The peer certificate's fingerprint, read once per connection: `getPeerCertificate()`
 * builds the whole certificate as an object (~170 µs a call, measured on a loaded 2-core
 * machine), more than the rest of the check; a team that measures keeps it on the
 * connection, as epx keeps its verdict.
 */
const fingerprints = new WeakMap<TLSSocket, string>()
function fingerprintOf (socket: TLSSocket): string {
  let f = fingerprints.get(socket)
  if (f === undefined) fingerprints.set(socket, f = socket.getPeerCertificate().fingerprint256)
  return f
}

async function main (): Promise<void> {
  const cfg = serverConfig()
  const o = JSON.parse(process.env.BENCH_D ?? '{}') as DOptions
  if (!o.dir) throw new Error('BENCH_D is not set: D is started by bench/run.ts')
  const root = open({ path: join(o.dir, 'store'), compression: false })
  const tokens = root.openDB<TokenRecord, string>({ name: 'tokens' })
  const companies = root.openDB<CompanyRecord, string>({ name: 'companies' })
  const meta = root.openDB<DocumentMeta, string>({ name: 'document-meta' })
  const bodies = root.openDB<Buffer, string>({ name: 'documents', encoding: 'binary' })
  const programmes = root.openDB({ name: 'programmes' })

  // Seeded as an operator's commands would: the company, its two tokens, the published document.
  const key = `${o.siteId}/${o.targetDate}`
  await root.transaction(() => {
    companies.put('bench-bsp', { status: 'active', certFingerprint256: new X509Certificate(o.clientCertPem).fingerprint256, perimeter: 'all' })
    tokens.put(sha256(o.secrets.outbound), { companyId: 'bench-bsp', scopes: ['outbound:besoins-agreges'], expiresAt: null, revokedAt: null })
    tokens.put(sha256(o.secrets.inbound), { companyId: 'bench-bsp', scopes: ['inbound:programme-soutirage'], expiresAt: null, revokedAt: null })
    meta.put(key, { etag: cfg.etag, lastModified: cfg.lastModified })
    bodies.put(key, readFileSync(cfg.documentFile))
  })

  const logger = pino({ level: 'info' }, pino.destination({ dest: join(o.dir, 'd.log'), sync: true, minLength: LOG_BUFFER_BYTES }))
  const deny = (reply: FastifyReply, status: number, code: string) => reply.code(status).send({ error: { code } })

  await startFastifyPeer('D', {
    logger,
    persist: lmdbPersist(programmes),
    authorize: scope => async (req, reply) => {
      const socket = req.raw.socket as TLSSocket
      if (!socket.authorized) return deny(reply, 403, 'MTLS_REQUIRED')
      const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')
      const token = bearer ? tokens.get(sha256(bearer[1]!)) : undefined
      const now = Date.now()
      if (!token || token.revokedAt !== null || (token.expiresAt !== null && token.expiresAt <= now)) return deny(reply, 401, 'UNAUTHORIZED')
      const company = companies.get(token.companyId)
      if (!company || company.certFingerprint256 !== fingerprintOf(socket)) return deny(reply, 403, 'MTLS_REQUIRED')
      if (company.status !== 'active') return deny(reply, 403, 'COMPANY_SUSPENDED')
      if (!token.scopes.includes(scope)) return deny(reply, 403, 'SCOPE_DENIED')
      const site = (req.query as { site_id?: string }).site_id
      if (site !== undefined && company.perimeter !== 'all' && !company.perimeter.includes(site)) return deny(reply, 404, 'NOT_PUBLISHED')
    },
    document: async (req, reply) => {
      const k = `${req.query.site_id}/${req.query.target_date}`
      const m = meta.get(k)
      if (!m) return deny(reply, 404, 'NOT_PUBLISHED')
      reply.header('etag', m.etag)
      reply.header('last-modified', m.lastModified)
      reply.header('cache-control', 'private, max-age=60, must-revalidate')
      if (req.headers['if-none-match'] === m.etag) return reply.code(304).send()
      return reply.type('application/json').send(bodies.get(k))
    },
  })
}

main().catch(err => failStart('D', err))
