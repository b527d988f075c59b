/**
 * This instance's replica of a PostgreSQL store: PostgreSQL holds the truth, the local
 * LMDB environment copies it and is read synchronously as the LMDB engine is. Its units:
 * - `local-replica.ts`: the LMDB side, where every change lands in seq order with the
 *   cursor, and `segment-mirror.ts` for revisions' bytes;
 * - `write-batch.ts`: this instance's writes, committed in the database first;
 * - `change-feed.ts`: other writers' changes, followed (one store per process does: the
 *   door's worker shares the main store's replica, reads its availability cell and notes
 *   its commits in `own-writes.ts`), and `replica-load.ts` for a replica loaded whole and verified;
 * - `pruner.ts`: old removals dropped from the database;
 * - `connections.ts`: the pool and the feed's connection.
 * @module
 */
import type { Database, Key, RootDatabase } from 'lmdb'
import type { PoolConfig } from 'pg'
import { EpxError } from '../../errors.ts'
import type { Logger } from '../../host/contract.ts'
import type { AppliedChanges } from '../engine.ts'
import type { Job } from '../group-commit.ts'
import { ChangeFeed } from './change-feed.ts'
import { Connections, describePool } from './connections.ts'
import { LocalReplica } from './local-replica.ts'
import { startPruner } from './pruner.ts'
import { verifyWhenAtSnapshot, type Verification } from './verify.ts'
import { OwnWrites } from './own-writes.ts'
import { WriteBatches } from './write-batch.ts'

export type { AppliedChanges } from '../engine.ts'

export interface PostgresStoreOptions {
  /** Connection settings (store.postgres, made into a pool configuration). */
  readonly pool: PoolConfig
  /**
   * Whether this store follows the change feed (LISTEN, catch-up, `onApplied`): the
   * process's main store does (default). The door's worker does not: its replica is the
   * same LMDB environment, and it reads the main store's `availability`.
   */
  readonly follow?: boolean
  /** The following store's availability cell (`Store.threadShare()`), for a store that does not follow. */
  readonly availability?: SharedArrayBuffer
  /** The following store's record of this process's commits (`Store.threadShare()`, own-writes.ts), where a store that does not follow notes its own. */
  readonly ownWrites?: SharedArrayBuffer
  /** The database in messages and logs (never a password). Default: host/database of `pool`. */
  readonly describe?: string
  /** A failure to connect as what to check (connect.ts), or undefined for any other error. */
  readonly explain?: (err: unknown) => EpxError | undefined
  /** The feed's safety-net poll (ms): a lost notification is caught up within it. */
  readonly pollMs?: number
  /** SQL text per statement of a write batch (default 16 MiB; tests make it small). */
  readonly statementBytes?: number
}

/** A batch's job as the replica runs it (group-commit.ts). */
export type BatchJob = Job

/** What the replica needs of the LMDB environment it lives in (../environment.ts). */
export interface ReplicaHost {
  readonly root: RootDatabase
  readonly path: string
  /** The raw sub-database `name`, opened with its encoding if it was not. */
  rawDb(name: string): Database<any, Key>
  /** Marks the queued writes running (guarded-db's `writing`). */
  setWriting(on: boolean): void
  /** Forget msgpack structures an aborted transaction saved (../environment.ts). */
  forgetUnsavedStructures(): void
  readonly log?: Logger
}

export interface Replica {
  /** Resolves once the schema is checked and the replica caught up; rejects with a coded error. */
  readonly opened: Promise<void>
  /** [0] = 1 while the store can answer (the feed is up and caught up). */
  readonly availability: SharedArrayBuffer
  /** This process's commits (own-writes.ts), noted by every store opened beside this one. */
  readonly ownWrites: SharedArrayBuffer
  ready(): boolean
  /** A put (`removed` false) or remove made by a running job. */
  record(db: string, key: Key, value: unknown, removed: boolean): void
  /** Runs the jobs as one database transaction; throws when none of them landed. */
  runBatch(jobs: readonly BatchJob[]): Promise<void>
  onApplied(listener: (changes: AppliedChanges) => void): () => void
  /** Whether this replica equals the database now (verify.ts), once it is at the database's snapshot. */
  verify(): Promise<Verification>
  close(): Promise<void>
}

export function openReplica (host: ReplicaHost, options: PostgresStoreOptions): Replica {
  const where = options.describe ?? describePool(options.pool)
  const follow = options.follow ?? true
  const availability = options.availability ?? new SharedArrayBuffer(4)
  const cell = new Int32Array(availability)
  const connections = new Connections(options.pool, where, host.log)
  const local = new LocalReplica(host.root, host.path, host.rawDb)
  const own = new OwnWrites(options.ownWrites)
  const feed = follow
    ? new ChangeFeed({ local, connections, own, cell, where, log: host.log, pollMs: options.pollMs, forgetUnsavedStructures: host.forgetUnsavedStructures })
    : undefined
  const writes = new WriteBatches({
    root: host.root, local, connections, own, log: host.log,
    setWriting: host.setWriting, forgetUnsavedStructures: host.forgetUnsavedStructures,
    catchUpSoon: () => feed?.catchUpSoon(),
    boundMs: options.pool.query_timeout ?? (options.pool.statement_timeout ? options.pool.statement_timeout + 2000 : undefined),
    statementBytes: options.statementBytes,
  })
  const stopPruning = feed ? startPruner(connections, () => feed.up(), host.log, host.path) : () => {}
  let closed = false
  const verifyOnce = () => connections.withClient(client => verifyWhenAtSnapshot(local, client))

  const opened = feed
    ? feed.opened.catch(err => {
      throw err instanceof EpxError ? err : options.explain?.(err) ?? new EpxError('EPX_STORE_OPEN_FAILED', [`${where} (PostgreSQL)`, (err as Error).message], { cause: err })
    })
    : connections.loaded()
  opened.catch(() => {})

  return {
    opened,
    availability,
    ownWrites: own.buffer,
    ready: () => !closed && Atomics.load(cell, 0) === 1,
    record: (db, key, value, removed) => writes.record(db, key, value, removed),
    runBatch: jobs => writes.run(jobs),
    // Read only, so tried twice: a pooled connection whose server side ended since it was
    // last used (a database restart, a terminated backend) fails at its first write (EPIPE)
    // and is dropped; the second try has a fresh one. A failure that lasts fails both.
    verify: () => verifyOnce().catch(() => verifyOnce()),
    onApplied: listener => feed ? feed.onApplied(listener) : () => {},
    async close () {
      if (closed) return
      closed = true
      stopPruning()
      await feed?.close()
      await connections.end()
    },
  }
}
