/**
 * Checks an LMDB environment's files before lmdb-js maps them: a zeroed or truncated
 * data.mdb crashes the process in native code (SIGSEGV/SIGBUS) once mapped.
 *
 * Why: lmdb-js 3.5 frees its per-environment state twice when LMDB's `mdb_env_open`
 * fails (src/env.cpp, `openEnv`: `delete extended_env`, then `closeEnv`), so *any*
 * refused open is a SIGSEGV of the whole process; and a file shorter than its meta
 * pages claim is mapped as it is, so reading a page past its end is a SIGBUS. A solver
 * daemon must not die of a damaged store: we read what LMDB would read first and
 * refuse, with a reason, what would make it fail or fault.
 *
 * Cost at start (2-core machine shared with a loaded test run, load average ~10): this
 * check (an open, two 192-byte preads, an fstat, a 64-byte read of lock.mdb) took 49 µs
 * median, 123 µs p90 over 200 runs; opening the store in a short-lived child process
 * first (the other way to survive the crash: node + lmdb-js, open, close) took 424 ms
 * median, 233 ms at best over 10 runs: ~10,000 times more, on every activation and every
 * CLI command. The check sees what LMDB reads before it maps the file (both meta pages,
 * the file's length against the newer one's last page); damage deep inside a B-tree is
 * not looked for (that would be reading the whole file).
 *
 * The length rule: LMDB writes a commit's pages before its meta page, so a whole file is
 * at least (last page + 1) × page size of its newer meta. (mdb.c notes the file "may be
 * shorter if the freeDB lists the final pages"; 2,400 group commits of mixed sizes, puts
 * and deletes, checked after each one, never were.)
 *
 * Layout: lmdb-js 3.x's LMDB (node_modules/lmdb/dependencies/lmdb/libraries/liblmdb/mdb.c,
 * MDB_DATA_VERSION 2, 64-bit): a 24-byte page header (`MDB_page_header`), then `MDB_meta`.
 * @module
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs'
import { join } from 'node:path'

const MDB_MAGIC = 0xBEEFC0DE
const MDB_DATA_VERSION = 2
const MDB_LOCK_VERSION = 2
const P_META = 0x08
/** No root: an empty tree. */
const P_INVALID = 0xffff_ffff_ffff_ffffn
/** Bytes of page header + meta LMDB itself reads from each meta page. */
const META_BYTES = 192
/** Offsets in a meta page (page header included). */
const AT = { flags: 18, magic: 24, version: 28, pageSize: 48, freeRoot: 88, mainRoot: 136, lastPage: 144, txnId: 152 } as const
/** The lock file's own header (`MDB_txbody`, first cache line): magic, then format. */
const LOCK_HEADER_BYTES = 64

export interface StoreFileCheck {
  /** What is wrong, naming the file and the check that failed; absent when LMDB can open it. */
  readonly problem?: string
  /** What to do about `problem`. */
  readonly advice?: string
  /** data.mdb exists but is empty: what a crash while creating the store leaves (no data was ever committed in it). */
  readonly emptyDataFile?: boolean
  /** The problem is in fields a concurrent commit changes (last page, roots). */
  readonly transient?: boolean
}

interface Meta { readonly pageSize: number; readonly lastPage: bigint; readonly txnId: bigint; readonly roots: readonly bigint[] }

/** How the check reads data.mdb's size: `fstat`, or a test's, to land a commit right after it. */
export type SizeOf = (fd: number) => number
const fstatSize: SizeOf = fd => fstatSync(fd).size

/** Checks `<dir>/data.mdb` and `<dir>/lock.mdb`; never throws for their content. */
export function checkStoreFiles (dir: string, sizeOf: SizeOf = fstatSize): StoreFileCheck {
  let data = checkDataFile(join(dir, 'data.mdb'), sizeOf)
  // The page counts and txn ids move with every commit of a writer beside us (`epx start`
  // under a CLI command): a refusal on them is read a second time before it stands.
  if (data.transient) data = checkDataFile(join(dir, 'data.mdb'), sizeOf)
  if (data.problem) return data
  const lock = checkLockFile(join(dir, 'lock.mdb'))
  return lock.problem ? lock : data
}

function damaged (problem: string, dir: string): StoreFileCheck {
  return {
    problem,
    advice: `restore a backup made with \`epx store backup\` (stop epx, replace the folder ${dir} with the backup, start again), ` +
      `or move ${dir} aside to start with an empty store (this loses every company, token, programme and revision it held)`,
  }
}

