/**
 * Whether a replica can follow its database from where it is, or must be loaded whole:
 * a new folder, a replica of another database, one whose last load did not verify, one
 * ahead of the database (a failover to a standby that lacked the last commits) or
 * offline longer than removals are kept. A load ends with the replica, caught up under
 * the write lock, compared with the database (verify.ts): until they are equal it is
 * never served.
 * @module
 */
import type { ClientBase } from 'pg'
import { EpxError } from '../../errors.ts'
import type { Logger } from '../../host/contract.ts'
import type { LocalReplica } from './local-replica.ts'
import { REMOVALS_KEPT_DAYS, WRITE_LOCK_KEY } from './schema.ts'
import { verifyReplica } from './verify.ts'

export interface LoadContext {
  readonly local: LocalReplica
  readonly where: string
  readonly log?: Logger
  forgetUnsavedStructures(): void
}

/** Before following: clears the replica and starts a load from seq 0 when it cannot follow. */
export async function ensureFollowable (c: LoadContext, databaseId: string, client: ClientBase): Promise<void> {
  const { local, log, where } = c
  const at = { path: local.path, database: where }
  if (local.databaseId() === databaseId) {
    // The same database behind an earlier point than this replica has applied: a
    // failover to a standby that lacked the last commits (asynchronous replication).
    // What this replica holds of them exists nowhere else now, and the database's new
    // changes may reuse their seq numbers: reload.
    const { top, pruned } = (await client.query<{ top: string; pruned: string }>(
      'SELECT greatest((SELECT max(seq) FROM epx_record), pruned_through, 0)::text AS top, pruned_through::text AS pruned FROM epx_schema')).rows[0]!
    const cursor = local.cursor()
    if (Number(top) < cursor) {
      log?.warn({ ...at, cursor, databaseSeq: Number(top) }, 'the database is behind what this replica applied (a failover lost its last commits?): reloading the replica from the database')
    } else if (local.loading()) {
      log?.warn(at, 'the local replica\'s last load from the database did not finish, or did not verify: loading it again')
    } else if (cursor < Number(pruned)) {
      // Offline longer than removals are kept: some it never saw are gone from the database.
      log?.info({ ...at, cursor, prunedThrough: Number(pruned) },
        `the local replica was offline longer than removals are kept (${REMOVALS_KEPT_DAYS} days): reloading it from the database`)
    } else {
      return
    }
  } else if (local.databaseId() === undefined) {
    if (local.holdsAnLmdbStore()) {
      throw new EpxError('EPX_STORE_OPEN_FAILED', [local.path,
        'it holds an LMDB store (store.kind "lmdb"), not a replica of a PostgreSQL store: move its records into the database with `epx store copy --to postgres`, then point store.path at a new folder'])
    }
    log?.info(at, 'the local replica is new: loading it from the database')
  } else {
    log?.info(at, 'the local replica is of another database: loading it from the database')
  }
  // `loading` until the load is verified (finishLoad): a replica whose load was cut
  // short, or does not equal the database, is loaded again, never served.
  await local.startLoad(databaseId, c.forgetUnsavedStructures)
}

/**
 * After a load from scratch: the replica, caught up under the write lock, must equal the
 * database, or the store does not open. Costs one more read of the database, paid only
 * when a replica is loaded whole.
 */
export async function finishLoad (c: LoadContext, client: ClientBase, catchUp: () => Promise<void>): Promise<void> {
  const { local, log, where } = c
  const started = Date.now()
  const v = await verifyReplica(local, client, { underWriteLock: { key: WRITE_LOCK_KEY, catchUp } })
  if (v.kind !== 'compared' || v.differ.length > 0) {
    const why = v.kind === 'compared'
      ? `sub-database(s) ${v.differ.join(', ')} differ after the load (${v.tables.filter(t => v.differ.includes(t.db)).map(t => `${t.db}: ${t.replica.records} record(s) here, ${t.postgres.records} in the database`).join('; ')})`
      : `the replica is at change ${v.cursor} and the database at ${v.seq} under the write lock`
    throw new EpxError('EPX_STORE_OPEN_FAILED', [local.path, `the replica loaded from ${where} does not equal it: ${why}; it is loaded again at the next connection`])
  }
  await local.loadVerified()
  const records = v.tables.reduce((n, t) => n + t.replica.records, 0)
  log?.info({ path: local.path, database: where, records, seq: v.seq, ms: Date.now() - started }, 'the local replica is loaded and verified: it equals the database')
}
