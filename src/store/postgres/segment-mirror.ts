/**
 * Revisions' bytes on a replica. The database carries them as rows of their own
 * ([segment, offset] → bytes, sub-databases.ts); a replica writes another instance's into
 * its own segment file of that name at that offset (revision-segments.ts), so a
 * revision's `SegmentRef` holds on every instance, and keeps only an empty marker in
 * LMDB (retention finds a segment's rows by it).
 * @module
 */
import { closeSync, constants, fdatasyncSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { Database, Key, RangeOptions } from 'lmdb'
import { isSegmentName, SEGMENTS_FOLDER } from '../revision-segments.ts'

/** What the replica keeps of a revision's bytes in LMDB (the bytes are in its segment file). */
export const EMPTY_MARKER = Buffer.alloc(0)

/**
 * The revision bytes' sub-database as the PostgreSQL engine hands it out: a put keeps
 * only the marker locally (the bytes go to the database; this instance's segment file
 * has them already).
 */
export function revisionBytesMarkers (d: Database<any, Key>): Database<any, Key> {
  return {
    get: (key: Key) => d.get(key),
    doesExist: (key: Key) => d.doesExist(key),
    getRange: (o?: RangeOptions) => d.getRange(o),
    getKeys: (o?: RangeOptions) => d.getKeys(o),
    putSync: (key: Key) => d.putSync(key, EMPTY_MARKER),
    removeSync: (key: Key) => d.removeSync(key),
  } as unknown as Database<any, Key>
}

/** Other writers' revision bytes, into this replica's segment files; durable before the cursor that says they were applied. */
export class SegmentMirror {
  readonly #dir: string
  readonly #fds = new Map<string, number>()

  constructor (replicaPath: string) {
    this.#dir = join(replicaPath, SEGMENTS_FOLDER)
  }

  write (key: Key, bytes: Buffer): void {
    const [name, offset] = key as [string, number]
    if (typeof name !== 'string' || !isSegmentName(name) || typeof offset !== 'number') return
    let fd = this.#fds.get(name)
    if (fd === undefined) {
      mkdirSync(this.#dir, { recursive: true })
      // Positional writes into a file that may not exist yet (never O_APPEND: it ignores the offset).
      this.#fds.set(name, fd = openSync(join(this.#dir, name), constants.O_RDWR | constants.O_CREAT, 0o644))
    }
    let done = 0
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, offset + done)
  }

  /** A segment another writer dropped is deleted here too. */
  drop (name: Key): void {
    if (typeof name === 'string' && isSegmentName(name)) rmSync(join(this.#dir, name), { force: true })
  }

  sync (): void {
    for (const fd of this.#fds.values()) { try { fdatasyncSync(fd) } finally { closeSync(fd) } }
    this.#fds.clear()
  }
}
