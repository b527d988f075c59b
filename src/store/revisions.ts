/**
 * Published Besoins_Agreges revisions: the serialized bytes of each one, its weak
 * ETag and Last-Modified, a small `latest` index per (site_id, target_date) that a
 * 304 is answered from without reading the document, and retention.
 * @module
 */
import * as crypto from 'node:crypto'
import { join } from 'node:path'
import type { Store } from './open-store.ts'
import { openSegments, type SegmentRef } from './revision-segments.ts'
import { EpxError } from '../errors.ts'
import { formatUtcInstant, httpDate } from '../contract/instants.ts'

/** What is known of a revision without its document. */
export interface RevisionMeta {
  readonly siteId: string
  readonly targetDate: string
  readonly emittedAt: string
  readonly emittedAtMs: number
  /** `W/"<opaque>"`, derived from the bytes: stable across restarts (DECISIONS.md "Outbound"). */
  readonly etag: string
  /** `emitted_at` as an HTTP date (DECISIONS.md "Outbound"). */
  readonly lastModified: string
  readonly size: number
  /** Where the bytes are (revision-segments.ts): outside LMDB's map, see there why. */
  readonly segment: string
  readonly offset: number
}

/** A document to publish; `render` gets the emission time the store picked. */
export interface RevisionDraft {
  readonly siteId: string
  readonly targetDate: string
  render(emittedAt: string): string
}

type PairKey = [string, string]
type RevKey = [string, string, number]
type ExpiryKey = [number, string, string]

const MAX_MS = 8.64e15   // the last instant a Date can hold: end of a pair's key range
const PRUNE_CHUNK = 500

/** `W/"` + 160 bits of the SHA-256 of the bytes in base64url + `"`. */
export function etagOf (bytes: Uint8Array): string {
  return `W/"${sha256(bytes).slice(0, 27)}"`
}

// One-shot crypto.hash (node >= 20.12) is twice as fast as a Hash object for 9 KB.
const sha256: (b: Uint8Array) => string = typeof crypto.hash === 'function'
  ? b => crypto.hash('sha256', b, 'base64url')
  : b => crypto.createHash('sha256').update(b).digest('base64url')

/**
 * The emission time of the next revision of a pair: strictly later than the previous
 * one even in the same millisecond or after the clock stepped back (DECISIONS.md
 * "Besoins_Agreges publication"). It is also kept in a later *second*: Last-Modified
 * has one-second resolution, and a BSP revalidating by date alone must still see a
 * republication made within the same second (it may then lead the clock by < 1 s).
 */
export function nextEmittedAtMs (previousMs: number | undefined, nowMs: number): number {
  if (previousMs === undefined) return nowMs
  return Math.max(nowMs, Math.floor(previousMs / 1000) * 1000 + 1000)
}

