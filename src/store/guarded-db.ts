/**
 * A sub-database as the store hands it out: every read first asks whether the store can
 * answer, every write whether it may be made, so no store module can forget either
 * check (DECISIONS.md "Robustness": a store that cannot answer is NO_STORE, a 503,
 * never a 401 nor a stale answer; a write is all or nothing inside `writeDurable`).
 * @module
 */
import type { Database, Key, RangeIterable, RangeOptions } from 'lmdb'

/** The operations store modules use; the names are lmdb-js's, so a call reads as one. */
export interface StoreDb<V> {
  get(key: Key): V | undefined
  doesExist(key: Key): boolean
  /** Checked when called: iterate it at once, not after an await. */
  getRange(options?: RangeOptions): RangeIterable<{ key: Key; value: V }>
  getKeys(options?: RangeOptions): RangeIterable<Key>
  /**
   * Binary dbs: true when the value under `key` is exactly `bytes` (both absent when
   * `bytes` is undefined). Compared in LMDB's read buffer, nothing copied: what a kept
   * answer checks on each request.
   */
  equalsStored(key: Key, bytes: Uint8Array | undefined): boolean
  /** Only inside a `writeDurable` fn. */
  putSync(key: Key, value: V): void
  /** Only inside a `writeDurable` fn. */
  removeSync(key: Key): void
}

/** What the store checks before each operation; each throws to refuse it. */
export interface StoreChecks {
  /** Before a read: NO_STORE when the store cannot answer. */
  readable(): void
  /** Before a put or a remove: refuses one outside `writeDurable`, or failed by the fault seam. */
  writable(): void
}

/** Where a store stands; open-store.ts keeps it, the checks read it. */
export interface StoreState {
  closed: boolean
  /** True while the queued writes run: they may read and write even once close() began. */
  writing: boolean
  /** The test seam (`StoreFaults`): refuse everything, or fail the nth write. */
  readonly faults: { unavailable?: boolean; failWriteAfter?: number }
  /** The PostgreSQL store's replica cannot answer (its change feed is down). */
  down?: () => boolean
}

/** The checks of a store in `state`; `unavailable` makes its NO_STORE error. */
export function storeChecks (state: StoreState, unavailable: () => Error): StoreChecks {
  const { faults } = state
  return {
    readable () {
      // A write accepted before close() runs after `closed` is set, and close() promises
      // it finishes (docs/plugin-contract.md "Guarantees"): its reads are refused only by a dead store.
      if (faults.unavailable || state.down?.() || (state.closed && !state.writing)) throw unavailable()
    },
    writable () {
      if (!state.writing) throw new Error('a store write outside writeDurable: it would be neither atomic nor durable')
      if (faults.unavailable) throw unavailable()
      if (faults.failWriteAfter !== undefined) {
        if (faults.failWriteAfter <= 0) {
          faults.failWriteAfter = undefined
          throw new Error('injected write failure')
        }
        faults.failWriteAfter--
      }
    },
  }
}

/**
 * `onWrite`: told of each put and remove once made (the PostgreSQL store records them
 * as its batch's write set).
 */
export function guardedDb<V> (db: Database<V, Key>, checks: StoreChecks, onWrite?: (key: Key, value: V | undefined, removed: boolean) => void): StoreDb<V> {
  const { readable, writable } = checks
  return {
    get (key) {
      readable()
      return db.get(key)
    },
    doesExist (key) {
      readable()
      return db.doesExist(key)
    },
    getRange (options) {
      readable()
      return db.getRange(options)
    },
    getKeys (options) {
      readable()
      return db.getKeys(options)
    },
    equalsStored (key, bytes) {
      readable()
      // lmdb-js's reused read buffer: its `length` is the value's, its backing store larger.
      const found = (db as unknown as { getBinaryFast(key: Key): Uint8Array | undefined }).getBinaryFast(key)
      if (!found || !bytes) return !found && !bytes
      const n = found.length
      return n === bytes.byteLength && Buffer.from(found.buffer, found.byteOffset, n).equals(bytes)
    },
    putSync (key, value) {
      writable()
      db.putSync(key, value)
      onWrite?.(key, value, false)
    },
    removeSync (key) {
      writable()
      db.removeSync(key)
      onWrite?.(key, undefined, true)
    },
  }
}
