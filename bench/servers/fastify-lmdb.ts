/**
 * Server C, what a team would build to persist programmes: server B (Fastify 5 over https,
 * the programme's body schema validated by Fastify's ajv, the same GET route) plus one
 * durable lmdb-js commit per POST: one record per site (the instruction id, the site, the
 * day, the emission instant and its quarter-hours) put in one transaction, the 202 sent
 * once that commit is flushed to disk (`flushed`, as lmdb-js's default overlapping sync
 * needs for durability), the way epx answers. No audit trail, no status, no index: the
 * least a durable 202 needs.
 * @module
 */
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'
import { open } from 'lmdb'
import { failStart, send, serveControl, serverConfig, tlsOptions } from './harness.ts'
import { acceptedSchema, besoinsAgregesSchema, programmeSoutirageSchema, querystringSchema } from './schemas.ts'

interface Programme {
  target_date: string
  emitted_at: string
  slot_duration_secs: number
  sites: Array<{ site_id: string; energie_programmee: Array<{ debut_utc: string; fin_utc: string; energie_kwh: number }> }>
}

function compactUtc (instant: string): string {
  return instant.replace(/[-:]/g, '').replace(/\.000Z$/, 'Z')
}

async function main (): Promise<void> {
  const cfg = serverConfig()
  const dir = process.env.BENCH_C_DIR
  if (!dir) throw new Error('BENCH_C_DIR is not set: C is started by bench/run.ts')
  const db = open({ path: dir, compression: false })
  const doc = JSON.parse(readFileSync(cfg.documentFile, 'utf8')) as object
  const app = Fastify({
    logger: false,
    bodyLimit: 10 * 1024 * 1024,
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
    const instructions = p.sites.map(s => ({ instruction_id: id, site_id: s.site_id, periods_count: s.energie_programmee.length }))
    reply.code(202)
    return {
      status: 'received',
      count: instructions.length,
      instructions,
      message: `${instructions.length} instruction(s) persisted; they will be applied at the next solver cycle`,
    }
  })

  serveControl('C')
  await app.listen({ port: 0, host: '127.0.0.1' })
  const addr = app.server.address()
  send({ type: 'ready', port: typeof addr === 'object' && addr ? addr.port : 0 })
}

main().catch(err => failStart('C', err))
