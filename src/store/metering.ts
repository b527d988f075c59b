/**
 * Metered energy (docs/http-api.md "Programme against delivery"): what each site drew per
 * quarter-hour, as the host reports it (`EpxHandle.reportMetering`). Not the delivery
 * receipts of `deliveries.ts` (which BSP fetched which Besoins_Agreges revision).
 *
 * One record per (target_date, site_id), keyed so: the day's quarter-hours as float64 kWh,
 * NaN where no value was reported. A reading replaces the value of its slot (late meter data
 * and corrections). The realisation read (`apply/realisation.ts`) is one get.
 *
 * A day of 10,000 sites × 96 slots (960,000 readings) may reach the host call at once. The
 * call copies the array (references only: a few ms) so the host may reuse its own at once;
 * then the readings are checked and gathered per site and day in slices of a few ms of the
 * solver's thread, and written in batches of site-days, each one durable write, with a turn
 * of the event loop between slices and batches: the loop never waits for more than one of
 * them (bench/README.md#programme-against-delivery). No object is made per reading.
 * @module
 */
import type { Store } from './open-store.ts'
import type { MeterReading, MeteringReport } from '../host/contract.ts'
import { isPrm } from '../contract/ids.ts'
import { utcInstantMs } from '../contract/instants.ts'
import { addDays, parisDateOf, parisDayMs } from '../contract/paris-day.ts'
import { storeUnavailable } from './open-store.ts'
import { openTenure } from './tenure.ts'
import { openEvents } from './events.ts'

const SLOT_MS = 900_000
/** The solver's thread given to one slice of checking before a turn of its event loop. */
const SLICE_MS = 4
/** Readings checked between two looks at the clock. */
const CLOCK_EVERY = 256
/** Site-days written per durable write: ~1–2 ms of reads and puts in its transaction. */
const WRITE_BATCH = 128
/** Most refusals listed in a report (their count is always exact). */
const MAX_REFUSALS_LISTED = 100

const nextTurn = () => new Promise<void>(resolve => setImmediate(resolve))

export interface MeteredDay {
  /** kWh per quarter-hour of the day, NaN where none was reported. */
  readonly kwh: Float64Array
}

export interface Metering {
  /**
   * Takes readings of today or earlier days (slots that have closed, within retention);
   * resolves once they are durable. Reports run one after the other, in call order, so a
   * later report's value of a slot wins. The array is copied when called; the readings
   * themselves are read over the following turns and must not change until it resolves.
   * After `close()`, refused with NO_STORE.
   */
  report(readings: readonly MeterReading[]): Promise<MeteringReport>
  /** The metered day of a site (sync read), undefined when nothing was reported. */
  get(targetDate: string, siteId: string): MeteredDay | undefined
  /**
   * True when the stored day of a site is exactly `kwh` (both absent when undefined): what a
   * cached answer was built from is still what is stored. One read, no copy.
   */
  unchanged(targetDate: string, siteId: string, kwh: Float64Array | undefined): boolean
  /** The sites metered on a day, in order. */
  sitesOf(targetDate: string): string[]
  /** Removes the days before `beforeDate` (retention); resolves to their count. */
  prune(beforeDate: string): Promise<number>
  /**
   * Refuses new reports; resolves once those already called are durable (or refused by the
   * store), so nothing a resolved or pending report took is half-written.
   */
  close(): Promise<void>
}

export interface MeteringOptions {
  readonly now: () => number
  /** Days kept: an older reading is refused (it would be pruned at once). */
  readonly retentionDays: number
  /** Told after each batch is durable: which (day, site) changed. */
  readonly onChanged?: (changed: ReadonlyArray<{ targetDate: string; siteId: string }>) => void
  /**
   * This handle tells the `realise.modifie` events owed (DECISIONS.md "Events for BSPs": at
   * most one per site and day every 5 minutes) when they come due, those of a former run
   * included: the handle that takes the host's reports (plugin.ts).
   */
  readonly tellsOwed?: boolean
}

