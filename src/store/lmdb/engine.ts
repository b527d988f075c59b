/**
 * The LMDB engine: the store is the LMDB folder on this host. A write is one child
 * transaction of the group's transaction (all or nothing) and durable once lmdb-js's
 * `flushed` resolves (under its default overlappingSync a commit is durable only then,
 * DECISIONS.md "Robustness"). One instance opens it: it always leads, and nothing is
 * fenced or followed.
 * @module
 */
import type { Logger } from '../../host/contract.ts'
import type { Store, StoreFaults } from '../engine.ts'
import { createFaultLog } from '../fault-log.ts'
import { groupCommit, type Job } from '../group-commit.ts'
import { guardedDb } from '../guarded-db.ts'
import { soleInstance } from '../leadership.ts'
import { backupEnvironment } from './backup.ts'
import { openEnvironment } from '../environment.ts'
import { withResolvers } from '../../with-resolvers.ts'

export interface LmdbStoreOptions {
  readonly mapSizeBytes?: number
  readonly faults?: StoreFaults
  /** Where store faults are reported (one line per episode, fault-log.ts); none: not reported. */
  readonly log?: Logger
  /** Told of every durable write that failed (the metrics). */
  readonly onWriteFailed?: () => void
  /** Another thread of this process has this store open (environment.ts). */
  readonly openInThisProcess?: boolean
}

export function openLmdbStore (path: string, opts: LmdbStoreOptions = {}): Store {
  const env = openEnvironment(path, opts)
  const { root, state, checks } = env

  /** Runs each job as one child transaction (all or nothing) of the current transaction. */
  const runJobs = (jobs: readonly Job[]): void => {
    state.writing = true
    try {
      for (const job of jobs) {
        try {
          // childTransaction, not transaction: lmdb-js commits what a throwing nested
          // `transaction` callback wrote before it threw; a child transaction is aborted.
          job.result = root.childTransaction(job.fn) as unknown
          job.ok = true
        } catch (err) {
          job.error = err
          env.forgetUnsavedStructures()
        }
      }
    } finally {
      state.writing = false
    }
  }

  const writes = groupCommit({
    state,
    faultLog: createFaultLog(path, opts.log, undefined, opts.onWriteFailed),
    onWriteFailed: opts.onWriteFailed,
    forgetUnsavedStructures: env.forgetUnsavedStructures,
    async commit (take) {
      // Taken when the transaction starts, so writes queued until then join it.
      await root.transaction(() => runJobs(take()))
      await root.flushed
    },
  })

  return {
    shared: false,
    path,
    faults: env.faults,
    opened: Promise.resolve(),
    ready: () => !env.faults.unavailable && !state.closed,
    onApplied: () => () => {},
    verify: () => Promise.resolve(undefined),
    threadShare: () => undefined,
    db (name, o = {}) {
      return env.handle(name, o, d => guardedDb(d, checks))
    },
    guard: checks.readable,
    latest: () => { if (!state.closed) env.root.resetReadTxn() },
    fresh: () => { if (!state.closed) env.fresh() },
    afterDurable: fn => writes.afterDurable(fn),
    leadership: () => soleInstance,
    writeDurable<T> (fn: () => T): Promise<T> {
      const { promise, resolve, reject } = withResolvers<T>()
      try { writes.push({ fn, resolve: resolve as (v: unknown) => void, reject }, checks.readable) } catch (err) { reject(err) }
      return promise
    },
    backup: dir => backupEnvironment(root, path, dir),
    async close () {
      if (state.closed) return
      state.closed = true
      // Writes already accepted finish (or fail) before the environment goes.
      try { await writes.drained(); await root.flushed } finally {
        await env.close()
      }
    },
  }
}
