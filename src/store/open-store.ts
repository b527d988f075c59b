/**
 * The LMDB environment in the data folder, with the fault seam the 503 paths are
 * tested through. Domain files (companies, tokens, instructions, revisions) open
 * their own sub-databases with `db()`, guarded (guarded-db.ts), and write through
 * `writeDurable`.
 * @module
 */
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { open, type Database, type Key, type RootDatabase } from 'lmdb'
import { EpxError, isEpxError } from '../errors.ts'
import type { Logger } from '../host/contract.ts'
import { checkStoreFiles, type StoreFileCheck } from './check-file.ts'
import { createFaultLog, muteLmdbWriteErrors } from './fault-log.ts'
import { guardedDb, storeChecks, type StoreDb, type StoreState } from './guarded-db.ts'
import { openReplica, revisionBytesMarkers, type AppliedChanges, type PostgresStoreOptions, type Replica } from './postgres/replica.ts'
import { REVISION_BYTES_DB, SUB_DATABASES } from './postgres/schema.ts'
import { currentFence, notLeading, soleInstance, type Leadership } from './leadership.ts'
import { pgLeadership, type PgLeadership } from './postgres/leader.ts'
import type { Verification } from './postgres/verify.ts'

/** Test seam: make the store refuse, as a dead disk or a full map would. */
export interface StoreFaults {
  /** Every read and write throws NO_STORE while true. */
  unavailable?: boolean
  /** Writes inside `writeDurable` fail after this many puts and removes (then resets). */
  failWriteAfter?: number
}

export interface Store {
  /** `lmdb`: the folder is the store. `postgres`: the database is, the folder its replica (postgres/replica.ts). */
  readonly kind: 'lmdb' | 'postgres'
  /** LMDB: the store's folder. PostgreSQL: this instance's replica of the database. */
  readonly path: string
  readonly root: RootDatabase
  /**
   * A named sub-database (msgpack values unless `binary`), guarded: its reads throw
   * NO_STORE when the store cannot answer, its writes are refused outside `writeDurable`
   * and go through the fault seam (a test fails a write half-way).
   */
  db<V = unknown>(name: string, opts?: { binary?: boolean; dupSort?: boolean }): StoreDb<V>
  /** Throws NO_STORE when the store cannot answer: for a read of what lives beside LMDB. */
  guard(): void
  /**
   * Runs `fn` as one LMDB (child) transaction (all or nothing) and resolves once it is
   * on disk: under lmdb-js's default overlappingSync a commit is durable only when
   * `flushed` resolves (DECISIONS.md "Robustness"). Any failure becomes NO_STORE.
   * Concurrent calls share one commit and one flush; each stays all or nothing.
   * Called within a leadership's `fenced` run (leadership.ts), it is refused with NO_STORE
   * (`notLeading`), writing nothing, unless this instance still leads when it commits.
   */
  writeDurable<T>(fn: () => T): Promise<T>
  /** Mutable fault switches (tests only). */
  readonly faults: StoreFaults
  /**
   * Resolves once the store answers: LMDB at once; PostgreSQL once the schema is checked
   * and the replica caught up. Rejects with a coded error (a refused schema, an
   * unreachable database): close the store then. Until then reads answer NO_STORE.
   */
  readonly opened: Promise<void>
  /** Whether the store can answer now, for /readyz (PostgreSQL: false while its change feed is down). */
  readonly ready: () => boolean
  /**
   * Changes another writer (another instance, another thread or process) made, applied
   * to this replica; the listener's return removes it. LMDB: never called (no replica).
   */
  onApplied(listener: (changes: AppliedChanges) => void): () => void
  /**
   * PostgreSQL: whether this instance's replica equals the database (postgres/verify.ts),
   * compared once the replica is at the database's snapshot. LMDB: undefined (no replica).
   */
  verify(): Promise<Verification | undefined>
  /** PostgreSQL: the availability cell a store of another thread shares (`postgres.availability`). */
  readonly availability?: SharedArrayBuffer
  /**
   * Whether this instance leads the ones sharing the store (leadership.ts): LMDB always;
   * PostgreSQL through the database (postgres/leader.ts), its session opened at the first call.
   */
  leadership(): Leadership
  close(): Promise<void>
}

/** A queued `writeDurable` call. */
interface Job {
  readonly fn: () => unknown
  /** A fenced write: the leadership's token, checked by the database (postgres/replica.ts). */
  fence?: number
  fencedOut?: boolean
  readonly resolve: (v: unknown) => void
  readonly reject: (e: unknown) => void
  ok?: boolean
  result?: unknown
  error?: unknown
}

const POSTGRES_WRITES = {
  failing: 'store writes to the database are failing (statement timeout, lost connection, read-only database?): ' +
    'every write answers 503 NO_STORE until one succeeds; nothing of a failed write was kept; epx recovers by itself',
  recovered: 'store writes succeed again',
  counted: 'failedWrites',
}

/** Where each msgpack db keeps its shared record structures (a symbol: no string key collides). */
const STRUCTURES_KEY = Symbol.for('structures')

