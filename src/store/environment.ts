/**
 * The LMDB environment in a store's folder, as both engines use it: the LMDB engine as
 * the store, the PostgreSQL engine as its replica. Opened after the file check (a refused
 * or faulting open would kill the process, check-file.ts), its sub-databases opened once
 * each with their encoding, and handed out guarded (guarded-db.ts).
 * @module
 */
import { mkdirSync } from 'node:fs'
import { open, type Database, type Key, type RootDatabase } from 'lmdb'
import { EpxError } from '../errors.ts'
import type { Logger } from '../host/contract.ts'
import { checkStoreFiles, type StoreFileCheck } from './check-file.ts'
import { muteLmdbWriteErrors } from './fault-log.ts'
import { storeChecks, type StoreChecks, type StoreDb, type StoreState } from './guarded-db.ts'
import { storeUnavailable, type StoreFaults } from './engine.ts'
import { SUB_DATABASES } from './sub-databases.ts'

/** Where each msgpack db keeps its shared record structures (a symbol: no string key collides). */
export const STRUCTURES_KEY = Symbol.for('structures')

export interface EnvironmentOptions {
  readonly mapSizeBytes?: number
  readonly faults?: StoreFaults
  readonly log?: Logger
  /**
   * Another thread of this process has this store open (the API door's worker, opened
   * while the host's thread holds it): lmdb-js shares that thread's environment, already
   * checked, and the file check must not run. It opens and closes lock.mdb, and POSIX
   * drops every lock a process holds on a file when it closes any descriptor for it: the
   * process would lose LMDB's locks, and a CLI command beside it would take itself for
   * the store's only user, reset the reader table and destroy the shared mutexes.
   */
  readonly openInThisProcess?: boolean
}

export interface Environment {
  readonly root: RootDatabase
  readonly path: string
  readonly faults: StoreFaults
  /** Where the store stands, for its checks (guarded-db.ts); the engine sets `down` and `writing`. */
  readonly state: StoreState
  readonly checks: StoreChecks
  /** The raw sub-database `name`, opened with its encoding on first use. */
  rawDb(name: string, o?: { binary?: boolean; dupSort?: boolean }): Database<any, Key>
  /** Whether `name` was opened already. */
  opened(name: string): boolean
  /** The handle of `name`, made once by `make` from its raw sub-database (opened with `o`). */
  handle<V>(name: string, o: { binary?: boolean; dupSort?: boolean }, make: (raw: Database<any, Key>) => StoreDb<V>): StoreDb<V>
  /**
   * A write that did not commit may have saved a new msgpack record shape in its
   * (aborted) transaction: every msgpack db reloads its shapes from the store before its
   * next encoding, or later records would point at a shape that was never written.
   */
  forgetUnsavedStructures(): void
  /** `Store.fresh`: this thread's read snapshot brought up to every commit of this process, and to other processes' of more than a millisecond ago. */
  fresh(): void
  close(): Promise<void>
}

/**
 * lmdb-js keeps a thread's read snapshot until a timer of at least 1 ms after its first
 * read: a thread that read within the last millisecond reads from before a commit another
 * thread of the process has just made and reported durable (a request that follows a
 * revocation would see the token; measured, 164 of 200 such reads). Every commit counts
 * itself in a cell all the process's threads share (lmdb-js's shared buffer of this
 * environment), and a thread that sees the count moved renews its snapshot.
 */
const COMMITS_KEY = 'epx:commits'
/**
 * Another process's commits (the CLI's) move no count here: a snapshot older than this is
 * renewed at `fresh()` whatever the count, so a thread that lmdb-js's timer did not reach
 * (a thread kept off its core, at nice 10 on a busy machine) does not answer from before a
 * CLI's revocation or suspension, which apply from the next request on (docs/cli.md).
 */
const SNAPSHOT_MAX_AGE_MS = 1

export function openEnvironment (path: string, opts: EnvironmentOptions = {}): Environment {
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
  let root: RootDatabase
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
  // Not in lmdb-js's types (read.js; its own 'committed' event uses it the same way).
  const shared = (root as unknown as { getUserSharedBuffer(id: string, initial: ArrayBuffer, o: { envKey: boolean }): ArrayBuffer }).getUserSharedBuffer
  const commits = new Int32Array(shared.call(root, COMMITS_KEY, new ArrayBuffer(4), { envKey: true }))
  root.on('aftercommit', () => { Atomics.add(commits, 0, 1) })
  let seen = Atomics.load(commits, 0)
  let renewedAt = performance.now()
  const faults: StoreFaults = opts.faults ?? {}
  const dbs = new Map<string, Database<any, any>>()
  const handles = new Map<string, StoreDb<any>>()
  const state: StoreState = { closed: false, writing: false, faults }
  const rawDb = (name: string, o: { binary?: boolean; dupSort?: boolean } = {}): Database<any, Key> => {
    let d = dbs.get(name)
    if (!d) {
      // Shared structures: msgpackr keeps each record shape once, under STRUCTURES_KEY,
      // instead of rebuilding it from every record on every read (~6 µs a GET,
      // bench/README.md#where-the-doors-thread-spends-a-get). Not `cache: true`: that
      // cache would hide the CLI's writes.
      d = (o.binary ?? SUB_DATABASES[name]?.binary)
        ? root.openDB({ name, encoding: 'binary', dupSort: o.dupSort ?? false })
        : root.openDB({ name, encoding: 'msgpack', dupSort: o.dupSort ?? false, sharedStructuresKey: STRUCTURES_KEY })
      dbs.set(name, d)
    }
    return d
  }
  return {
    root, path, faults, state,
    checks: storeChecks(state, storeUnavailable),
    rawDb,
    opened: name => dbs.has(name),
    handle<V> (name: string, o: { binary?: boolean; dupSort?: boolean }, make: (raw: Database<any, Key>) => StoreDb<V>): StoreDb<V> {
      let h = handles.get(name) as StoreDb<V> | undefined
      if (!h) handles.set(name, h = make(rawDb(name, o)))
      return h
    },
    forgetUnsavedStructures () {
      for (const d of dbs.values()) {
        const s = (d as { encoder?: { structures?: { uninitialized?: boolean } } }).encoder?.structures
        if (s) s.uninitialized = true
      }
    },
    fresh () {
      const count = Atomics.load(commits, 0)
      const now = performance.now()
      if (count !== seen || now - renewedAt > SNAPSHOT_MAX_AGE_MS) {
        seen = count
        renewedAt = now
        root.resetReadTxn()
      }
    },
    async close () {
      try { await root.close() } finally { unmute() }
    },
  }
}
