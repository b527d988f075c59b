/**
 * The replica's LMDB side: the sub-databases as the database holds them, and the
 * replica's own bookkeeping beside them (never in PostgreSQL): `cursor`, the last change
 * applied; `database_id`, whose replica it is; `loading`, a load from scratch not yet
 * verified (replica-load.ts). Every change lands here in seq order, inside a local write
 * transaction, the cursor with it.
 * @module
 */
import type { Database, Key, RootDatabase } from 'lmdb'
import { SUB_DATABASES } from '../sub-databases.ts'
import { REVISION_BYTES_DB } from './schema.ts'
import { decodeKey, decodeValue } from './records.ts'
import type { RecordRow } from './schema.ts'
import { EMPTY_MARKER, SegmentMirror } from './segment-mirror.ts'
import type { Write } from './sql.ts'
import type { ReplicaView } from './verify.ts'

/** The replica's own bookkeeping's sub-database. */
export const META_DB = 'epx-replica'

export class LocalReplica implements ReplicaView {
  readonly root: RootDatabase
  readonly path: string
  readonly rawDb: (name: string) => Database<any, Key>
  readonly #meta: Database<any, Key>
  readonly #segments: SegmentMirror

  constructor (root: RootDatabase, path: string, rawDb: (name: string) => Database<any, Key>) {
    this.root = root
    this.path = path
    this.rawDb = rawDb
    this.#meta = root.openDB({ name: META_DB, encoding: 'msgpack' })
    this.#segments = new SegmentMirror(path)
    // Opened now, outside any transaction: a sub-database first opened inside the recording
    // transaction would be created in it, and its handle would die with its abort.
    for (const name of Object.keys(SUB_DATABASES)) rawDb(name)
  }

  cursor (): number { return (this.#meta.get('cursor') as number | undefined) ?? 0 }
  databaseId (): string | undefined { return this.#meta.get('database_id') as string | undefined }
  loading (): boolean { return this.#meta.get('loading') === true }

  /**
   * Opens, outside any transaction, the sub-databases `rows` name. lmdb-js opens a
   * sub-database with a write transaction of its own, synchronously: inside the callback
   * of an asynchronous transaction, whose worker holds the write lock and waits for that
   * callback, it would wait for ever.
   */
  prepare (rows: readonly RecordRow[]): void {
    let last: string | undefined
    for (const row of rows) if (row.db !== last) this.rawDb(last = row.db)
  }

  /** Inside a local write transaction: the rows past the cursor, applied in seq order (`prepare` them first). */
  applyRows (rows: readonly RecordRow[]): void {
    const cursor = this.cursor()
    let top = cursor
    try {
      for (const row of rows) {
        const seq = Number(row.seq)
        if (seq <= cursor || row.fetched === false) continue
        const d = this.rawDb(row.db)
        const key = decodeKey(row.key)
        if (row.value === null) {
          d.removeSync(key)
          if (row.db === 'rev-segments') this.#segments.drop(key)
        } else if (row.db === REVISION_BYTES_DB) {
          this.#segments.write(key, row.value)
          d.putSync(key, EMPTY_MARKER)
        } else {
          d.putSync(key, decodeValue(row.value, binaryOf(row.db)))
        }
        if (seq > top) top = seq
      }
    } finally {
      this.#segments.sync()
    }
    if (top > cursor) this.#meta.putSync('cursor', top)
  }

  /** Inside a local write transaction: this store's own committed writes, up to `hi`. */
  applyOwn (writes: Iterable<Write>, hi: number): void {
    // The feed may have applied them already (and later writers' after them).
    if (this.cursor() >= hi) return
    for (const w of writes) {
      const d = this.rawDb(w.db)
      if (w.bytes === null) d.removeSync(w.key as Key)
      // This instance wrote them into its segment file: the marker only. Otherwise what
      // the database got, decoded, not the object the job put: the replica holds the
      // database's record even where msgpack does not give an object back as it was.
      else d.putSync(w.key as Key, w.db === REVISION_BYTES_DB ? EMPTY_MARKER : decodeValue(w.bytes, binaryOf(w.db)))
    }
    this.#meta.putSync('cursor', hi)
  }

  /** Whether the folder holds records and no bookkeeping: an LMDB store, not a replica. */
  holdsAnLmdbStore (): boolean {
    return this.databaseId() === undefined &&
      Object.keys(SUB_DATABASES).some(name => { for (const _ of this.rawDb(name).getKeys({ limit: 1 })) return true; return false })
  }

  /** Empties every sub-database and starts a load from scratch of `databaseId`'s replica. */
  async startLoad (databaseId: string, forgetUnsavedStructures: () => void): Promise<void> {
    await this.root.transaction(() => { this.#meta.removeSync('database_id') })
    const opened = [...this.root.getKeys({})].filter((k): k is string => typeof k === 'string' && k !== META_DB)
    for (const name of new Set([...Object.keys(SUB_DATABASES), ...opened])) await this.rawDb(name).clearAsync()
    forgetUnsavedStructures()
    await this.root.transaction(() => {
      this.#meta.putSync('cursor', 0)
      this.#meta.putSync('database_id', databaseId)
      this.#meta.putSync('loading', true)
    })
  }

  async loadVerified (): Promise<void> {
    await this.root.transaction(() => { this.#meta.removeSync('loading') })
  }
}

export const binaryOf = (db: string): boolean => SUB_DATABASES[db]?.binary ?? false