function checkDataFile (file: string, sizeOf: SizeOf): StoreFileCheck {
  const dir = join(file, '..')
  if (!existsSync(file)) return {}
  let fd: number
  try {
    fd = openSync(file, 'r+')
  } catch (err) {
    return { problem: `cannot open data.mdb for reading and writing (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, advice: `give the user running epx read and write access to ${dir}` }
  }
  try {
    // Both metas first, then the size: LMDB writes a commit's pages before its meta, so a
    // writer running beside us can only make the file longer than the metas we read say.
    // (Reading meta 1 after the size let a commit in between claim pages the size missed.)
    const page0 = readAt(fd, 0)
    const meta0 = page0.length < META_BYTES ? undefined : parseMeta(page0, 0)
    const page1 = typeof meta0 === 'object' ? readAt(fd, meta0.pageSize) : undefined
    const size = sizeOf(fd)
    if (size === 0) return { emptyDataFile: true }
    // Transient too: a store being created beside us is empty, then whole.
    if (meta0 === undefined) return { ...damaged(`data.mdb is ${size} bytes, shorter than an LMDB header`, dir), transient: true }
    if (typeof meta0 === 'string') return damaged(`data.mdb ${meta0}`, dir)
    if (size < 2 * meta0.pageSize) return damaged(`data.mdb is ${size} bytes, shorter than its two meta pages (${2 * meta0.pageSize} bytes)`, dir)
    const meta1 = parseMeta(page1!, 1)
    if (typeof meta1 === 'string') return damaged(`data.mdb ${meta1}`, dir)
    if (meta1.pageSize !== meta0.pageSize) return damaged(`data.mdb meta pages disagree on the page size (${meta0.pageSize} and ${meta1.pageSize})`, dir)
    const newer = meta1.txnId > meta0.txnId ? meta1 : meta0
    const needed = (newer.lastPage + 1n) * BigInt(newer.pageSize)
    if (BigInt(size) < needed) {
      return { ...damaged(`data.mdb is ${size} bytes but its last commit (transaction ${newer.txnId}) uses ${needed} bytes (${newer.lastPage + 1n} pages of ${newer.pageSize}): it was truncated`, dir), transient: true }
    }
    for (const meta of [meta0, meta1]) {
      for (const root of meta.roots) {
        if (root !== P_INVALID && root > meta.lastPage) {
          return { ...damaged(`data.mdb meta page of transaction ${meta.txnId} points past its last page (page ${root} > ${meta.lastPage})`, dir), transient: true }
        }
      }
    }
    return {}
  } catch (err) {
    return damaged(`data.mdb cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, dir)
  } finally {
    closeSync(fd)
  }
}

function readAt (fd: number, position: number): Buffer {
  const buf = Buffer.alloc(META_BYTES)
  const n = readSync(fd, buf, 0, META_BYTES, position)
  return buf.subarray(0, n)
}

function parseMeta (page: Buffer, n: 0 | 1): Meta | string {
  if (page.length < META_BYTES) return `meta page ${n} is cut short`
  if (!(page.readUInt16LE(AT.flags) & P_META)) return `page ${n} is not an LMDB meta page (zeroed or overwritten)`
  const magic = page.readUInt32LE(AT.magic)
  if (magic !== MDB_MAGIC) return `meta page ${n} has magic 0x${magic.toString(16)}, not LMDB's 0xbeefc0de`
  const version = page.readUInt32LE(AT.version) & 0xffff
  if (version !== MDB_DATA_VERSION) return `meta page ${n} has data version ${version}, this lmdb reads ${MDB_DATA_VERSION}`
  const pageSize = page.readUInt32LE(AT.pageSize)
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return `meta page ${n} has an impossible page size ${pageSize}`
  return {
    pageSize,
    lastPage: page.readBigUInt64LE(AT.lastPage),
    txnId: page.readBigUInt64LE(AT.txnId),
    roots: [page.readBigUInt64LE(AT.freeRoot), page.readBigUInt64LE(AT.mainRoot)],
  }
}

/**
 * LMDB rebuilds a damaged lock file when no other process has the store open; when one
 * has (`epx start` beside a CLI command), it refuses, and lmdb-js then crashes. The lock
 * file holds no data: the fix is to stop every user and delete it.
 */
function checkLockFile (file: string): StoreFileCheck {
  if (!existsSync(file)) return {}
  let header: Buffer
  try {
    const fd = openSync(file, 'r')
    try {
      header = Buffer.alloc(LOCK_HEADER_BYTES)
      header = header.subarray(0, readSync(fd, header, 0, LOCK_HEADER_BYTES, 0))
    } finally {
      closeSync(fd)
    }
  } catch (err) {
    return { problem: `cannot read lock.mdb (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, advice: `give the user running epx read and write access to ${join(file, '..')}` }
  }
  let what: string | undefined
  if (header.length < LOCK_HEADER_BYTES) what = `lock.mdb is ${header.length} bytes, shorter than its header`
  else if (header.readUInt32LE(0) !== MDB_MAGIC) what = 'lock.mdb has no LMDB magic (zeroed or overwritten)'
  else if ((header.readUInt32LE(4) & 0xfff) !== MDB_LOCK_VERSION) what = `lock.mdb has lock format ${header.readUInt32LE(4) & 0xfff}, this lmdb uses ${MDB_LOCK_VERSION}`
  if (!what || !lockedByAnotherProcess(file)) return {}
  return {
    problem: `${what}, while another process has the store open`,
    advice: `stop every epx process using ${join(file, '..', '..')} (epx start, epx commands), delete ${file} (it holds no data), and start again`,
  }
}

/**
 * Whether a process holds a POSIX lock on `file` (LMDB's readers hold one on lock.mdb):
 * Linux lists them in /proc/locks by inode. Where it cannot tell, assume one does, so
 * the answer is a refusal with advice rather than a crash.
 */
function lockedByAnotherProcess (file: string): boolean {
  try {
    const ino = statSync(file).ino
    return readFileSync('/proc/locks', 'utf8').split('\n').some(line => line.includes(`:${ino} `))
  } catch {
    return true
  }
}