export function openMetering (store: Store, opts: MeteringOptions): Metering {
  const db = store.db<Uint8Array>('metering', { binary: true })
  let tail: Promise<unknown> = Promise.resolve()
  let closed = false
  const tenure = openTenure(store)
  const events = openEvents(store)
  /** The one timer of the next owed event: set for when it is due, not a poll. */
  let owedTimer: NodeJS.Timeout | undefined
  const tellOwedLater = (): void => {
    if (!opts.tellsOwed || closed) return
    let due: number | undefined
    try { due = events.nextOwedMs() } catch { return }   // the store cannot answer: the next report tries again
    if (due === undefined) return
    clearTimeout(owedTimer)
    owedTimer = setTimeout(() => {
      owedTimer = undefined
      tail = tail.then(() => events.flushOwed(opts.now())).catch(() => {}).then(tellOwedLater)
    }, Math.max(0, due - opts.now()))
    owedTimer.unref()
  }
  /** Inside the write: the companies that may read a changed quarter-hour of each site's day (its holders then). */
  const announce = (batch: ReadonlyArray<{ targetDate: string; siteId: string; kwh: Float64Array }>, nowMs: number): void => {
    const changed: Array<{ companyId: string; siteId: string; targetDate: string }> = []
    for (const d of batch) {
      const { startMs, endMs } = parisDayMs(d.targetDate)
      for (const h of tenure.holdersDuring(d.siteId, startMs, endMs)) {
        const from = Math.max(0, Math.ceil((h.fromMs - startMs) / SLOT_MS))
        const to = Math.min(d.kwh.length, Math.ceil((h.untilMs - startMs) / SLOT_MS))
        for (let k = from; k < to; k++) {
          if (!Number.isNaN(d.kwh[k]!)) { changed.push({ companyId: h.companyId, siteId: d.siteId, targetDate: d.targetDate }); break }
        }
      }
    }
    events.realiseChangedSync(changed, nowMs)
  }
  tellOwedLater()

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
    const slots = new SlotReader(nowMs, oldest)
    let sites: Map<string, Float64Array> | undefined
    let sitesDay = ''
    let deadline = performance.now() + SLICE_MS
    for (let i = 0; i < readings.length; i++) {
      if (i % CLOCK_EVERY === 0 && i > 0 && performance.now() > deadline) {
        await nextTurn()
        deadline = performance.now() + SLICE_MS
      }
      const r = readings[i]!
      const slot = slots.check(r)
      let kwh: Float64Array | undefined
      let why = typeof slot === 'string' ? slot : undefined
      if (why === undefined) {
        const day = slots.day
        if (day.date !== sitesDay) {
          sitesDay = day.date
          sites = days.get(sitesDay)
          if (!sites) days.set(sitesDay, sites = new Map())
        }
        kwh = sites!.get(r.siteId)
        // A site is checked once per report and day, when first seen: the map holds checked ones only.
        if (!kwh) {
          if (isPrm(r.siteId)) sites!.set(r.siteId, kwh = new Float64Array((day.endMs - day.startMs) / SLOT_MS).fill(NaN))
          else why = 'siteId must be PRM followed by 14 digits'
        }
      }
      if (why !== undefined) {
        if (refused.length < MAX_REFUSALS_LISTED) refused.push({ index: i, siteId: String(r?.siteId), startUtc: String(r?.startUtc), reason: why })
        refusedCount++
        continue
      }
      kwh![slot as number] = r.kwh   // the call's last reading of a slot wins
      accepted++
    }
    const all: Array<{ targetDate: string; siteId: string; kwh: Float64Array }> = []
    for (const [targetDate, sites] of days) for (const [siteId, kwh] of sites) all.push({ targetDate, siteId, kwh })
    days.clear()
    for (let from = 0; from < all.length; from += WRITE_BATCH) {
      await nextTurn()
      const batch = all.slice(from, from + WRITE_BATCH)
      await store.writeDurable(() => {
        for (const d of batch) {
          const kwh = read(d.targetDate, d.siteId) ?? new Float64Array(d.kwh.length).fill(NaN)
          for (let k = 0; k < d.kwh.length; k++) if (!Number.isNaN(d.kwh[k]!)) kwh[k] = d.kwh[k]!
          db.putSync([d.targetDate, d.siteId], new Uint8Array(kwh.buffer))
        }
        announce(batch, nowMs)
      })
      opts.onChanged?.(batch.map(d => ({ targetDate: d.targetDate, siteId: d.siteId })))
    }
    tellOwedLater()
    return { accepted, refusedCount, refused }
  }

  return {
    report (readings) {
      if (closed) return Promise.reject(storeUnavailable())
      if (!Array.isArray(readings)) return Promise.reject(new TypeError('reportMetering takes an array of readings {siteId, startUtc, endUtc, kwh}'))
      // A copy of the references, now: the host may empty or refill its array once the call returns.
      const taken = readings.slice() as readonly MeterReading[]
      const done = tail.then(() => run(taken))
      tail = done.catch(() => {})
      return done
    },
    get (targetDate, siteId) {
      const kwh = read(targetDate, siteId)
      return kwh && { kwh }
    },
    unchanged (targetDate, siteId, kwh) {
      return db.equalsStored([targetDate, siteId], kwh && new Uint8Array(kwh.buffer, kwh.byteOffset, kwh.byteLength))
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
    async close () {
      closed = true
      clearTimeout(owedTimer)
      await tail
    },
  }
}

/**
 * Checks readings one after the other. Readings come slot by slot (or site by site): the
 * instants of the reading before are nearly always those of this one, so each distinct
 * string is read once, and the Paris day of the last slot is kept.
 */
class SlotReader {
  day = { date: '', startMs: 0, endMs: 0 }
  #startText: unknown = undefined
  #startMs = NaN
  #endText: unknown = undefined
  #endMs = NaN

  constructor (private readonly nowMs: number, private readonly oldest: string) {}

  /** Why a reading is refused, or its slot index in its Paris day (then `day`). */
  check (r: MeterReading): string | number {
    if (r === null || typeof r !== 'object') return 'a reading is an object {siteId, startUtc, endUtc, kwh}'
    if (typeof r.siteId !== 'string') return 'siteId must be PRM followed by 14 digits'
    if (r.startUtc !== this.#startText) { this.#startText = r.startUtc; this.#startMs = utcInstantMs(r.startUtc) }
    if (r.endUtc !== this.#endText) { this.#endText = r.endUtc; this.#endMs = utcInstantMs(r.endUtc) }
    const startMs = this.#startMs
    const endMs = this.#endMs
    if (!Number.isFinite(startMs) || !Number.isFinite(endMs)) return 'startUtc and endUtc must be ISO 8601 UTC instants'
    if (startMs % SLOT_MS !== 0 || endMs - startMs !== SLOT_MS) return 'a reading covers one quarter-hour: startUtc on HH:00, HH:15, HH:30 or HH:45 and endUtc 15 minutes later'
    const kwh = r.kwh
    if (typeof kwh !== 'number' || !Number.isFinite(kwh) || kwh < 0) return 'kwh must be a finite number ≥ 0'
    if (endMs > this.nowMs) return 'the quarter-hour has not closed yet'
    if (startMs < this.day.startMs || startMs >= this.day.endMs) {
      const date = parisDateOf(new Date(startMs))
      this.day = { date, ...parisDayMs(date) }
    }
    if (this.day.date < this.oldest) return `the day ${this.day.date} is past the retention of meter values`
    return (startMs - this.day.startMs) / SLOT_MS
  }
}
