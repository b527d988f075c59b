/**
 * Server C, what a team would build to persist programmes: server B (fastify-peer.ts) plus
 * one durable lmdb-js commit per POST: one record per site (the instruction id, the site,
 * the day, the emission instant and its quarter-hours) put in one transaction, the 202 sent
 * once that commit is flushed to disk (`flushed`, as lmdb-js's default overlapping sync
 * needs for durability), the way epx answers. No audit trail, no status, no index: the
 * least a durable 202 needs.
 * @module
 */
import { open } from 'lmdb'
import { failStart } from './harness.ts'
import { startFastifyPeer } from './fastify-peer.ts'

const dir = process.env.BENCH_C_DIR
if (!dir) failStart('C', new Error('BENCH_C_DIR is not set: C is started by bench/run.ts'))
else {
  const db = open({ path: dir, compression: false })
  startFastifyPeer('C', async (p, id) => {
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
  }).catch(err => failStart('C', err))
}
