/**
 * Published Besoins_Agreges revisions: the serialized bytes of each one, its weak
 * ETag and Last-Modified, a small `latest` index per (site_id, target_date) that a
 * 304 is answered from without reading the document, and retention.
 * @module
 */
import * as crypto from 'node:crypto'
import type { Store } from './open-store.ts'
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
  const bytesDb = store.db<Buffer>('revision-bytes', { binary: true })
  const latestDb = store.db<RevisionMeta>('revision-latest')
  const expiry = store.db<number>('revision-expiry')
  const retentionMs = opts.retentionDays * 86_400_000

  // A run publishes its sites at the same instant: format it once, not once per site.
  let stamp = { ms: NaN, iso: '', http: '' }
  const prepare = (d: RevisionDraft, previousMs: number | undefined, nowMs: number) => {
    const emittedAtMs = nextEmittedAtMs(previousMs, nowMs)
    if (stamp.ms !== emittedAtMs) stamp = { ms: emittedAtMs, iso: formatUtcInstant(emittedAtMs), http: httpDate(emittedAtMs) }
    const bytes = Buffer.from(d.render(stamp.iso), 'utf8')
    const meta: RevisionMeta = {
      siteId: d.siteId, targetDate: d.targetDate, emittedAt: stamp.iso, emittedAtMs,
      etag: etagOf(bytes), lastModified: stamp.http, size: bytes.length,
    }
    return { meta, bytes }
  }

  return {
    /** Sync: the latest revision of a pair, from the small index (no document read). */
    latest (siteId: string, targetDate: string): RevisionMeta | undefined {
      store.guard()
      return latestDb.get([siteId, targetDate] satisfies PairKey)
    },

    /** Sync: the stored bytes of one revision (a copy, safe to hand to a socket). */
    bytesOf (meta: Pick<RevisionMeta, 'siteId' | 'targetDate' | 'emittedAtMs'>): Buffer | undefined {
      store.guard()
      return bytesDb.get([meta.siteId, meta.targetDate, meta.emittedAtMs] satisfies RevKey)
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
      return store.writeDurable(() => {
        const final = prepared.map(p => {
          const prev = latestDb.get([p.meta.siteId, p.meta.targetDate] satisfies PairKey)
          return prev && prev.emittedAtMs >= p.meta.emittedAtMs ? prepare(p.draft, prev.emittedAtMs, nowMs) : p
        })
        // Every fault check before the first put: a failed batch leaves nothing behind.
        for (let i = 0; i < final.length; i++) store.checkWrite()
        for (const { meta, bytes } of final) {
          const key: RevKey = [meta.siteId, meta.targetDate, meta.emittedAtMs]
          bytesDb.putSync(key, bytes)
          metas.putSync(key, meta)
          latestDb.putSync([meta.siteId, meta.targetDate] satisfies PairKey, meta)
          expiry.putSync([meta.emittedAtMs, meta.siteId, meta.targetDate] satisfies ExpiryKey, 1)
        }
        return final.map(f => f.meta)
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
        if (!keys.length) return removed
        await store.writeDurable(() => {
          for (let i = 0; i < keys.length; i++) store.checkWrite()
          for (const [ms, siteId, targetDate] of keys) {
            bytesDb.removeSync([siteId, targetDate, ms] satisfies RevKey)
            metas.removeSync([siteId, targetDate, ms] satisfies RevKey)
            expiry.removeSync([ms, siteId, targetDate] satisfies ExpiryKey)
            const pair: PairKey = [siteId, targetDate]
            if (latestDb.get(pair)?.emittedAtMs === ms) latestDb.removeSync(pair)
          }
        })
        removed += keys.length
        if (keys.length < PRUNE_CHUNK) return removed
        await new Promise<void>(resolve => setImmediate(resolve))
      }
    },
  }
}
export type Revisions = ReturnType<typeof openRevisions>