export interface OpenStoreOptions {
  mapSizeBytes?: number
  faults?: StoreFaults
  /** Where store faults are reported (one line per episode, fault-log.ts); none: not reported. */
  log?: Logger
  /** Told of every durable write that failed (the metrics). */
  onWriteFailed?: () => void
  /**
   * Another thread of this process has this store open (the API door's worker, opened
   * while the host's thread holds it): lmdb-js shares that thread's environment, already
   * checked, and the file check must not run. It opens and closes lock.mdb, and POSIX
   * drops every lock a process holds on a file when it closes any descriptor for it: the
   * process would lose LMDB's locks, and a CLI command beside it would take itself for
   * the store's only user, reset the reader table and destroy the shared mutexes.
   */
  openInThisProcess?: boolean
  /** Present: PostgreSQL holds the store and `path` is this instance's replica of it (store.kind "postgres"). */
  postgres?: PostgresStoreOptions
}

/** NO_STORE, with its `Retry-After: 5` (the catalogue, errors.ts). */
export function storeUnavailable (cause?: unknown): EpxError {
  return new EpxError('NO_STORE', [], cause === undefined ? {} : { cause })
}

/**
 * Runs a read whose answer decides a status. DECISIONS.md "Robustness": a store that
 * cannot answer is a 503 (NO_STORE), never a 401, since a 401 tells an operator its
 * token is dead; so any failure of the read becomes NO_STORE.
 */
export function readStore<T> (read: () => T): T {
  try {
    return read()
  } catch (err) {
    if (isEpxError(err) && err.code === 'NO_STORE') throw err
    throw storeUnavailable(err)
  }
}

/**
 * The outermost folder of `path` that does not exist yet: what opening a store there
 * creates (undefined when `path` exists). A caller that is refused removes it, so a
 * refused activation or command leaves no new, empty store behind to be mistaken for one.
 */
export function folderToCreate (path: string): string | undefined {
  let missing: string | undefined
  for (let p = resolve(path); !existsSync(p) && dirname(p) !== p; p = dirname(p)) missing = p
  return missing
}

