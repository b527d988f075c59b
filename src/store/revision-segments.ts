/**
 * Append-only segment files holding the bytes of published revisions, next to (not in)
 * LMDB's map, so that storing history never grows the process's resident memory.
 * @module
 */
import * as fs from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'

/** Where a revision's bytes are: a segment file, an offset in it and a length. */
export interface SegmentRef {
  readonly segment: string
  readonly offset: number
  readonly size: number
}

/** A writer starts a new file when its file reaches this size or a new UTC day starts. */
const MAX_SEGMENT_BYTES = 256 * 2 ** 20
const MAX_READ_FDS = 16
/** Recently served documents, kept so a repeated GET costs no read (bench/README.md#targets: GET 200 ≤ 1.2 × A). */
const CACHE_BYTES = 4 * 2 ** 20
const NAME = /^[0-9a-z]+-[0-9a-z]+\.seg$/

/** The segment files' folder, in the store's folder. */
export const SEGMENTS_FOLDER = 'revision-bytes'

/** Whether `name` is a segment file's name (and nothing else: no path). */
export const isSegmentName = (name: string): boolean => NAME.test(name)

const fdatasync = promisify(fs.fdatasync)

/** The segment files of a store: what revisions.ts asks of them. */
export interface Segments {
  /**
   * Sync: appends `bytes`, documents of `sizes` back to back, in one write (page cache
   * only; `sync()` makes them durable). The caller may reuse `bytes` afterwards.
   */
  append(bytes: Buffer, sizes: readonly number[], nowMs: number): SegmentRef[]
  /** Resolves once everything appended so far is on disk (before committing its metadata). */
  sync(): Promise<void>
  /** Sync variant, for the rare re-render inside a transaction. */
  syncNow(): void
  /** Sync: the bytes at `ref` if recently read, without any I/O. */
  cached(ref: SegmentRef): Buffer | undefined
  /** Sync: the bytes at `ref`, or undefined when the segment is gone. */
  read(ref: SegmentRef): Buffer | undefined
  /** Forgets cached documents (after revisions were removed). */
  forget(): void
  /** Deletes whole segment files (none may hold a kept revision). */
  remove(segments: Iterable<string>): void
  /** When a segment file was last written (ms, the file system's clock), or undefined when gone. */
  modifiedMs(name: string): number | undefined
  /** Every segment file present (including other processes' files). */
  names(): string[]
  close(): void
}

/*
 * Why not LMDB: every read through LMDB's map faults in, besides the page read, the
 * neighbouring pages the kernel still caches (fault-around, 64 KiB), and B-tree writes
 * read leaf pages interleaved with the 9 KB overflow pages of the documents. Measured:
 * ~50-150 MB of file pages per 10,000-site day stayed resident. Written with pwrite and
 * read with pread, these files live in the page cache only, never in our RSS.
 */
export function openSegments (dir: string): Segments {
  fs.mkdirSync(dir, { recursive: true })
  // Each process appends to its own files: the CLI may publish while the service runs.
  // A file is open only while it has unsynced appends: nothing to close at shutdown.
  type Writer = { name: string; size: number; day: number; fd?: number }
  let writer: Writer | undefined
  let unsynced: Writer[] = []
  let syncing: Promise<void> = Promise.resolve()
  const readFds = new Map<string, number>()
  const cache = new Map<string, Buffer>()
  let cached = 0

  const fdFor = (segment: string): number | undefined => {
    let fd = readFds.get(segment)
    if (fd !== undefined) {
      readFds.delete(segment)
      readFds.set(segment, fd)
      return fd
    }
    if (!NAME.test(segment)) return undefined
    try { fd = fs.openSync(join(dir, segment), 'r') } catch { return undefined }
    readFds.set(segment, fd)
    if (readFds.size > MAX_READ_FDS) {
      const [oldest, oldFd] = readFds.entries().next().value as [string, number]
      readFds.delete(oldest)
      fs.closeSync(oldFd)
    }
    return fd
  }

  const remember = (key: string, bytes: Buffer) => {
    cache.set(key, bytes)
    cached += bytes.length
    while (cached > CACHE_BYTES) {
      const [k, b] = cache.entries().next().value as [string, Buffer]
      cache.delete(k)
      cached -= b.length
    }
  }

  return {
    append (bytes: Buffer, sizes: readonly number[], nowMs: number): SegmentRef[] {
      const total = bytes.length
      const day = Math.floor(nowMs / 86_400_000)
      if (!writer || writer.size + total > MAX_SEGMENT_BYTES || writer.day !== day) {
        const name = `${nowMs.toString(36)}-${Math.floor(Math.random() * 36 ** 6).toString(36)}${process.pid.toString(36)}.seg`
        writer = { name, size: 0, day, fd: fs.openSync(join(dir, name), 'wx') }
        unsynced.push(writer)
      } else if (writer.fd === undefined) {
        writer.fd = fs.openSync(join(dir, writer.name), 'r+')
        unsynced.push(writer)
      }
      const w = writer
      let done = 0
      while (done < total) done += fs.writeSync(w.fd!, bytes, done, total - done, w.size + done)
      return sizes.map(size => {
        const ref = { segment: w.name, offset: w.size, size }
        w.size += size
        return ref
      })
    },

    sync (): Promise<void> {
      const list = unsynced
      unsynced = []
      // After the syncs already running: one of them may hold an append of this caller's.
      const before = syncing
      const p = (async () => {
        await before.catch(() => {})
        for (const w of list) {
          const fd = w.fd!
          w.fd = undefined
          try { await fdatasync(fd) } finally { fs.close(fd, () => {}) }
        }
      })()
      syncing = p
      return p
    },

    syncNow (): void {
      for (const w of unsynced.splice(0)) {
        const fd = w.fd!
        w.fd = undefined
        try { fs.fdatasyncSync(fd) } finally { fs.closeSync(fd) }
      }
    },

    cached (ref: SegmentRef): Buffer | undefined {
      return cache.get(`${ref.segment}:${ref.offset}`)
    },

    read (ref: SegmentRef): Buffer | undefined {
      const key = `${ref.segment}:${ref.offset}`
      const hit = cache.get(key)
      if (hit) return hit
      const fd = fdFor(ref.segment)
      if (fd === undefined) return undefined
      const buf = Buffer.allocUnsafe(ref.size)
      let done = 0
      while (done < ref.size) {
        const n = fs.readSync(fd, buf, done, ref.size - done, ref.offset + done)
        if (n === 0) return undefined
        done += n
      }
      remember(key, buf)
      return buf
    },

    forget (): void {
      cache.clear()
      cached = 0
    },

    remove (segments: Iterable<string>): void {
      for (const s of segments) {
        if (!NAME.test(s) || s === writer?.name) continue
        const fd = readFds.get(s)
        if (fd !== undefined) { readFds.delete(s); fs.closeSync(fd) }
        fs.rmSync(join(dir, s), { force: true })
      }
      this.forget()
    },

    /** When a segment file was last written (ms, the file system's clock), or undefined when gone. */
    modifiedMs (name: string): number | undefined {
      try { return fs.statSync(join(dir, name)).mtimeMs } catch { return undefined }
    },

    names (): string[] {
      return fs.readdirSync(dir).filter(n => NAME.test(n))
    },

    close (): void {
      for (const fd of readFds.values()) fs.closeSync(fd)
      readFds.clear()
      for (const w of unsynced) if (w.fd !== undefined) fs.closeSync(w.fd)
      writer = undefined
      unsynced = []
      this.forget()
    },
  }
}
