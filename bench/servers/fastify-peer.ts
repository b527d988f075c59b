/**
 * The Fastify peers B, C and D, one server: Fastify 5 over https with the same certificates,
 * a GET route with querystring and response schemas (fast-json-stringify) serving the same
 * document from memory, a 304 on a matching If-None-Match, and a POST route with the
 * programme's body schema (ajv). What differs is `persist`: none for B, one durable
 * lmdb-js commit for C and D (`lmdbPersist`). Logger off for B and C: Fastify's default,
 * the way most people run a benchmark. D adds what epx does per request
 * (fastify-full.ts): a request log, a check of the caller, the document read from lmdb-js.
 * @module
 */
import { readFileSync } from 'node:fs'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { Database } from 'lmdb'
import { send, serveControl, serverConfig, tlsOptions } from './harness.ts'
import { acceptedSchema, besoinsAgregesSchema, programmeSoutirageSchema, querystringSchema } from './schemas.ts'

export interface Programme {
  target_date: string
  emitted_at: string
  slot_duration_secs: number
  sites: Array<{ site_id: string; energie_programmee: Array<{ debut_utc: string; fin_utc: string; energie_kwh: number }> }>
}

function compactUtc (instant: string): string {
  // 2026-11-21T12:30:00Z → 20261121T123000Z (the instruction id's basic format)
  return instant.replace(/[-:]/g, '').replace(/\.000Z$/, 'Z')
}

/** What a peer does beyond B's: C persists; D also logs, checks its caller and reads the document from its store. */
export interface PeerExtras {
  /** Runs before each 202 (none: nothing is kept). */
  readonly persist?: (p: Programme, instructionId: string) => Promise<void>
  /** The request log (none: Fastify's logger off). */
  readonly logger?: Logger
  /** Before each route's handler: answers 401/403 itself, or lets the request through. */
  readonly authorize?: (scope: string) => (req: FastifyRequest, reply: FastifyReply) => Promise<void>
  /** The GET's document and validators (none: the document from memory, serialized each time). */
  readonly document?: (req: FastifyRequest<{ Querystring: { site_id: string; target_date: string } }>, reply: FastifyReply) => Promise<unknown>
}

/** One lmdb-js transaction per POST, one record per site, the 202 once it is flushed to disk (C and D). */
export function lmdbPersist (db: Database): NonNullable<PeerExtras['persist']> {
  return async (p, id) => {
    await db.transaction(() => {
      for (const s of p.sites) {
        db.put(`${s.site_id}/${p.target_date}/${id}`, {
          instruction_id: id, site_id: s.site_id, target_date: p.target_date, emitted_at: p.emitted_at,
          slot_duration_secs: p.slot_duration_secs,
          slots: s.energie_programmee.map(e => [e.debut_utc, e.energie_kwh]),
        })
      }
    })
    await db.flushed
  }
}

/** Starts the peer `name`, with what it does beyond B's. */
export async function startFastifyPeer (name: 'B' | 'C' | 'D', extras: PeerExtras = {}): Promise<void> {
  const { persist, authorize } = extras
  const cfg = serverConfig()
  const doc = JSON.parse(readFileSync(cfg.documentFile, 'utf8')) as object
  const app = Fastify({
    ...(extras.logger ? { loggerInstance: extras.logger } : { logger: false }),
    bodyLimit: 10 * 1024 * 1024,   // epx's default inbound.maxBodyBytes
    keepAliveTimeout: 65_000,
    https: tlsOptions(cfg),
  })

  app.get<{ Querystring: { site_id: string; target_date: string } }>('/api/v0.5/energy-programs/besoins-agreges', {
    schema: { querystring: querystringSchema, response: { 200: besoinsAgregesSchema, 304: { type: 'null' } } },
    ...(authorize ? { onRequest: authorize('outbound:besoins-agreges') } : {}),
  }, async (req, reply) => {
    if (extras.document) return extras.document(req, reply)
    reply.header('etag', cfg.etag)
    reply.header('last-modified', cfg.lastModified)
    reply.header('cache-control', 'private, max-age=60, must-revalidate')
    if (req.headers['if-none-match'] === cfg.etag) {
      reply.code(304)
      return reply.send()
    }
    return doc
  })

  app.post('/api/v0.5/energy-programs/programme-soutirage', {
    schema: { body: programmeSoutirageSchema, response: { 202: acceptedSchema } },
    ...(authorize ? { onRequest: authorize('inbound:programme-soutirage') } : {}),
  }, async (req, reply) => {
    const p = req.body as Programme
    const id = `ProgrammeSoutirage-${p.target_date}-rev-${compactUtc(p.emitted_at)}`
    if (persist) await persist(p, id)
    const instructions = p.sites.map(s => ({ instruction_id: id, site_id: s.site_id, periods_count: s.energie_programmee.length }))
    reply.code(202)
    return {
      status: 'received',
      count: instructions.length,
      instructions,
      message: `${instructions.length} instruction(s) persisted; they will be applied at the next solver cycle`,
    }
  })

  serveControl(name)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const addr = app.server.address()
  send({ type: 'ready', port: typeof addr === 'object' && addr ? addr.port : 0 })
}