export function openStore (path: string, opts: OpenStoreOptions = {}): Store {
  let root: RootDatabase
  try {
    mkdirSync(path, { recursive: true })
  } catch (err) {
    throw new EpxError('EPX_STORE_OPEN_FAILED', [path, (err as Error).message], { cause: err })
  }
  // Before lmdb-js maps anything: a refused or faulting open kills the process (check-file.ts).
  const check: StoreFileCheck = opts.openInThisProcess ? {} : checkStoreFiles(path)
  if (check.problem) throw new EpxError('EPX_STORE_OPEN_FAILED', [path, `${check.problem}; ${check.advice}`])
  if (check.emptyDataFile) {
    // What a crash while the store was created leaves: no commit ever reached it.
    opts.log?.warn({ path }, 'data.mdb is empty (the store was never written): starting an empty store')
  }
  const unmute = muteLmdbWriteErrors()
  try {
    // lmdb-js treats a path with an extension (`epx.lmdb`) as a file unless told otherwise.
    // eventTurnBatching off: with it on, a failed commit (disk full) rejects a promise
    // lmdb-js creates for its batch start and drops, an unhandled rejection that ends a
    // Node 20 host (DECISIONS.md "Robustness"). Writes of one turn still share a commit.
    root = open({
      path, noSubdir: false, maxDbs: 32, mapSize: opts.mapSizeBytes, compression: false, eventTurnBatching: false,
    })
  } catch (err) {
    unmute()
    throw new EpxError('EPX_STORE_OPEN_FAILED', [path, (err as Error).message], { cause: err })
  }
  const faultLog = createFaultLog(path, opts.log, undefined, opts.onWriteFailed, opts.postgres && POSTGRES_WRITES)
  const faults: StoreFaults = opts.faults ?? {}
  const dbs = new Map<string, Database<any, any>>()
  const handles = new Map<string, StoreDb<any>>()
  /** Where the store stands, for its checks (guarded-db.ts). */
  const state: StoreState = { closed: false, writing: false, faults }
  const checks = storeChecks(state, storeUnavailable)
  const guard = checks.readable
  const rawDb = (name: string, o: { binary?: boolean; dupSort?: boolean } = {}): Database<any, Key> => {
    let d = dbs.get(name)
    if (!d) {
      // Shared structures: msgpackr keeps each record shape once, under STRUCTURES_KEY,
      // instead of rebuilding it from every record on every read (bench/README.md,
      // ~6 µs a GET). Not `cache: true`: that cache would hide the CLI's writes.
      d = (o.binary ?? SUB_DATABASES[name]?.binary)
        ? root.openDB({ name, encoding: 'binary', dupSort: o.dupSort ?? false })
        : root.openDB({ name, encoding: 'msgpack', dupSort: o.dupSort ?? false, sharedStructuresKey: STRUCTURES_KEY })
      dbs.set(name, d)
    }
    return d
  }

  /**
   * A write that did not commit may have saved a new msgpack record shape in its
   * (aborted) transaction: make every msgpack db reload its shapes from the store before
   * its next encoding, or later records would point at a shape that was never written.
   */
  const forgetUnsavedStructures = () => {
    for (const d of dbs.values()) {
      const s = (d as { encoder?: { structures?: { uninitialized?: boolean } } }).encoder?.structures
      if (s) s.uninitialized = true
    }
  }

  // Group commit (bench/README.md): the writes queued while a commit is being made
  // durable share the next transaction and its one flush.
  let queue: Job[] = []
  let batching: Promise<void> | undefined

  let replica: Replica | undefined
  if (opts.postgres) {
    replica = openReplica({
      root, path, log: opts.log, rawDb, forgetUnsavedStructures,
      setWriting: on => { state.writing = on },
    }, opts.postgres)
    const r = replica
    state.down = () => !r.ready()
  }

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
          forgetUnsavedStructures()
        }
      }
    } finally {
      state.writing = false
    }
  }

  /** One transaction for every queued write, one child transaction (all or nothing) each. */
  const runOneBatch = async (): Promise<void> => {
    let jobs: Job[] = []
    try {
      if (replica) {
        jobs = queue
        queue = []
        // The database's COMMIT is the durability point (postgres/replica.ts).
        await replica.runBatch(jobs)
      } else {
        await root.transaction(() => {
          // Taken when the transaction starts, so writes queued until then join it.
          jobs = queue
          queue = []
          runJobs(jobs)
        })
        await root.flushed
      }
    } catch (err) {
      // A failed commit (disk full) also rejects a promise shared by its writes
      // (`commitError`); handle it here or it kills the host as an unhandled rejection.
      ;(err as { commitError?: Promise<unknown> } | undefined)?.commitError?.catch(() => {})
      forgetUnsavedStructures()
      if (jobs.length === 0) { jobs = queue; queue = [] }
      for (const job of jobs) refuse(job, storeUnavailable(err))
      return
    }
    let landed = false
    for (const job of jobs) {
      // Not a store fault: the write was not this instance's to make any more.
      if (job.fencedOut) job.reject(notLeading())
      else if (job.ok) { job.resolve(job.result); landed = true } else refuse(job, storeUnavailable(job.error))
    }
    if (landed) faultLog.succeeded()
  }

  /** A write that did not land: its caller gets NO_STORE, the fault log counts it (not after close()). */
  const refuse = (job: Job, err: EpxError): void => {
    // While the database is unreachable its episode is logged once, by the replica.
    if (state.down?.()) opts.onWriteFailed?.()
    else if (!state.closed) faultLog.failed(err)
    job.reject(err)
  }

  const runBatches = async (): Promise<void> => {
    try {
      while (queue.length > 0) await runOneBatch()
    } finally {
      batching = undefined
    }
  }

  const r = replica
  let leader: PgLeadership | undefined
  const pgOptions = opts.postgres
  return {
    kind: r ? 'postgres' : 'lmdb',
    path,
    root,
    faults,
    opened: r ? r.opened : Promise.resolve(),
    ready: r ? () => !faults.unavailable && r.ready() : () => !faults.unavailable && !state.closed,
    onApplied: r ? listener => r.onApplied(listener) : () => () => {},
    verify: r ? () => r.verify() : () => Promise.resolve(undefined),
    ...(r ? { availability: r.availability } : {}),
    db (name, o = {}) {
      let handle = handles.get(name)
      if (!handle) {
        if (r && state.writing && !dbs.has(name)) throw new Error(`sub-database ${name} opened inside writeDurable: open it before (the PostgreSQL store's recording transaction is aborted, and the handle with it)`)
        const declared = SUB_DATABASES[name]
        if (r && declared && declared.binary !== (o.binary ?? false)) throw new Error(`sub-database ${name} is declared ${declared.binary ? 'binary' : 'msgpack'} in postgres/schema.ts`)
        const d = rawDb(name, o)
        handles.set(name, handle = guardedDb(r && name === REVISION_BYTES_DB ? revisionBytesMarkers(d) : d, checks, r && ((key, value, removed) => r.record(name, key, value, removed))))
      }
      return handle
    },
    guard,
    leadership: () => {
      if (!pgOptions) return soleInstance
      if (state.closed) throw storeUnavailable()
      return leader ??= pgLeadership({ connection: pgOptions.pool, log: opts.log })
    },
    writeDurable<T> (fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const job = { fn, resolve, reject } as Job
        // LMDB has one instance: nothing to fence.
        const fence = r && currentFence()
        if (fence) {
          const token = fence.token()
          if (token === undefined) { reject(notLeading()); return }
          job.fence = token
        }
        // A refusal is a rejection, and a fault, like every other failure.
        try { guard() } catch (err) { refuse(job, err as EpxError); return }
        queue.push(job)
        batching ??= runBatches()
      })
    },
    async close () {
      if (state.closed) return
      state.closed = true
      // Writes already accepted finish (or fail) before the environment goes.
      try { await batching; await root.flushed } finally {
        await leader?.close()
        await replica?.close()
        await root.close()
        unmute()
      }
    },
  }
}
