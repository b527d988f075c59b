/**
 * Published Besoins_Agreges revisions: the serialized bytes of each one, its weak
 * ETag and Last-Modified, a small `latest` index per (site_id, target_date) that a
 * 304 is answered from without reading the document, and retention.
 * @module
 */
import * as crypto from 'node:crypto'
import { join } from 'node:path'
import { storeUnavailable, type Store } from './open-store.ts'
import { openSegments, SEGMENTS_FOLDER, type SegmentRef } from './revision-segments.ts'
import { REVISION_BYTES_DB } from './sub-databases.ts'
import { openGeneration } from './generation.ts'
import { formatUtcInstant, httpDate } from '../contract/instants.ts'
import { BoundedCache } from '../bounded-cache.ts'
import { orphanSegments, pruneRevisions } from './revision-retention.ts'
import { jsonText, openEvents, perimeterReaders, type EventDraft } from './events.ts'

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

/** Rendered, hashed and appended to a segment file; not yet visible. */
export interface StagedRevision {
  readonly draft: RevisionDraft
  readonly meta: RevisionMeta
}

/** A document to publish; `render` gets the emission time the store picked. */
export interface RevisionDraft {
  readonly siteId: string
  readonly targetDate: string
  render(emittedAt: string): string
}

// Keys lead with the target date: a run writes one date's region of the tree, not a
// page in every site's (each page read during a write stays resident: RSS, bench/README.md#how-to-read-the-figures).
export type PairKey = [string, string]               // [targetDate, siteId]
export type RevKey = [string, string, number]        // [targetDate, siteId, emittedAtMs]
export type ExpiryKey = [number, string, string]     // [emittedAtMs, targetDate, siteId]: appended at the end
/** What is stored per revision: the pair is in the key. */
export type Stored = Omit<RevisionMeta, 'siteId' | 'targetDate'>

const MAX_MS = 8.64e15   // the last instant a Date can hold: end of a pair's key range
/** Largest encoding buffer kept between chunks (a chunk of 64 documents needs ~1 MiB). */
const MAX_SCRATCH_BYTES = 4 * 2 ** 20
/**
 * Pairs whose latest revision (or its absence) is kept in memory between publications:
 * a BSP polls each of its sites, so the cache holds a deployment's sites for tomorrow and
 * today, or every poll misses it (bench/README.md#a-bsp-that-polls-every-site).
 */
export const LATEST_CACHED_PAIRS = 16_384

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

/** A pair's key in memory: the target date then the site id (a fixed-width date needs no separator). */
export function pairKeyOf (siteId: string, targetDate: string): string {
  return targetDate + siteId
}

/** The published revisions: what the GET, the publisher and the CLI may ask of them. */
export interface Revisions {
  /**
   * Sync: the latest revision of a pair, from the small index (no document read).
   * `pairKey` is `pairKeyOf(siteId, targetDate)` when the caller keeps one (the door's
   * parsed query): a text made per call costs its concatenation and its hash (~0.1 µs).
   */
  latest(siteId: string, targetDate: string, knownGeneration?: number, pairKey?: string): RevisionMeta | undefined
  /** Sync: the stored bytes of one kept revision. */
  bytesOf(meta: RevisionMeta): Buffer | undefined
  /** Sync: the latest revision of every site published for a day (a range read of the small index). */
  latestOfDay(targetDate: string): RevisionMeta[]
  /** Sync: every kept revision of a pair, oldest first. */
  list(siteId: string, targetDate: string): RevisionMeta[]
  /**
   * Renders drafts (on this thread: callers keep batches small) and appends their bytes
   * to a segment file; `commit` makes them revisions. Reads only the pairs' latest.
   */
  stage(drafts: readonly RevisionDraft[], nowMs: number): StagedRevision[]
  /**
   * Publishes staged revisions in one durable transaction, once their bytes are on disk.
   * Few large commits, not one per chunk: each transaction re-reads the pages at the
   * tree's edge, which then stay resident. The transaction re-checks each pair and
   * re-renders in the rare case another writer (the CLI, another process) got a later
   * revision in between.
   */
  commit(staged: readonly StagedRevision[], nowMs: number): Promise<RevisionMeta[]>
  /** Publishes drafts as new revisions, all in one durable transaction. */
  publish(drafts: readonly RevisionDraft[], nowMs: number): Promise<RevisionMeta[]>
  /**
   * Removes revisions emitted more than `retentionDays` before `nowMs` (DECISIONS.md:
   * retention configurable, default 90 days), in small transactions with a yield in
   * between so a large purge never stalls the solver's event loop. A pair whose
   * latest revision goes is no longer published (404). Then deletes the segment files
   * left without a kept revision.
   */
  prune(nowMs: number): Promise<number>
  /**
   * Deletes segment files no commit ever named: bytes appended before a crash whose
   * metadata never committed. Only files untouched for `minAgeMs` (default 1 h; the
   * file system's clock), so a segment another process (the CLI) is publishing into
   * right now is never taken for one. Returns the names removed.
   */
  removeOrphanSegments(minAgeMs?: number): string[]
  /** Releases the segment files' descriptors; the plugin calls it when it closes. */
  close(): void
}

