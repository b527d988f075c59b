/**
 * The PostgreSQL engine: the database holds the store, shared by every instance
 * configured on it; the LMDB folder is this instance's replica (replica.ts), read
 * synchronously as the LMDB engine is. A write batch commits in the database before any
 * of its calls resolves, then lands in the replica; other writers' changes come in
 * through the change feed. The leadership of the instances is the database's
 * (leader.ts), opened on first use.
 * @module
 */
import { EpxError } from '../../errors.ts'
import type { Logger } from '../../host/contract.ts'
import type { Store, StoreFaults } from '../engine.ts'
import { createFaultLog } from '../fault-log.ts'
import { groupCommit } from '../group-commit.ts'
import { guardedDb } from '../guarded-db.ts'
import { currentFence, notLeading } from '../leadership.ts'
import { REVISION_BYTES_DB, SUB_DATABASES } from '../sub-databases.ts'
import { storeUnavailable } from '../engine.ts'
import { openEnvironment } from '../environment.ts'
import { pgLeadership, type PgLeadership } from './leader.ts'
import { openReplica, type PostgresStoreOptions } from './replica.ts'
import { revisionBytesMarkers } from './segment-mirror.ts'
import { withResolvers } from '../../with-resolvers.ts'

export interface PostgresEngineOptions {
  readonly mapSizeBytes?: number
  readonly faults?: StoreFaults
  readonly log?: Logger
  readonly onWriteFailed?: () => void
  /** Another thread of this process has the replica open (../environment.ts). */
  readonly openInThisProcess?: boolean
  readonly postgres: PostgresStoreOptions
}

/** Why `epx store backup` does not copy a replica, and what backs the store up instead. */
export const POSTGRES_BACKUP = 'store.kind is "postgres": the store is the database, back it up with PostgreSQL\'s tools (pg_dump, or the base backups and WAL archive of the cluster); the folder store.path is only this instance\'s replica, rebuilt from the database'

const WRITE_FAULTS = {
  failing: 'store writes to the database are failing (statement timeout, lost connection, read-only database?): ' +
    'every write answers 503 NO_STORE until one succeeds; nothing of a failed write was kept; epx recovers by itself',
  recovered: 'store writes succeed again',
  counted: 'failedWrites',
}

export function openPostgresStore (path: string, opts: PostgresEngineOptions): Store {
  const env = openEnvironment(path, opts)
  const { root, state, checks } = env
  const replica = openReplica({
    root, path, log: opts.log, rawDb: env.rawDb, forgetUnsavedStructures: env.forgetUnsavedStructures,
    setWriting: on => { state.writing = on },
  }, opts.postgres)
  state.down = () => !replica.ready()
  const writes = groupCommit({
    state,
    faultLog: createFaultLog(path, opts.log, undefined, opts.onWriteFailed, WRITE_FAULTS),
    onWriteFailed: opts.onWriteFailed,
    forgetUnsavedStructures: env.forgetUnsavedStructures,
    // The database's COMMIT is the durability point (replica.ts).
    commit: take => replica.runBatch(take()),
  })
  let leader: PgLeadership | undefined

  return {
    shared: true,
    path,
    faults: env.faults,
    opened: replica.opened,
    ready: () => !env.faults.unavailable && replica.ready(),
    onApplied: listener => replica.onApplied(listener),
    verify: () => replica.verify(),
    threadShare: () => ({ availability: replica.availability, ownWrites: replica.ownWrites }),
    db (name, o = {}) {
      if (state.writing && !env.opened(name)) throw new Error(`sub-database ${name} opened inside writeDurable: open it before (the recording transaction is aborted, and the handle with it)`)
      return env.handle(name, o, d => {
        const declared = SUB_DATABASES[name]
        if (declared && declared.binary !== (o.binary ?? false)) throw new Error(`sub-database ${name} is declared ${declared.binary ? 'binary' : 'msgpack'} in store/sub-databases.ts`)
        return guardedDb(name === REVISION_BYTES_DB ? revisionBytesMarkers(d) : d, checks, (key, value, removed) => replica.record(name, key, value, removed))
      })
    },
    guard: checks.readable,
    latest: () => { if (!state.closed) env.root.resetReadTxn() },
    fresh: () => { if (!state.closed) env.fresh() },
    afterDurable: fn => writes.afterDurable(fn),
    leadership: () => {
      if (state.closed) throw storeUnavailable()
      return leader ??= pgLeadership({ connection: opts.postgres.pool, log: opts.log })
    },
    writeDurable<T> (fn: () => T): Promise<T> {
      const { promise, resolve, reject } = withResolvers<T>()
      try {
        const job = { fn, resolve: resolve as (v: unknown) => void, reject, fence: undefined as number | undefined }
        const fence = currentFence()
        if (fence) {
          const token = fence.token()
          if (token === undefined) { reject(notLeading()); return promise }
          job.fence = token
        }
        writes.push(job, checks.readable)
      } catch (err) { reject(err) }
      return promise
    },
    backup: () => Promise.reject(new EpxError('EPX_USAGE', [POSTGRES_BACKUP])),
    async close () {
      if (state.closed) return
      state.closed = true
      // Writes already accepted finish (or fail) before the environment goes.
      try { await writes.drained(); await root.flushed } finally {
        await leader?.close()
        await replica.close()
        await env.close()
      }
    },
  }
}
