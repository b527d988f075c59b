/**
 * Retention of published revisions (DECISIONS.md: configurable, default 90 days): the
 * index entries past the cut, then the segment files no kept revision needs, and the
 * segment files a crash left without any committed revision.
 * @module
 */
import { storeUnavailable, type Store } from './open-store.ts'
import type { StoreDb } from './guarded-db.ts'
import type { Segments } from './revision-segments.ts'
import type { Generation } from './generation.ts'
import type { ExpiryKey, PairKey, RevKey, Stored } from './revisions.ts'

const PRUNE_CHUNK = 500

/** The revisions' databases and files, as `openRevisions` opened them. */
export interface RevisionParts {
  readonly store: Store
  readonly latestDb: StoreDb<Stored>
  readonly olderDb: StoreDb<Stored>
  readonly expiry: StoreDb<number>
  readonly segmentsDb: StoreDb<number>
  readonly segments: Segments
  readonly generation: Generation
  /** PostgreSQL: the bytes' rows ([segment, offset]), removed with their segment. */
  readonly bytesDb?: StoreDb<Buffer>
}

/**
 * Removes revisions emitted before `cutoffMs`, in small transactions with a yield in
 * between so a large purge never stalls the solver's event loop; a pair whose latest
 * revision goes is no longer published (404). Then deletes the segment files left
 * without a kept revision. Resolves to the number of revisions removed.
 */
export async function pruneRevisions (p: RevisionParts, cutoffMs: number): Promise<number> {
  const { store, latestDb, olderDb, expiry, segmentsDb, segments, generation, bytesDb } = p
  let removed = 0
  for (;;) {
    const keys = [...expiry.getKeys({ end: [cutoffMs], limit: PRUNE_CHUNK })] as ExpiryKey[]
    if (!keys.length) break
    await store.writeDurable(() => {
      for (const [ms, targetDate, siteId] of keys) {
        expiry.removeSync([ms, targetDate, siteId] satisfies ExpiryKey)
        const pair: PairKey = [targetDate, siteId]
        if (latestDb.get(pair)?.emittedAtMs === ms) latestDb.removeSync(pair)
        else olderDb.removeSync([targetDate, siteId, ms] satisfies RevKey)
      }
      generation.bump()
    })
    segments.forget()
    removed += keys.length
    if (keys.length < PRUNE_CHUNK) break
    await new Promise<void>(resolve => setImmediate(resolve))
  }
  const expired = [...segmentsDb.getRange({})].filter(e => e.value < cutoffMs).map(e => e.key as string)
  if (expired.length) {
    // Forgotten first: a crash in between leaves a file behind, never a revision without bytes.
    await store.writeDurable(() => {
      for (const name of expired) {
        segmentsDb.removeSync(name)
        if (bytesDb) for (const key of [...bytesDb.getKeys({ start: [name], end: [name, Number.MAX_SAFE_INTEGER] })]) bytesDb.removeSync(key)
      }
    })
    try { segments.remove(expired) } catch (err) { throw storeUnavailable(err) }
  }
  return removed
}

/**
 * Deletes segment files no commit ever named: bytes appended before a crash whose
 * metadata never committed. Only files untouched for `minAgeMs` (the file system's
 * clock), so a segment another process (the CLI) is publishing into right now is never
 * taken for one. Returns the names removed.
 */
export function orphanSegments (segmentsDb: StoreDb<number>, segments: Segments, minAgeMs: number): string[] {
  const named = new Set([...segmentsDb.getKeys()].filter(k => typeof k === 'string'))
  const now = Date.now()
  const orphans = segments.names().filter(n => {
    if (named.has(n)) return false
    const at = segments.modifiedMs(n)
    return at !== undefined && now - at >= minAgeMs
  })
  try { segments.remove(orphans) } catch (err) { throw storeUnavailable(err) }
  return orphans
}
