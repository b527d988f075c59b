/**
 * Metered energy (docs/http-api.md "Programme against delivery"): what each site drew per
 * quarter-hour, as the host reports it (`EpxHandle.reportMetering`). Not the delivery
 * receipts of `deliveries.ts` (which BSP fetched which Besoins_Agreges revision).
 *
 * One record per (target_date, site_id), keyed so: the day's quarter-hours as float64 kWh,
 * NaN where no value was reported. A reading replaces the value of its slot (late meter data
 * and corrections). The realisation read (`apply/realisation.ts`) is one get.
 *
 * A day of 10,000 sites × 96 slots reaches the host call at once: it is checked in chunks,
 * gathered per site and day, then written in batches of site-days, each one durable write,
 * with a turn of the event loop between chunks and batches, so the solver's loop never
 * waits for more than one of them.
 * @module
 */
import type { Store } from './open-store.ts'
import type { MeterReading, MeteringReport } from '../host/contract.ts'
import { isPrm } from '../contract/ids.ts'
import { utcInstantMs } from '../contract/instants.ts'
import { addDays, parisDateOf, parisDayMs } from '../contract/paris-day.ts'

const SLOT_MS = 900_000
/** Readings checked per turn of the event loop: a few ms of the solver's thread (bench/README.md). */
const CHUNK = 2048
/** Site-days written per durable write: a few ms of reads and puts in its transaction. */
const WRITE_BATCH = 128
/** Most refusals listed in a report (their count is always exact). */
const MAX_REFUSALS_LISTED = 100

export interface MeteredDay {
  /** kWh per quarter-hour of the day, NaN where none was reported. */
  readonly kwh: Float64Array
}

export interface Metering {
  /**
   * Takes readings of today or earlier days (slots that have closed, within retention);
   * resolves once they are durable. Reports run one after the other, in call order, so a
   * later report's value of a slot wins.
   */
  report(readings: readonly MeterReading[]): Promise<MeteringReport>
  /** The metered day of a site (sync read), undefined when nothing was reported. */
  get(targetDate: string, siteId: string): MeteredDay | undefined
  /** The sites metered on a day, in order. */
  sitesOf(targetDate: string): string[]
  /** Removes the days before `beforeDate` (retention); resolves to their count. */
  prune(beforeDate: string): Promise<number>
}

export interface MeteringOptions {
  readonly now: () => number
  /** Days kept: an older reading is refused (it would be pruned at once). */
  readonly retentionDays: number
  /** Told after each chunk is durable: which (day, site) changed. */
  readonly onChanged?: (changed: ReadonlyArray<{ targetDate: string; siteId: string }>) => void
}

