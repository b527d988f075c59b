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
import { lmdbPersist, startFastifyPeer } from './fastify-peer.ts'

const dir = process.env.BENCH_C_DIR
if (!dir) failStart('C', new Error('BENCH_C_DIR is not set: C is started by bench/run.ts'))
else startFastifyPeer('C', { persist: lmdbPersist(open({ path: dir, compression: false })) }).catch(err => failStart('C', err))
