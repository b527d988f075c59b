/**
 * The Fastify peers B and C, one server: Fastify 5 over https with the same certificates,
 * a GET route with querystring and response schemas (fast-json-stringify) serving the same
 * document from memory, a 304 on a matching If-None-Match, and a POST route with the
 * programme's body schema (ajv). What differs is `persist`: none for B, one durable
 * lmdb-js commit for C. Logger off: Fastify's default, the way most people run a benchmark.
 * @module
 */
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'
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

/** Starts the peer `name`; `persist` runs before each 202 (none: nothing is kept). */
export async function startFastifyPeer (name: 'B' | 'C', persist?: (p: Programme, instructionId: string) => Promise<void>): Promise<void> {
  const cfg = serverConfig()
  const doc = JSON.parse(readFileSync(cfg.documentFile, 'utf8')) as object
  const app = Fastify({
    logger: false,
    bodyLimit: 10 * 1024 * 1024,   // epx's default inbound.maxBodyBytes
    keepAliveTimeout: 65_000,
    https: tlsOptions(cfg),
  })

  app.get('/api/v0.5/energy-programs/besoins-agreges', {
    schema: { querystring: querystringSchema, response: { 200: besoinsAgregesSchema, 304: { type: 'null' } } },
  }, async (req, reply) => {
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