export function openMetering (store: Store, opts: MeteringOptions): Metering {
  const db = store.db<Uint8Array>('metering', { binary: true })
  let tail: Promise<unknown> = Promise.resolve()

  const read = (targetDate: string, siteId: string): Float64Array | undefined => {
    const bytes = db.get([targetDate, siteId])
    if (!bytes) return undefined
    // A copy: LMDB's buffer is valid only until the next read.
    const out = new Float64Array(bytes.byteLength / 8)
    new Uint8Array(out.buffer).set(bytes)
    return out
  }

  async function run (readings: readonly MeterReading[]): Promise<MeteringReport> {
    const refused: Array<MeteringReport['refused'][number]> = []
    let refusedCount = 0
    let accepted = 0
    const nowMs = opts.now()
    const oldest = addDays(parisDateOf(new Date(nowMs)), -opts.retentionDays)
    // Gathered per (day, site) first: readings come slot by slot across the sites, and
    // writing as they come rewrote each site's record once per slot (96 puts where one does).
    // Day → site → kWh per slot (NaN: not in this report); no key or object made per reading.
    const days = new Map<string, Map<string, Float64Array>>()
    for (let from = 0; from < readings.length; from += CHUNK) {
      if (from > 0) await new Promise(resolve => setImmediate(resolve))
      const to = Math.min(readings.length, from + CHUNK)
      for (let i = from; i < to; i++) {
        const r = readings[i]!
        const slot = check(r, nowMs, oldest)
        if (typeof slot === 'string') {
          if (refused.length < MAX_REFUSALS_LISTED) refused.push({ index: i, siteId: String(r?.siteId), startUtc: String(r?.startUtc), reason: slot })
          refusedCount++
          continue
        }
        let sites = days.get(lastDay.date)
        if (!sites) days.set(lastDay.date, sites = new Map())
        let kwh = sites.get(r.siteId)
        if (!kwh) sites.set(r.siteId, kwh = new Float64Array((lastDay.endMs - lastDay.startMs) / SLOT_MS).fill(NaN))
        kwh[slot] = r.kwh   // the call's last reading of a slot wins
        accepted++
      }
    }
    const all: Array<{ targetDate: string; siteId: string; kwh: Float64Array }> = []
    for (const [targetDate, sites] of days) for (const [siteId, kwh] of sites) all.push({ targetDate, siteId, kwh })
    for (let from = 0; from < all.length; from += WRITE_BATCH) {
      if (from > 0) await new Promise(resolve => setImmediate(resolve))
      const batch = all.slice(from, from + WRITE_BATCH)
      await store.writeDurable(() => {
        for (const d of batch) {
          const kwh = read(d.targetDate, d.siteId) ?? new Float64Array(d.kwh.length).fill(NaN)
          for (let k = 0; k < d.kwh.length; k++) if (!Number.isNaN(d.kwh[k]!)) kwh[k] = d.kwh[k]!
          db.putSync([d.targetDate, d.siteId], new Uint8Array(kwh.buffer))
        }
      })
      opts.onChanged?.(batch.map(d => ({ targetDate: d.targetDate, siteId: d.siteId })))
    }
    return { accepted, refusedCount, refused }
  }

  return {
    report (readings) {
      const done = tail.then(() => run(readings))
      tail = done.catch(() => {})
      return done
    },
    get (targetDate, siteId) {
      const kwh = read(targetDate, siteId)
      return kwh && { kwh }
    },
    sitesOf (targetDate) {
      const out: string[] = []
      for (const key of db.getKeys({ start: [targetDate], end: [targetDate, '\uffff'] })) out.push((key as [string, string])[1])
      return out
    },
    async prune (beforeDate) {
      const keys = [...db.getKeys({ end: [beforeDate] })]
      if (keys.length) await store.writeDurable(() => { for (const k of keys) db.removeSync(k) })
      return keys.length
    },
  }
}

/** Why a reading is refused, or its slot index in its Paris day (then `lastDay`). */
function check (r: MeterReading, nowMs: number, oldest: string): string | number {
  if (r === null || typeof r !== 'object') return 'a reading is an object {siteId, startUtc, endUtc, kwh}'
  if (!isPrm(r.siteId)) return 'siteId must be PRM followed by 14 digits'
  const startMs = utcInstantMs(r.startUtc)
  const endMs = utcInstantMs(r.endUtc)
  if (!Number.isFinite(startMs) || !Number.isFinite(endMs)) return 'startUtc and endUtc must be ISO 8601 UTC instants'
  if (startMs % SLOT_MS !== 0 || endMs - startMs !== SLOT_MS) return 'a reading covers one quarter-hour: startUtc on HH:00, HH:15, HH:30 or HH:45 and endUtc 15 minutes later'
  if (typeof r.kwh !== 'number' || !Number.isFinite(r.kwh) || r.kwh < 0) return 'kwh must be a finite number ≥ 0'
  if (endMs > nowMs) return 'the quarter-hour has not closed yet'
  const day = dayOf(startMs)
  if (day.date < oldest) return `the day ${day.date} is past the retention of meter values`
  return (startMs - day.startMs) / SLOT_MS
}

/** The Paris day of an instant: readings come day by day, so the last one found is nearly always it. */
let lastDay = { date: '', startMs: 0, endMs: 0 }
function dayOf (ms: number): { readonly date: string; readonly startMs: number; readonly endMs: number } {
  if (ms >= lastDay.startMs && ms < lastDay.endMs) return lastDay
  const date = parisDateOf(new Date(ms))
  return lastDay = { date, ...parisDayMs(date) }
}
