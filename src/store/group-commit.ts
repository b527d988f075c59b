/**
 * Group commit, as both engines write: the `writeDurable` calls queued while a commit is
 * being made durable share the next one (bench/README.md#where-post-1--96-goes-e-against-c), each call
 * still all or nothing. The engine says how a batch commits; this unit keeps the queue,
 * answers each call, and reports faults once per episode (fault-log.ts).
 * @module
 */
import type { EpxError } from '../errors.ts'
import { storeUnavailable } from './engine.ts'
import type { FaultLog } from './fault-log.ts'
import type { StoreState } from './guarded-db.ts'
import { notLeading } from './leadership.ts'

/** A queued `writeDurable` call, as an engine's batch runs it. */
export interface Job {
  readonly fn: () => unknown
  readonly resolve: (v: unknown) => void
  readonly reject: (e: unknown) => void
  ok?: boolean
  result?: unknown
  error?: unknown
  /** A fenced write's leadership token (leadership.ts): it lands only if this instance still leads at its commit. */
  fence?: number
  /** Set by the batch: the fence no longer held, the job was not run. */
  fencedOut?: boolean
  /** What its fn asked to run once it is durable (`GroupCommit.afterDurable`). */
  after?: Array<() => void>
}

export interface GroupCommitOptions {
  readonly state: StoreState
  readonly faultLog: FaultLog
  /** Told of every durable write that failed (the metrics). */
  readonly onWriteFailed?: () => void
  forgetUnsavedStructures(): void
  /**
   * Commits one batch: calls `take()` once, when the batch starts (LMDB: inside its
   * transaction, so writes queued until then join it), runs the jobs it returns, and
   * resolves once they are durable. A throw fails every job taken.
   */
  commit(take: () => Job[]): Promise<void>
}

export interface GroupCommit {
  /** Queues a job, or refuses it at once (NO_STORE) when the store cannot answer. */
  push(job: Job, guard: () => void): void
  /** Resolves once every queued job is answered. */
  drained(): Promise<void>
  /** Inside a job's fn: `fn` runs once that job is durable, after it resolves; never if it fails. */
  afterDurable(fn: () => void): void
}

export function groupCommit (o: GroupCommitOptions): GroupCommit {
  let queue: Job[] = []
  let batching: Promise<void> | undefined
  /** The job whose fn runs now: what `afterDurable` attaches to. */
  let running: Job | undefined

  /** A write that did not land: its caller gets NO_STORE, the fault log counts it (not after close()). */
  const refuse = (job: Job, err: EpxError): void => {
    // While the database is unreachable its episode is logged once, by the replica.
    if (o.state.down?.()) o.onWriteFailed?.()
    else if (!o.state.closed) o.faultLog.failed(err)
    job.reject(err)
  }

  const runOneBatch = async (): Promise<void> => {
    let jobs: Job[] = []
    const take = (): Job[] => { jobs = queue; queue = []; return jobs }
    try {
      await o.commit(take)
    } catch (err) {
      // A failed commit (disk full) also rejects a promise shared by its writes
      // (`commitError`); handle it here or it kills the host as an unhandled rejection.
      ;(err as { commitError?: Promise<unknown> } | undefined)?.commitError?.catch(() => {})
      o.forgetUnsavedStructures()
      if (jobs.length === 0) take()
      for (const job of jobs) refuse(job, storeUnavailable(err))
      return
    }
    let landed = false
    for (const job of jobs) {
      // Not a store fault: the write was not this instance's to make any more.
      if (job.fencedOut) job.reject(notLeading())
      else if (job.ok) { job.resolve(job.result); landed = true; if (job.after) runAfter(job.after) } else refuse(job, storeUnavailable(job.error))
    }
    if (landed) o.faultLog.succeeded()
  }

  /** What a durable job asked for: a throw is a bug of its caller's, never the other jobs' answer. */
  const runAfter = (after: ReadonlyArray<() => void>): void => {
    for (const fn of after) {
      try { fn() } catch (err) { queueMicrotask(() => { throw err }) }
    }
  }

  const runBatches = async (): Promise<void> => {
    try {
      while (queue.length > 0) await runOneBatch()
    } finally {
      batching = undefined
    }
  }

  return {
    push (job, guard) {
      // A refusal is a rejection, and a fault, like every other failure.
      try { guard() } catch (err) { refuse(job, err as EpxError); return }
      // A copy whose fn says it runs, so a call of `afterDurable` inside it finds its job.
      const mine: Job = { ...job, fn: () => { running = mine; try { return job.fn() } finally { running = undefined } } }
      queue.push(mine)
      batching ??= runBatches()
    },
    drained: () => batching ?? Promise.resolve(),
    afterDurable (fn) {
      if (!running) throw new Error('afterDurable outside writeDurable: there is no write to wait for')
      ;(running.after ??= []).push(fn)
    },
  }
}