export function openRevisions (store: Store, opts: { retentionDays: number }) {
  const metas = store.db<RevisionMeta>('revisions')
  const segmentsDb = store.db<number>('revision-segments')  // file name → latest emittedAtMs in it
  const segments = openSegments(join(store.path, 'revision-bytes'))
  const latestDb = store.db<RevisionMeta>('revision-latest')
  const expiry = store.db<number>('revision-expiry')
  const retentionMs = opts.retentionDays * 86_400_000

  // A run publishes its sites at the same instant: format it once, not once per site.
  let stamp = { ms: NaN, iso: '', http: '' }
  const prepare = (d: RevisionDraft, previousMs: number | undefined, nowMs: number) => {
    const emittedAtMs = nextEmittedAtMs(previousMs, nowMs)
    if (stamp.ms !== emittedAtMs) stamp = { ms: emittedAtMs, iso: formatUtcInstant(emittedAtMs), http: httpDate(emittedAtMs) }
    const bytes = Buffer.from(d.render(stamp.iso), 'utf8')
    const meta = {
      siteId: d.siteId, targetDate: d.targetDate, emittedAt: stamp.iso, emittedAtMs,
      etag: etagOf(bytes), lastModified: stamp.http, size: bytes.length,
    }
    return { meta, bytes }
  }
  type Prepared = ReturnType<typeof prepare>
  const located = (p: Prepared, ref: SegmentRef): RevisionMeta => ({ ...p.meta, segment: ref.segment, offset: ref.offset })
  const noStore = (err: unknown) => new EpxError('NO_STORE', [], { cause: err, headers: { 'retry-after': '5' } })

  /** Deletes the segment files whose every revision is older than `cutoff`. */
  const dropSegments = async (cutoff: number): Promise<void> => {
    store.guard()
    const expired = [...segmentsDb.getRange({})].filter(e => e.value < cutoff).map(e => e.key as string)
    if (!expired.length) return
    // Forgotten first: a crash in between leaves a file behind, never a revision without bytes.
    await store.writeDurable(() => { for (const name of expired) segmentsDb.removeSync(name) })
    try { segments.remove(expired) } catch (err) { throw noStore(err) }
  }

  return {
    /** Sync: the latest revision of a pair, from the small index (no document read). */
    latest (siteId: string, targetDate: string): RevisionMeta | undefined {
      store.guard()
      return latestDb.get([siteId, targetDate] satisfies PairKey)
    },

    /** Sync: the stored bytes of one revision (a copy, safe to hand to a socket). */
    bytesOf (meta: RevisionMeta): Buffer | undefined {
      store.guard()
      const key: RevKey = [meta.siteId, meta.targetDate, meta.emittedAtMs]
      // A revision removed by retention may still have its bytes in a shared segment.
      return segments.cached(meta) ?? (metas.doesExist(key) ? segments.read(meta) : undefined)
    },

    /** Sync: every kept revision of a pair, oldest first. */
    list (siteId: string, targetDate: string): RevisionMeta[] {
      store.guard()
      return [...metas.getRange({ start: [siteId, targetDate, 0], end: [siteId, targetDate, MAX_MS] })]
        .map(e => e.value)
    },

    /**
     * Publishes drafts as new revisions, all in one durable transaction. Documents are
     * rendered before the transaction (it holds the event loop while it runs); the
     * transaction re-checks each pair and re-renders in the rare case another writer
     * (the CLI, another process) got a later revision in between.
     */
    async publish (drafts: readonly RevisionDraft[], nowMs: number): Promise<RevisionMeta[]> {
      store.guard()
      const prepared = drafts.map(d => {
        const prev = latestDb.get([d.siteId, d.targetDate] satisfies PairKey)
        return { draft: d, ...prepare(d, prev?.emittedAtMs, nowMs) }
      })
      // The bytes are on disk before the metadata that points at them is committed.
      let metaOf: RevisionMeta[]
      try {
        const refs = segments.append(prepared.map(p => p.bytes), nowMs)
        metaOf = prepared.map((p, i) => located(p, refs[i]!))
        await segments.sync()
      } catch (err) { throw noStore(err) }
      return store.writeDurable(() => {
        const final = prepared.map((p, i) => {
          const prev = latestDb.get([p.meta.siteId, p.meta.targetDate] satisfies PairKey)
          if (!prev || prev.emittedAtMs < p.meta.emittedAtMs) return metaOf[i]!
          const again = prepare(p.draft, prev.emittedAtMs, nowMs)
          const meta = located(again, segments.append([again.bytes], nowMs)[0]!)
          segments.syncNow()
          return meta
        })
        // Every fault check before the first put: a failed batch leaves nothing behind.
        for (let i = 0; i < final.length; i++) store.checkWrite()
        const newest = new Map<string, number>()
        for (const meta of final) {
          const key: RevKey = [meta.siteId, meta.targetDate, meta.emittedAtMs]
          metas.putSync(key, meta)
          latestDb.putSync([meta.siteId, meta.targetDate] satisfies PairKey, meta)
          expiry.putSync([meta.emittedAtMs, meta.siteId, meta.targetDate] satisfies ExpiryKey, 1)
          newest.set(meta.segment, Math.max(newest.get(meta.segment) ?? 0, meta.emittedAtMs))
        }
        for (const [name, ms] of newest) {
          if ((segmentsDb.get(name) ?? 0) < ms) segmentsDb.putSync(name, ms)
        }
        return final
      })
    },

    /**
     * Removes revisions emitted more than `retentionDays` before `nowMs` (DECISIONS.md:
     * retention configurable, default 90 days), in small transactions with a yield in
     * between so a large purge never stalls the solver's event loop. A pair whose
     * latest revision goes is no longer published (404).
     */
    async prune (nowMs: number): Promise<number> {
      const cutoff = nowMs - retentionMs
      let removed = 0
      for (;;) {
        store.guard()
        const keys = [...expiry.getKeys({ end: [cutoff], limit: PRUNE_CHUNK })] as ExpiryKey[]
        if (!keys.length) break
        await store.writeDurable(() => {
          for (let i = 0; i < keys.length; i++) store.checkWrite()
          for (const [ms, siteId, targetDate] of keys) {
            metas.removeSync([siteId, targetDate, ms] satisfies RevKey)
            expiry.removeSync([ms, siteId, targetDate] satisfies ExpiryKey)
            const pair: PairKey = [siteId, targetDate]
            if (latestDb.get(pair)?.emittedAtMs === ms) latestDb.removeSync(pair)
          }
        })
        segments.forget()
        removed += keys.length
        if (keys.length < PRUNE_CHUNK) break
        await new Promise<void>(resolve => setImmediate(resolve))
      }
      await dropSegments(cutoff)
      return removed
    },
  }
}
export type Revisions = ReturnType<typeof openRevisions>
