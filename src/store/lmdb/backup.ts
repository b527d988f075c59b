/**
 * A consistent copy of a store while the service runs (`epx store backup DIR`).
 *
 * The store is two things: LMDB's data.mdb, and the append-only segment files under
 * `revision-bytes/` that hold revisions' bytes (revision-segments.ts). LMDB's own copy
 * (`root.backup`, mdb_env_copy2) writes one read transaction's snapshot, safe beside a
 * writer in another process. The segment files are copied after it: a revision's bytes
 * are synced before its record commits and files only grow, so every record of the
 * snapshot finds its bytes. (The one exception: a file the daily prune deletes between
 * the snapshot and its copy held only expired revisions; it is skipped, and the next
 * prune of the restored store forgets them.)
 *
 * Atomic: everything is written to a hidden folder beside DIR, synced, checked as a
 * store LMDB can open (check-file.ts), and only then renamed to DIR. A backup under the
 * final name is always whole.
 * @module
 */
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import type { RootDatabase } from 'lmdb'
import { EpxError } from '../../errors.ts'
import { checkStoreFiles } from '../check-file.ts'
import type { BackupResult } from '../engine.ts'

const SEGMENTS_DIR = 'revision-bytes'

/** The LMDB store `root` in folder `path`, copied to `target`. */
export async function backupEnvironment (root: RootDatabase, path: string, target: string): Promise<BackupResult> {
  const dir = resolve(target)
  if (existsSync(dir)) {
    throw new EpxError('EPX_CONFLICT', [`${dir} already exists: a backup is never overwritten; give a new folder, or remove that one first (rm -r ${dir}) if you mean to replace it`])
  }
  const parent = dirname(dir)
  const partial = join(parent, `.${basename(dir)}.partial-${process.pid}`)
  const fail = (err: unknown): EpxError =>
    new EpxError('EPX_BACKUP_FAILED', [dir, (err as Error)?.message ?? String(err)], { cause: err })
  try {
    mkdirSync(partial, { recursive: true })
    // mdb_env_copy2 writes `<partial>/data.mdb` (the store is opened as a folder).
    // Compacting: it walks the snapshot's pages and writes metas of its own. The plain
    // copy writes the map's raw meta pages but only as far as data.mdb's size on disk, and
    // under a busy writer that file can still be shorter than the snapshot's last page
    // (mdb.c mdb_env_copyfd0: `if (w3 > fsize) w3 = fsize`): a copy that fails its check
    // ("data.mdb is 167936 bytes but its last commit uses 192512"), seen under load.
    await root.backup(partial, true)
    const segmentFiles = copySegments(join(path, SEGMENTS_DIR), join(partial, SEGMENTS_DIR))
    syncFile(join(partial, 'data.mdb'))
    syncFile(partial)
    const check = checkStoreFiles(partial)
    if (check.problem) throw new Error(`the copy does not check: ${check.problem}`)
    if (existsSync(dir)) throw new EpxError('EPX_CONFLICT', [`${dir} appeared while the backup was written; the backup was not kept`])
    renameSync(partial, dir)
    syncFile(parent)
    return { dir, segmentFiles }
  } catch (err) {
    rmSync(partial, { recursive: true, force: true })
    throw err instanceof EpxError ? err : fail(err)
  }
}

function copySegments (from: string, to: string): number {
  mkdirSync(to)
  let names: string[]
  try { names = readdirSync(from) } catch { names = [] }
  let copied = 0
  for (const name of names) {
    if (!name.endsWith('.seg')) continue
    try {
      copyFileSync(join(from, name), join(to, name))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue   // pruned meanwhile (see above)
      throw err
    }
    syncFile(join(to, name))
    copied++
  }
  syncFile(to)
  return copied
}

function syncFile (path: string): void {
  const fd = openSync(path, 'r')
  try { fsyncSync(fd) } finally { closeSync(fd) }
}
