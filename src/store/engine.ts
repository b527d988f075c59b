/**
 * The store as its modules (companies, tokens, revisions, instructions, audit…) see it:
 * one port, whatever engine holds the records. Two engines implement it:
 * - `lmdb/engine.ts`: the LMDB folder is the store;
 * - `postgres/engine.ts`: a PostgreSQL database is, and the LMDB folder is this
 *   instance's replica of it, read synchronously the same way.
 * Which engine a configuration names is decided once, in `open-store.ts`.
 * @module
 */
import type { Key } from 'lmdb'
import { EpxError, isEpxError } from '../errors.ts'
import type { StoreDb } from './guarded-db.ts'
import type { Leadership } from './leadership.ts'

/** Test seam: make the store refuse, as a dead disk or a full map would. */
export interface StoreFaults {
  /** Every read and write throws NO_STORE while true. */
  unavailable?: boolean
  /** Writes inside `writeDurable` fail after this many puts and removes (then resets). */
  failWriteAfter?: number
}

/** Changes another writer made, per sub-database: the keys it put or removed. */
export type AppliedChanges = ReadonlyMap<string, readonly Key[]>

/** A sub-database's fingerprint: its count and a SHA-256 over its records in key order. */
export interface TableSum { readonly records: number; readonly sha256: string }

/** Whether a replica equals the store it copies (`Store.verify`). */
export type StoreVerification =
  /** Compared at `seq`: `differ` lists the sub-databases whose count or digest differ. */
  | { readonly kind: 'compared'; readonly seq: number; readonly tables: readonly VerifiedTable[]; readonly differ: readonly string[] }
  /** Not compared: the replica had applied up to `cursor` and the database's snapshot ends at `seq`. */
  | { readonly kind: 'not-at-snapshot'; readonly cursor: number; readonly seq: number }

export interface VerifiedTable {
  readonly db: string
  readonly replica: TableSum
  readonly postgres: TableSum
}

/**
 * What a store opened by another thread of this process (the API door's worker) needs
 * of this one: structured-cloneable, opaque to everything but the engine. The PostgreSQL
 * engine's: whether the change feed is up, and where each thread notes its commits so
 * the feed reports none of them as another writer's.
 */
export type StoreThreadShare = { readonly availability: SharedArrayBuffer; readonly ownWrites: SharedArrayBuffer }

export interface BackupResult {
  readonly dir: string
  readonly segmentFiles: number
}

export interface Store {
  /**
   * Another writer may exist (another instance on the same database): what a later save
   * may have changed is read back, not assumed. False when this process's threads and
   * its CLI are the only writers, which see each other's commits at once.
   */
  readonly shared: boolean
  /** The store's local folder: the LMDB store, or this instance's replica. */
  readonly path: string
  /**
   * A named sub-database (msgpack values unless `binary`), guarded: its reads throw
   * NO_STORE when the store cannot answer, its writes are refused outside `writeDurable`
   * and go through the fault seam (a test fails a write half-way).
   */
  db<V = unknown>(name: string, opts?: { binary?: boolean; dupSort?: boolean }): StoreDb<V>
  /** Throws NO_STORE when the store cannot answer: for a read of what lives beside the records. */
  guard(): void
  /**
   * This thread's next read sees every commit made so far, by any thread. lmdb-js keeps
   * a thread's read snapshot until its next turn, so a thread told of another's commit
   * within a turn (the event bell, a message) would read from before it.
   */
  latest(): void
  /**
   * This thread's next read sees every commit this process's threads have made (cheap
   * when none has since the last call: one shared counter read). Called where a thread
   * starts on what another may just have changed: the door's turn, a console request,
   * a message from the door (environment.ts says why a turn alone is not enough).
   */
  fresh(): void
  /**
   * Runs `fn` as one transaction (all or nothing) and resolves once it is durable
   * (DECISIONS.md "Robustness"). Any failure becomes NO_STORE. Concurrent calls share
   * one commit; each stays all or nothing. Inside a fenced run (leadership.ts) the write
   * lands only if this instance still leads when it commits.
   */
  writeDurable<T>(fn: () => T): Promise<T>
  /**
   * Inside a `writeDurable` fn: runs `fn` once that write is durable (after the call
   * resolves); never if it fails. What tells other readers of a change (store/event-bell.ts)
   * after, never before, the change is there to read.
   */
  afterDurable(fn: () => void): void
  /** Mutable fault switches (tests only). */
  readonly faults: StoreFaults
  /**
   * Resolves once the store answers (a replica checked and caught up); rejects with a
   * coded error (a refused schema, an unreachable database): close the store then. Until
   * then reads answer NO_STORE.
   */
  readonly opened: Promise<void>
  /** Whether the store can answer now, for /readyz. */
  ready(): boolean
  /** Changes another writer made, applied here; the listener's return removes it. */
  onApplied(listener: (changes: AppliedChanges) => void): () => void
  /** Whether this instance's replica equals the store it copies; undefined: no replica. */
  verify(): Promise<StoreVerification | undefined>
  /** Whether this instance leads the ones sharing the store (leadership.ts). */
  leadership(): Leadership
  /** What the door's worker passes back to open this store on its thread; undefined: nothing. */
  threadShare(): StoreThreadShare | undefined
  /** A consistent copy of the store in `dir`, while it runs (`epx store backup`). */
  backup(dir: string): Promise<BackupResult>
  close(): Promise<void>
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
    throw readFailure(err)
  }
}

/** What `readStore` throws for a read that failed; for a hot path that reads without a closure. */
export function readFailure (err: unknown): EpxError {
  return isEpxError(err) && err.code === 'NO_STORE' ? err : storeUnavailable(err)
}
