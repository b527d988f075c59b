/**
 * What each company has had accepted per Paris day, in bytes of programmes (DECISIONS.md
 * "Rate limits and quotas": the storage quota). One small record per company and day,
 * written by `charge` inside the durable write that saves the programme: the count and
 * the programme land together or not at all, survive a restart, and with PostgreSQL are
 * one count in the database for every instance (a write batch runs under the database's
 * write lock, on a replica caught up first: `postgres/write-batch.ts`). The rule that
 * reads it (the limit, the 429) is `apply/quota.ts`.
 * @module
 */
import type { Store } from './open-store.ts'

/** Stored under [date, companyId]: bytes and programmes accepted that day. */
interface Stored { readonly b: number; readonly n: number }

/** A company's use of one Paris day. */
export interface DayUse {
  /** Bytes of programmes accepted (their bodies as received). */
  readonly bytes: number
  /** Programmes accepted. */
  readonly programmes: number
}

const NOTHING: DayUse = { bytes: 0, programmes: 0 }

export interface QuotaUses {
  /** The company's use of `date` (sync read; nothing yet: zero). */
  useOf(companyId: string, date: string): DayUse
  /** Every company's use of `date`, by company (the metrics). */
  usesOn(date: string): Map<string, DayUse>
  /**
   * Inside `writeDurable` only: adds a programme of `bytes` to the company's day, unless
   * the day's bytes would then be over `limit`. The use before it, and whether it was added.
   */
  charge(companyId: string, date: string, bytes: number, limit: number): { readonly before: DayUse; readonly added: boolean }
  /** Removes the days before `beforeDate` (retention, with the instructions); resolves to how many records. */
  prune(beforeDate: string): Promise<number>
}

export function openQuotaUses (store: Store): QuotaUses {
  const db = store.db<Stored>('quota')
  const useOf = (companyId: string, date: string): DayUse => {
    const s = db.get([date, companyId])
    return s ? { bytes: s.b, programmes: s.n } : NOTHING
  }
  return {
    useOf,
    usesOn (date) {
      const out = new Map<string, DayUse>()
      for (const { key, value } of db.getRange({ start: [date], end: [date, '\uffff'] })) {
        out.set((key as [string, string])[1], { bytes: value.b, programmes: value.n })
      }
      return out
    },
    charge (companyId, date, bytes, limit) {
      const before = useOf(companyId, date)
      if (before.bytes + bytes > limit) return { before, added: false }
      db.putSync([date, companyId], { b: before.bytes + bytes, n: before.programmes + 1 })
      return { before, added: true }
    },
    async prune (beforeDate) {
      const keys = [...db.getKeys({ end: [beforeDate] })]
      if (keys.length) await store.writeDurable(() => { for (const k of keys) db.removeSync(k) })
      return keys.length
    },
  }
}