export function openRevisions (store: Store, opts: { retentionDays: number }): Revisions {
  const latestDb = store.db<Stored>('rev-latest')     // the revision a GET serves
  const olderDb = store.db<Stored>('rev-older')       // superseded revisions, kept for audit
  const expiry = store.db<number>('rev-expiry')
  const segmentsDb = store.db<number>('rev-segments') // file name → latest emittedAtMs in it
  const segments = openSegments(join(store.path, SEGMENTS_FOLDER))
  // Instances sharing the store serve each other's revisions: their bytes travel with the
  // records (a replica writes them into its own segment files, postgres/segment-mirror.ts).
  const bytesDb = store.shared ? store.db<Buffer>(REVISION_BYTES_DB, { binary: true }) : undefined
  const retentionMs = opts.retentionDays * 86_400_000
  const withPair = (siteId: string, targetDate: string, v: Stored): RevisionMeta => ({ siteId, targetDate, ...v })
  // A BSP polls the same pairs all day: what `latest` read is kept until the store
  // generation moves, which every write of the latest index bumps (this process's, the
  // CLI's). A hit costs one small read instead of a read and a decode (bench/README.md#where-the-doors-thread-spends-a-get).
  const generation = openGeneration(store)
  const cached = new BoundedCache<string, RevisionMeta | null>(LATEST_CACHED_PAIRS)
  let cachedGeneration = -1
  const stored = ({ siteId: _s, targetDate: _d, ...v }: RevisionMeta): Stored => v
  /** A cache miss of `latest`: the key is the target date followed by the site id. */
  const readLatest = (key: string, siteId: string): RevisionMeta | null => {
    const targetDate = key.slice(0, key.length - siteId.length)
    const v = latestDb.get([targetDate, siteId] satisfies PairKey)
    return v ? withPair(siteId, targetDate, v) : null
  }

  const stager = new Stager(segments)
  // DECISIONS.md "Events for BSPs": one `besoins_agreges.publie` per site and company whose perimeter holds it, in the commit's write.
  const events = openEvents(store)
  const readersNow = perimeterReaders(store)

  /** Inside the commit: the events of its revisions, each one's members made once, whatever its readers. */
  const announce = (final: readonly RevisionMeta[], nowMs: number): void => {
    const readers = readersNow()
    const drafts: EventDraft[] = []
    for (const meta of final) {
      const who = readers(meta.siteId)
      if (!who.length) continue
      const fields = `"site_id":"${meta.siteId}","target_date":"${meta.targetDate}","etag":${jsonText(meta.etag)},"emitted_at":"${meta.emittedAt}"`
      for (const companyId of who) drafts.push({ companyId, type: 'besoins_agreges.publie', fields })
    }
    events.appendSync(drafts, nowMs)
  }

  const api: Revisions = {
    latest (siteId: string, targetDate: string, knownGeneration?: number, pairKey = pairKeyOf(siteId, targetDate)): RevisionMeta | undefined {
      // The door passes the generation it read for the request; otherwise it is read here.
      // Either read guards the store: an outage is NO_STORE, never a stale answer.
      const g = knownGeneration ?? generation.read()
      if (g !== cachedGeneration) {
        cached.clear()
        cachedGeneration = g
      }
      return cached.getOrCompute(pairKey, readLatest, siteId) ?? undefined
    },

    bytesOf (meta: RevisionMeta): Buffer | undefined {
      store.guard()   // a cached document is outside LMDB: an outage is NO_STORE all the same
      const hit = segments.cached(meta)
      if (hit) return hit
      // A revision removed by retention may still have its bytes in a shared segment.
      const kept = latestDb.get([meta.targetDate, meta.siteId])?.emittedAtMs === meta.emittedAtMs ||
        olderDb.doesExist([meta.targetDate, meta.siteId, meta.emittedAtMs] satisfies RevKey)
      return kept ? segments.read(meta) : undefined
    },

    /** Sync: the latest revision of every site published for a day (a range read of the small index). */
    latestOfDay (targetDate: string): RevisionMeta[] {
      return [...latestDb.getRange({ start: [targetDate], end: [targetDate, '\uffff'] })]
        .map(e => withPair((e.key as PairKey)[1], targetDate, e.value))
    },

    list (siteId: string, targetDate: string): RevisionMeta[] {
      const older = [...olderDb.getRange({ start: [targetDate, siteId, 0], end: [targetDate, siteId, MAX_MS] })]
        .map(e => withPair(siteId, targetDate, e.value))
      const latest = api.latest(siteId, targetDate)
      return latest ? [...older, latest] : older
    },

    stage (drafts: readonly RevisionDraft[], nowMs: number): StagedRevision[] {
      return stager.prepare(drafts.map(draft => ({ draft, previousMs: latestDb.get([draft.targetDate, draft.siteId])?.emittedAtMs })), nowMs)
    },

    async commit (staged: readonly StagedRevision[], nowMs: number): Promise<RevisionMeta[]> {
      store.guard()   // before the segment files are synced for nothing
      try { await segments.sync() } catch (err) { throw storeUnavailable(err) }
      return store.writeDurable(() => {
        const previous = staged.map(s => latestDb.get([s.meta.targetDate, s.meta.siteId] satisfies PairKey))
        const final = staged.map((s, i) => {
          const prev = previous[i]
          if (!prev || prev.emittedAtMs < s.meta.emittedAtMs) return s.meta
          const [again] = stager.prepare([{ draft: s.draft, previousMs: prev.emittedAtMs }], nowMs)
          segments.syncNow()
          return again!.meta
        })
        const newest = new Map<string, number>()
        final.forEach((meta, i) => {
          const prev = previous[i]
          if (prev) olderDb.putSync([meta.targetDate, meta.siteId, prev.emittedAtMs] satisfies RevKey, prev)
          latestDb.putSync([meta.targetDate, meta.siteId] satisfies PairKey, stored(meta))
          expiry.putSync([meta.emittedAtMs, meta.targetDate, meta.siteId] satisfies ExpiryKey, 1)
          newest.set(meta.segment, Math.max(newest.get(meta.segment) ?? 0, meta.emittedAtMs))
        })
        for (const [name, ms] of newest) {
          if ((segmentsDb.get(name) ?? 0) < ms) segmentsDb.putSync(name, ms)
        }
        if (bytesDb) {
          for (const meta of final) {
            const bytes = segments.read(meta)
            if (!bytes) throw new Error(`revision bytes of ${meta.segment} at ${meta.offset} unreadable right after their write`)
            bytesDb.putSync([meta.segment, meta.offset], bytes)
          }
        }
        announce(final, nowMs)
        generation.bump()
        return final
      })
    },

    async publish (drafts: readonly RevisionDraft[], nowMs: number): Promise<RevisionMeta[]> {
      return api.commit(api.stage(drafts, nowMs), nowMs)
    },

    prune: (nowMs: number) => pruneRevisions({ store, latestDb, olderDb, expiry, segmentsDb, segments, generation, bytesDb }, nowMs - retentionMs),
    removeOrphanSegments: (minAgeMs = 3_600_000) => orphanSegments(segmentsDb, segments, minAgeMs),

    close (): void {
      segments.close()
    },
  }
  return api
}

