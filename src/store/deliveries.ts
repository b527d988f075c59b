/**
 * Delivery receipts: for each (company, site, day), the revision the company last
 * received with a GET (200) or confirmed as current (304), and when. A GET writes
 * nothing to the store: `record` updates an object in memory (a map lookup, well under
 * a microsecond), and the receipts that changed are flushed in one durable write every
 * few seconds and at close. A crash loses at most the receipts since the last flush.
 * @module
 */
import type { Store } from './open-store.ts'
import { pairKeyOf } from './revisions.ts'

export interface DeliveryReceipt {
  readonly companyId: string
  readonly siteId: string
  readonly targetDate: string
  /** `emitted_at` (ms) of the revision the company holds. */
  readonly emittedAtMs: number
  /** When it fetched (200) or confirmed (304) it. */
  readonly atMs: number
  readonly status: 200 | 304
}

/** Stored under [targetDate, companyId, siteId]: the rest is in the key. */
interface Stored { readonly e: number; readonly a: number; readonly s: 200 | 304 }

interface Entry {
  readonly companyId: string
  readonly siteId: string
  readonly targetDate: string
  emittedAtMs: number
  atMs: number
  status: 200 | 304
  dirty: boolean
}

export interface DeliveriesOptions {
  /** How often changed receipts are written (default 5 s). */
  readonly flushMs?: number
  /** Told when a flush fails (the receipts stay in memory for the next one). */
  readonly onFlushError?: (err: unknown) => void
}

/** Receipts kept in memory; past this, the flushed ones are dropped (they are in the store). */
const MAX_ENTRIES = 100_000

/** The receipts: recorded by the outbound door, listed by `epx deliveries` and the metrics. */
export interface Deliveries {
  /** The GET path: one map lookup and a few field writes; no store access, no promise. */
  record(companyId: string, siteId: string, targetDate: string, emittedAtMs: number, status: 200 | 304, atMs: number, pairKey?: string): void
  /** Writes the receipts changed since the last flush (one durable write); never rejects. */
  flush(): Promise<void>
  /** Flushes every `flushMs` until `close()`. */
  start(): void
  /** The receipts of a day (of one company), flushed ones and those still in memory. */
  list(targetDate: string, companyId?: string): DeliveryReceipt[]
  /** Latest fetch instant (ms) per company among the receipts in memory, for the metrics. */
  lastFetchByCompany(): Map<string, number>
  /** Removes the receipts of days before `beforeDate` (retention); resolves to their count. */
  prune(beforeDate: string): Promise<number>
  /** Stops the timer and writes what is left. */
  close(): Promise<void>
}

export function openDeliveries (store: Store, opts: DeliveriesOptions = {}): Deliveries {
  const db = store.db<Stored>('deliveries')
  const byCompany = new Map<string, Map<string, Entry>>()
  let entries = 0
  let dirty: Entry[] = []
  let flushing: Promise<void> = Promise.resolve()
  let timer: NodeJS.Timeout | undefined

  const writeDirty = async (): Promise<void> => {
    const batch = dirty
    if (batch.length === 0) return
    dirty = []
    const values = batch.map(e => { e.dirty = false; return { e: e.emittedAtMs, a: e.atMs, s: e.status } satisfies Stored })
    try {
      await store.writeDurable(() => {
        for (let i = 0; i < batch.length; i++) {
          const e = batch[i]!
          db.putSync([e.targetDate, e.companyId, e.siteId], values[i]!)
        }
      })
    } catch (err) {
      for (const e of batch) if (!e.dirty) { e.dirty = true; dirty.push(e) }
      opts.onFlushError?.(err)
      return
    }
    if (entries > MAX_ENTRIES) {
      for (const [company, m] of byCompany) {
        for (const [k, e] of m) if (!e.dirty) { m.delete(k); entries-- }
        if (m.size === 0) byCompany.delete(company)
      }
    }
  }

  const api: Deliveries = {
    /** The GET path: one map lookup and a few field writes; no store access, no promise. */
    record (companyId: string, siteId: string, targetDate: string, emittedAtMs: number, status: 200 | 304, atMs: number, pairKey = pairKeyOf(siteId, targetDate)): void {
      let m = byCompany.get(companyId)
      if (m === undefined) byCompany.set(companyId, m = new Map())
      const key = pairKey
      const e = m.get(key)
      if (e === undefined) {
        const fresh: Entry = { companyId, siteId, targetDate, emittedAtMs, atMs, status, dirty: true }
        m.set(key, fresh)
        entries++
        dirty.push(fresh)
        return
      }
      e.emittedAtMs = emittedAtMs
      e.atMs = atMs
      e.status = status
      if (!e.dirty) { e.dirty = true; dirty.push(e) }
    },

    /** Writes the receipts changed since the last flush (one durable write); never rejects. */
    flush (): Promise<void> {
      flushing = flushing.then(writeDirty)
      return flushing
    },

    /** Flushes every `flushMs` until `close()`. */
    start (): void {
      timer ??= setInterval(() => { void api.flush() }, opts.flushMs ?? 5000)
      timer.unref()
    },

    /** The receipts of a day (of one company), flushed ones and those still in memory. */
    list (targetDate: string, companyId?: string): DeliveryReceipt[] {
      const out = new Map<string, DeliveryReceipt>()
      const range = companyId === undefined
        ? { start: [targetDate], end: [targetDate + '\uffff'] }
        : { start: [targetDate, companyId], end: [targetDate, companyId + '\uffff'] }
      for (const { key, value } of db.getRange(range)) {
        if (!Array.isArray(key)) continue
        const [, c, siteId] = key as [string, string, string]
        out.set(`${c}/${siteId}`, { companyId: c, siteId, targetDate, emittedAtMs: value.e, atMs: value.a, status: value.s })
      }
      for (const e of dirty) {
        if (e.targetDate !== targetDate || (companyId !== undefined && e.companyId !== companyId)) continue
        out.set(`${e.companyId}/${e.siteId}`, { companyId: e.companyId, siteId: e.siteId, targetDate, emittedAtMs: e.emittedAtMs, atMs: e.atMs, status: e.status })
      }
      return [...out.values()]
    },

    /** Latest fetch instant (ms) per company among the receipts in memory, for the metrics. */
    lastFetchByCompany (): Map<string, number> {
      const out = new Map<string, number>()
      for (const [company, m] of byCompany) {
        let latest = 0
        for (const e of m.values()) if (e.atMs > latest) latest = e.atMs
        out.set(company, latest)
      }
      return out
    },

    /** Removes the receipts of days before `beforeDate` (retention); resolves to their count. */
    async prune (beforeDate: string): Promise<number> {
      const keys = [...db.getKeys({ start: [''], end: [beforeDate] })].filter(Array.isArray)
      if (keys.length) await store.writeDurable(() => { for (const k of keys) db.removeSync(k) })
      for (const m of byCompany.values()) {
        for (const [k, e] of m) if (e.targetDate < beforeDate && !e.dirty) { m.delete(k); entries-- }
      }
      return keys.length
    },

    /** Stops the timer and writes what is left. */
    async close (): Promise<void> {
      if (timer) clearInterval(timer)
      timer = undefined
      await api.flush()
    },
  }
  return api
}
