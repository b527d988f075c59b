/**
 * The storage quota (DECISIONS.md "Rate limits and quotas"): the bytes of programmes a
 * company may have accepted in a Paris day, the day of reception
 * (`inbound.maxBytesPerCompanyPerDay`, or the company's own). A BSP's bug never fills the
 * solver's disk.
 *
 * What is decided here:
 * - the bytes counted are the body's, as received, of each programme accepted (202); a
 *   refused one costs nothing, a programme sent again costs again (it is written again);
 * - a programme that would cross the quota is refused whole, 429 QUOTA_EXCEEDED: nothing
 *   of it is written (the check and the count are in the transaction that saves it,
 *   `store/quota.ts`); one that lands exactly on the quota is accepted;
 * - a POST is refused before its body is read when the day's quota is used up, or when
 *   its Content-Length alone would cross it (as a POST over its request budget is);
 * - `Retry-After` is the seconds until the next Paris day, when the count starts afresh.
 * @module
 */
import type { Caller } from '../auth/caller.ts'
import { parisDateOf, parisDayMs } from '../contract/paris-day.ts'
import { EpxError } from '../errors.ts'
import { readFailure, type Store } from '../store/open-store.ts'
import { openQuotaUses, type DayUse, type QuotaUses } from '../store/quota.ts'

/** A company's quota of one day, as `epx company show`, the console and the metrics say it. */
export interface QuotaDay {
  /** The Paris day counted (`YYYY-MM-DD`). */
  readonly date: string
  readonly used: DayUse
  /** Bytes a day: the company's own, or the configuration's. */
  readonly limit: number
  /** Whether the limit is the company's own. */
  readonly own: boolean
  /** When the next day's count starts (the Paris midnight), ms. */
  readonly resetsAtMs: number
}

export interface StorageQuota {
  /** The record of every company's use (metrics, retention). */
  readonly uses: QuotaUses
  /** The bytes a day `company` may have accepted: its own quota, else the configuration's. */
  limitOf(company: { readonly quotaBytesPerDay?: number }): number
  /** The company's use of the day of `now` against its quota (a sync read). */
  dayOf(company: { readonly id: string; readonly quotaBytesPerDay?: number }, now: Date): QuotaDay
  /**
   * Before the body is read: throws QUOTA_EXCEEDED when the caller's day is used up, or
   * when the `declared` Content-Length alone would cross it (undefined: not known yet).
   */
  beforeBody(caller: Caller, declared: number | undefined, at: Date): void
  /**
   * Inside the durable write that saves an accepted programme of `bytes`: counts it, or
   * returns QUOTA_EXCEEDED (nothing counted) when it would cross the caller's quota.
   */
  charge(caller: Caller, bytes: number, at: Date): EpxError | undefined
}

/** The Paris day of an instant, kept: most calls fall in the day of the one before. */
class DayOf {
  #date = ''
  #startMs = 0
  #endMs = 0
  at (ms: number): { date: string; endMs: number } {
    if (!(ms >= this.#startMs && ms < this.#endMs)) {
      this.#date = parisDateOf(new Date(ms))
      const span = parisDayMs(this.#date)
      this.#startMs = span.startMs
      this.#endMs = span.endMs
    }
    return { date: this.#date, endMs: this.#endMs }
  }
}

export function storageQuota (store: Store, defaultBytes: number): StorageQuota {
  const uses = openQuotaUses(store)
  const days = new DayOf()
  const limitOf = (c: { readonly quotaBytesPerDay?: number }) => c.quotaBytesPerDay ?? defaultBytes
  const exceeded = (caller: Caller, used: number, date: string, endMs: number, atMs: number, thisOne: string) => {
    const retryAfter = Math.max(1, Math.ceil((endMs - atMs) / 1000))
    return new EpxError('QUOTA_EXCEEDED', [caller.companyId, bytesText(limitOf(caller)), bytesText(used), date, thisOne, new Date(endMs).toISOString(), retryAfter])
  }
  return {
    uses,
    limitOf,
    dayOf (company, now) {
      const { date, endMs } = days.at(now.getTime())
      return { date, used: uses.useOf(company.id, date), limit: limitOf(company), own: company.quotaBytesPerDay !== undefined, resetsAtMs: endMs }
    },
    beforeBody (caller, declared, at) {
      const atMs = at.getTime()
      const { date, endMs } = days.at(atMs)
      // Not `readStore(() => …)`: a closure made per POST is compiled again and again (with-resolvers.ts).
      let used: number
      try { used = uses.useOf(caller.companyId, date).bytes } catch (err) { throw readFailure(err) }
      const limit = limitOf(caller)
      if (used >= limit) throw exceeded(caller, used, date, endMs, atMs, '')
      if (declared !== undefined && used + declared > limit) throw exceeded(caller, used, date, endMs, atMs, `, and this programme's ${bytesText(declared)} would cross it`)
    },
    charge (caller, bytes, at) {
      const atMs = at.getTime()
      const { date, endMs } = days.at(atMs)
      const { before, added } = uses.charge(caller.companyId, date, bytes, limitOf(caller))
      return added ? undefined : exceeded(caller, before.bytes, date, endMs, atMs, `, and this programme's ${bytesText(bytes)} would cross it`)
    },
  }
}

/** `1234 bytes`, with KiB, MiB or GiB beside it from 1 KiB on: what an operator reads at a glance. */
export function bytesText (n: number): string {
  const units = [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const
  const unit = units.find(([, size]) => n >= size)
  if (!unit) return `${n} bytes`
  const v = n / unit[1]
  return `${n} bytes (${Number.isInteger(v) ? v : v.toFixed(1)} ${unit[0]})`
}