/** Renders, hashes and appends a publication's documents to the segment files. */
class Stager {
  readonly #segments: ReturnType<typeof openSegments>
  // A run publishes its sites at the same instant: format it once, not once per site.
  #stamp = { ms: NaN, iso: '', http: '' }
  // A chunk's documents are encoded into one buffer kept from chunk to chunk, not one
  // buffer each plus a concatenation: a publication's malloc churn stayed in the daemon's
  // RSS (bench/README.md#how-to-read-the-figures, Memory).
  #scratch = Buffer.allocUnsafeSlow(0)

  constructor (segments: ReturnType<typeof openSegments>) { this.#segments = segments }

  /**
   * Renders, hashes and appends the bytes (not yet durable). One document at a time: each
   * text, and its serializer's pieces, is garbage before the next is rendered, so a
   * chunk's documents never survive a scavenge together (bench/README.md#a-publications-garbage).
   */
  prepare (drafts: readonly { draft: RevisionDraft; previousMs: number | undefined }[], nowMs: number): StagedRevision[] {
    const n = drafts.length
    const stamps = new Array<{ ms: number; iso: string; http: string }>(n)
    const sizes = new Array<number>(n)
    const etags = new Array<string>(n)
    let buf = this.#scratch
    let at = 0
    for (let i = 0; i < n; i++) {
      const { draft: d, previousMs } = drafts[i]!
      const emittedAtMs = nextEmittedAtMs(previousMs, nowMs)
      if (this.#stamp.ms !== emittedAtMs) this.#stamp = { ms: emittedAtMs, iso: formatUtcInstant(emittedAtMs), http: httpDate(emittedAtMs) }
      const stamp = stamps[i] = this.#stamp
      const text = d.render(stamp.iso)
      // A UTF-16 unit is at most 3 bytes of UTF-8: room for the text without measuring it first.
      if (buf.length < at + 3 * text.length) buf = grown(buf, at, at + 3 * text.length)
      const size = buf.write(text, at)
      etags[i] = etagOf(buf.subarray(at, at + size))
      sizes[i] = size
      at += size
    }
    if (buf !== this.#scratch && buf.length <= MAX_SCRATCH_BYTES) this.#scratch = buf
    let refs: SegmentRef[]
    try { refs = this.#segments.append(buf.subarray(0, at), sizes, nowMs) } catch (err) { throw storeUnavailable(err) }
    return drafts.map(({ draft: d }, i) => ({
      draft: d,
      meta: {
        siteId: d.siteId, targetDate: d.targetDate, emittedAt: stamps[i]!.iso, emittedAtMs: stamps[i]!.ms,
        etag: etags[i]!, lastModified: stamps[i]!.http, size: sizes[i]!, segment: refs[i]!.segment, offset: refs[i]!.offset,
      },
    }))
  }
}

/** A buffer of at least `need` bytes (a power of two) holding `buf`'s first `used` bytes. */
function grown (buf: Buffer, used: number, need: number): Buffer<ArrayBuffer> {
  const next = Buffer.allocUnsafeSlow(2 ** Math.ceil(Math.log2(need)))
  buf.copy(next, 0, 0, used)
  return next
}
