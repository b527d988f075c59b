/**
 * The LMDB environment in the data folder, with the fault seam the 503 paths are
 * tested through. Domain files (companies, tokens, instructions, revisions) open
 * their own sub-databases from `root` and write through `writeDurable`.
 * @module
 */
import { mkdirSync } from 'node:fs'
import { open, type Database, type RootDatabase } from 'lmdb'
import { EpxError } from '../errors.ts'

/** Test seam: make the store refuse, as a dead disk or a full map would. */
export interface StoreFaults {
  /** Every read and write throws NO_STORE while true. */
  unavailable?: boolean
  /** Writes inside `writeDurable` fail after this many `checkWrite()` calls (then resets). */
  failWriteAfter?: number
}

export interface Store {
  readonly path: string
  readonly root: RootDatabase
  /** A named sub-database (msgpack values unless `binary`). */
  db<V = unknown>(name: string, opts?: { binary?: boolean; dupSort?: boolean }): Database<V, any>
  /** Throws NO_STORE when the store cannot answer; call before reads that decide a status. */
  guard(): void
  /** Call before each put inside `writeDurable`: lets a test fail a write half-way. */
  checkWrite(): void
  /**
   * Runs `fn` as one LMDB transaction (all or nothing) and resolves once it is on
   * disk: under lmdb-js's default overlappingSync a commit is durable only when
   * `flushed` resolves (DECISIONS.md "Robustness"). Any failure becomes NO_STORE.
   */
  writeDurable<T>(fn: () => T): Promise<T>
  /** Mutable fault switches (tests only). */
  readonly faults: StoreFaults
  close(): Promise<void>
}

export interface OpenStoreOptions {
  mapSizeBytes?: number
  faults?: StoreFaults
}

export function openStore (path: string, opts: OpenStoreOptions = {}): Store {
  let root: RootDatabase
  try {
    mkdirSync(path, { recursive: true })
    // lmdb-js treats a path with an extension (`epx.lmdb`) as a file unless told otherwise.
    // eventTurnBatching off: with it on, a failed commit (disk full) rejects a promise
    // lmdb-js creates for its batch start and drops, an unhandled rejection that ends a
    // Node 20 host (DECISIONS.md "Robustness"). Writes of one turn still share a commit.
    root = open({
      path, noSubdir: false, maxDbs: 32, mapSize: opts.mapSizeBytes, compression: false, eventTurnBatching: false,
    })
  } catch (err) {
    throw new EpxError('EPX_STORE_OPEN_FAILED', [path, (err as Error).message], { cause: err })
  }
  const faults: StoreFaults = opts.faults ?? {}
  const dbs = new Map<string, Database<any, any>>()
  let closed = false

  const guard = () => {
    if (closed || faults.unavailable) throw new EpxError('NO_STORE', [], { headers: { 'retry-after': '5' } })
  }

  return {
    path,
    root,
    faults,
    db (name, o = {}) {
      let d = dbs.get(name)
      if (!d) {
        d = root.openDB({ name, encoding: o.binary ? 'binary' : 'msgpack', dupSort: o.dupSort ?? false })
        dbs.set(name, d)
      }
      return d
    },
    guard,
    checkWrite () {
      guard()
      if (faults.failWriteAfter !== undefined) {
        if (faults.failWriteAfter <= 0) {
          faults.failWriteAfter = undefined
          throw new Error('injected write failure')
        }
        faults.failWriteAfter--
      }
    },
    async writeDurable<T> (fn: () => T): Promise<T> {
      guard()
      try {
        // childTransaction, not transaction: lmdb-js commits what a throwing
        // `transaction` callback wrote before it threw; a child transaction is aborted.
        const result = await root.childTransaction(fn)
        await root.flushed
        return result
      } catch (err) {
        // A failed commit also rejects a promise shared by its writes (`commitError`);
        // handle it here or it kills the host as an unhandled rejection.
        ;(err as { commitError?: Promise<unknown> } | undefined)?.commitError?.catch(() => {})
        throw new EpxError('NO_STORE', [], { cause: err, headers: { 'retry-after': '5' } })
      }
    },
    async close () {
      if (closed) return
      closed = true
      try { await root.flushed } finally { await root.close() }
    },
  }
}
