/**
 * The rules of a Programme_Soutirage beyond its per-field schema (DECISIONS.md
 * "Inbound"): unique sites, the caller's perimeter, slot instants on the 900 s grid,
 * slot length, the target day's Europe/Paris coverage (a day that has no quarter-hour
 * grid is refused), order without overlap, (by configuration) no gaps, and what cannot
 * be honoured: an emitted_at ahead of the server's clock, a day over or too far ahead, a
 * site the solver does not manage, a slot's power above the sanity bound. Each
 * rule is stated once, below; violations are collected as `{ JSON Pointer: message }`.
 * @module
 */
import { addDays, coverageOf, LONGEST_DAY_SECS, parisDateOf, parisDayMs, QUARTER_HOUR_MS } from './paris-day.ts'
import { formatUtcInstant, readUtcInstant, utcInstantMs, type Instant } from './instants.ts'
import { instantText } from './instant-text.ts'
import { isPrm } from './ids.ts'
import { BoundedCache } from '../bounded-cache.ts'

/** DECISIONS.md "Inbound": at most 100 violations are reported (a full list says "or more"). */
export const MAX_DETAILS = 100

/** Violations keyed by RFC 6901 JSON Pointer; the first message at a pointer wins. */
export class Details {
  readonly #map = new Map<string, string>()
  get size (): number { return this.#map.size }
  get full (): boolean { return this.#map.size >= MAX_DETAILS }
  add (pointer: string, message: string): void {
    if (!this.full && !this.#map.has(pointer)) this.#map.set(pointer, message)
  }
  toObject (): Record<string, string> {
    // A null-prototype object: a pointer such as "/__proto__" stays a plain key.
    const out: Record<string, string> = Object.create(null)
    for (const [k, v] of this.#map) out[k] = v
    return out
  }
}

export interface RuleOptions {
  /** Whether the caller may program this site (its perimeter). */
  readonly allowed: (siteId: string) => boolean
  /** `inbound.requireContiguous`: gaps between slots are rejected too. */
  readonly requireContiguous: boolean
  /**
   * What cannot be honoured (DECISIONS.md "Inbound"), checked when `nowMs` (the server's
   * clock at reception) is given: an emitted_at more than `maxClockSkewSeconds` ahead,
   * a target_date before today (Europe/Paris) or after today + `maxDaysAhead`.
   */
  readonly nowMs?: number
  readonly maxClockSkewSeconds?: number
  readonly maxDaysAhead?: number
  /** Whose clock `nowMs` is, as messages name it (default "this server's clock"; the BSP client checks against its own). */
  readonly clockName?: string
  /** False: `nowMs` checks emitted_at only (the BSP client: which days are open is the server's to say). */
  readonly checkTargetDate?: boolean
  /** Whether the solver manages a site (the host's `sites()`); unset, not checked. */
  readonly managed?: (siteId: string) => boolean
  /** `inbound.maxSiteKw`: the sanity bound of a slot's power (default DEFAULT_MAX_SITE_KW). */
  readonly maxSiteKw?: number
}

/** `inbound.maxClockSkewSeconds` and `inbound.maxDaysAhead` by default (config-schema.ts). */
export const DEFAULT_MAX_CLOCK_SKEW_SECONDS = 300
export const DEFAULT_MAX_DAYS_AHEAD = 7
/** `inbound.maxSiteKw` by default (DECISIONS.md "Inbound", sanity bound). */
export const DEFAULT_MAX_SITE_KW = 100_000

/** The slots of a programme read while checking it, for the instructions to be built from. */
// load-bearing: POST 1 × 96 and POST 100 × 96, parallel Float64Arrays, not an object per slot; no figure of its own (bench/README.md#where-post-1--96-goes-e-against-c)
export interface CheckedSlots {
  /** At the precision sent (DECISIONS.md "Time"): it names and orders the instructions. */
  readonly emittedAt: Instant
  /** All slots of all sites in body order: start instant (ms since the epoch), energy (kWh). */
  readonly starts: Float64Array
  readonly kwh: Float64Array
  /** Site i's slots are `[slotEnds[i - 1] ?? 0, slotEnds[i])`. */
  readonly slotEnds: Uint32Array
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * Adds every cross-field violation of `body` to `details`. It reads the body
 * defensively: a field the schema refuses is skipped here, so each problem is
 * reported once, where it is. Returns the slots (meaningful only when no violation).
 */
export function checkProgrammeRules (body: unknown, opts: RuleOptions, details: Details): CheckedSlots | undefined {
  if (!isObj(body) || !Array.isArray(body.sites)) return undefined
  const sites = body.sites as unknown[]
  const duration = body.slot_duration_secs
  // 0 when slot_duration_secs is invalid (the schema reports it): no length check then.
  const durationMs = Number.isInteger(duration) && (duration as number) > 0 && (duration as number) % 900 === 0 &&
    (duration as number) <= LONGEST_DAY_SECS
    ? (duration as number) * 1000
    : 0
  const day = dayOf(body.target_date)
  if (day?.offGrid) details.add('/target_date', day.offGrid)
  // NaN (no usable day): every comparison below is false, nothing more is reported.
  const dayStartMs = day && !day.offGrid ? day.startMs : NaN
  const dayEndMs = day && !day.offGrid ? day.endMs : NaN
  if (opts.nowMs !== undefined) checkTimeliness(body, day, opts, details)
  // The sanity bound, one comparison a slot: power as `apply/to-constraints.ts` `powerKw`
  // computes it, so what passes here is a finite floor there. NaN (no valid duration): never above.
  const slotSecs = durationMs > 0 ? durationMs / 1000 : NaN
  const maxKw = opts.maxSiteKw ?? DEFAULT_MAX_SITE_KW

  let total = 0
  for (const site of sites) if (isObj(site) && Array.isArray(site.energie_programmee)) total += site.energie_programmee.length
  // One backing store for both: each typed array over 8 numbers has its own outside V8's
  // heap, ~1 µs of CPU to make and free (bench/README.md#where-post-1--96-goes-e-against-c).
  const both = new ArrayBuffer(16 * total)
  const starts = new Float64Array(both, 0, total)
  const kwh = new Float64Array(both, 8 * total, total)
  const slotEnds = new Uint32Array(sites.length)
  const firstIndexOf = new Map<string, number>()
  let n = 0

  for (let i = 0; i < sites.length && !details.full; i++) {
    const site = sites[i]
    slotEnds[i] = n
    if (!isObj(site)) continue
    const at = `/sites/${i}`
    const id = site.site_id
    if (isPrm(id)) {
      const first = firstIndexOf.get(id)
      if (first !== undefined) {
        details.add(`${at}/site_id`, `site ${id} appears twice (also at /sites/${first}); send each site once per programme`)
      } else {
        firstIndexOf.set(id, i)
        // 400, not 403: the contract's inbound codes stay those of §7.2 (DECISIONS.md).
        if (!opts.allowed(id)) {
          details.add(`${at}/site_id`, `site ${id} is outside your company's perimeter; remove it, or ask the service to add it to your perimeter`)
        } else if (opts.managed && !opts.managed(id)) {
          details.add(`${at}/site_id`, `site ${id} is not managed by this service's solver: no programme for it can be applied; check the site_id (the sites served are those whose Besoins_Agreges you can read)`)
        }
      }
    }
    const slots = site.energie_programmee
    if (!Array.isArray(slots)) continue
    // Instants are numbers, NaN when absent or unreadable (never undefined): the loop's
    // doubles then stay unboxed, no heap number per slot.
    let prevEnd = NaN                            // latest end among the slots read so far
    let prevEndText: string | undefined          // … as the sender spelled it
    // Pointers are built only for a violation (`slotPointer`): a valid slot costs two instant reads.
    for (let j = 0; j < slots.length && !details.full; j++) {
      const slot = slots[j]
      if (!isObj(slot)) continue
      // Fast paths, same answers: a slot usually starts where the previous one ended,
      // and ends slot_duration_secs later, spelled canonically; then nothing is parsed.
      const start = prevEndText !== undefined && slot.debut_utc === prevEndText
        ? prevEnd
        : slotInstant(slot.debut_utc, at, j, 'debut_utc', details)
      const end = start === start && durationMs > 0 && slot.fin_utc === instantText(start + durationMs)
        ? start + durationMs
        : slotInstant(slot.fin_utc, at, j, 'fin_utc', details)
      const energy = slot.energie_kwh
      if (typeof energy === 'number') {
        starts[n] = start
        kwh[n] = energy
        if (energy * 3600 / slotSecs > maxKw) details.add(slotPointer(at, j, 'energie_kwh'), overBound(energy, slotSecs, maxKw))
      }
      n++
      if (start !== start || end !== end) continue   // NaN: already reported
      if (durationMs > 0 && end - start !== durationMs) {
        details.add(slotPointer(at, j, 'fin_utc'), `must be debut_utc + slot_duration_secs (${durationMs / 1000} s), i.e. ${formatUtcInstant(start + durationMs)}; got ${slot.fin_utc as string}`)
      }
      // Against NaN (no valid target day) every comparison is false: nothing to report.
      if (start < dayStartMs || start >= dayEndMs) {
        details.add(slotPointer(at, j, 'debut_utc'), `slot outside the target day: ${day!.text}; got ${slot.debut_utc as string}`)
      } else if (end > dayEndMs) {
        details.add(slotPointer(at, j, 'fin_utc'), `slot outside the target day: ${day!.text}; got ${slot.fin_utc as string}`)
      }
      if (start < prevEnd) {
        details.add(slotPointer(at, j, 'debut_utc'), `slots not contiguous: this slot starts at ${slot.debut_utc as string}, before the previous one ends (${formatUtcInstant(prevEnd)}); list slots in increasing order without overlap`)
      } else if (opts.requireContiguous && start > prevEnd) {
        details.add(slotPointer(at, j, 'debut_utc'), `slots not contiguous: gap from ${formatUtcInstant(prevEnd)} to ${slot.debut_utc as string}; this service requires contiguous slots (send energie_kwh for every slot in between)`)
      }
      if (!(end < prevEnd)) {
        prevEnd = end
        prevEndText = slot.fin_utc as string
      }
    }
    slotEnds[i] = n
  }
  const emittedAt = readUtcInstant(body.emitted_at)
  return typeof emittedAt === 'string' ? undefined : { emittedAt, starts, kwh, slotEnds }
}

/** What the bytes' reader (`apply/scan-programme.ts`) knows of the slots it read. */
export interface ScannedSlots {
  /** The length (ms) all slots share, the earliest start, the latest end, the greatest energy; NaN with no slot. */
  readonly slotMs: number
  readonly firstStartMs: number
  readonly lastEndMs: number
  readonly maxKwh: number
}

/**
 * The slot rules above, for slots read from the bytes: that reader takes only slots that
 * are objects of the three fields, instants on quarter-hours spelled canonically, each
 * site's slots contiguous and of one length, energies finite and not negative. What is
 * left to hold, for `body` already through the schema and the other rules: that length is
 * slot_duration_secs, every slot inside the target day, and the greatest energy within
 * the sanity bound (its power grows with it: one comparison stands for all). False sends
 * the body to `checkProgrammeRules`, which says which slot is wrong.
 */
export function scannedSlotsHold (body: unknown, slots: ScannedSlots, maxSiteKw = DEFAULT_MAX_SITE_KW): boolean {
  if (slots.slotMs !== slots.slotMs) return true   // no slot
  if (!isObj(body) || typeof body.slot_duration_secs !== 'number') return false
  const slotSecs = body.slot_duration_secs
  const day = dayOf(body.target_date)
  if (!day || day.offGrid || slots.slotMs !== slotSecs * 1000) return false
  return slots.firstStartMs >= day.startMs && slots.lastEndMs <= day.endMs && !(slots.maxKwh * 3600 / slotSecs > maxSiteKw)
}

/**
 * What cannot be honoured in time (DECISIONS.md "Inbound"): a future emitted_at would
 * outrank every later, correct revision of its sites and day; a day over cannot be
 * applied; a day too far ahead is a mistake more often than a plan. Today stays
 * accepted (an intraday correction).
 */
function checkTimeliness (body: Obj, day: Day | undefined, opts: RuleOptions, details: Details): void {
  const nowMs = opts.nowMs!
  const skewSecs = opts.maxClockSkewSeconds ?? DEFAULT_MAX_CLOCK_SKEW_SECONDS
  const emitted = typeof body.emitted_at === 'string' ? utcInstantMs(body.emitted_at) : NaN
  // NaN (unreadable, or a sub-millisecond fraction): the schema reports the first; the
  // second is read at millisecond precision, enough to compare with a skew in seconds.
  const emittedMs = emitted === emitted ? emitted : readMs(body.emitted_at)
  if (emittedMs > nowMs + skewSecs * 1000) {
    details.add('/emitted_at', `is ${aheadText(emittedMs - nowMs)} ahead of ${opts.clockName ?? 'this server\'s clock'} (${new Date(nowMs).toISOString()}); ` +
      `at most ${skewSecs} s ahead is accepted, since a programme from the future would outrank every later revision of its sites and day: ` +
      'check the clock and the time zone of the sending system (emitted_at is UTC, ending in Z)')
  }
  if (opts.checkTargetDate === false || !day || day.offGrid || typeof body.target_date !== 'string') return
  const { today, last } = calendarOf(nowMs, opts.maxDaysAhead ?? DEFAULT_MAX_DAYS_AHEAD)
  const target = body.target_date
  if (target < today) {
    details.add('/target_date', `the day is over: ${target} is before today (${today}, Europe/Paris; server time ${new Date(nowMs).toISOString()}); ` +
      'a programme for a past day cannot be applied: send one for today or a later day')
  } else if (target > last) {
    details.add('/target_date', `${target} is too far ahead: the latest target_date accepted today (${today}, Europe/Paris) is ${last}, ` +
      `${opts.maxDaysAhead ?? DEFAULT_MAX_DAYS_AHEAD} day(s) ahead; send it later`)
  }
}

/**
 * A slot above the sanity bound (DECISIONS.md "Inbound"): far above any site served, it is
 * a unit error (Wh sent as kWh) or a number no solver can use (1e306 kWh is an infinite floor).
 */
function overBound (kwh: number, slotSecs: number, maxKw: number): string {
  const kw = kwh * 3600 / slotSecs
  const power = Number.isFinite(kw) ? `a power of ${+kw.toPrecision(9)} kW` : 'a power beyond any finite number of kW'
  return `${kwh} kWh over a ${slotSecs} s slot is ${power} (energie_kwh * 3600 / slot_duration_secs), above this service's sanity bound of ${maxKw} kW per site ` +
    '(inbound.maxSiteKw): check the value and its unit (kWh delivered over the slot), or ask the service\'s operator to raise inbound.maxSiteKw if the site can truly draw more'
}

function readMs (value: unknown): number {
  const at = readUtcInstant(value)
  return typeof at === 'string' ? NaN : at.ms
}

function aheadText (ms: number): string {
  // Up: 300.001 s ahead is "301 s", never "300 s ahead; at most 300 s".
  const secs = Math.ceil(ms / 1000)
  if (secs < 3600) return `${secs} s`
  if (secs < 2 * 86400) return `${(secs / 3600).toFixed(1)} h`
  return `${Math.round(secs / 86400)} days`
}

/** Today in Paris and the last day accepted, for the quarter-hour of `nowMs` (Paris days turn on whole hours). */
let calendar = { quarter: NaN, daysAhead: NaN, today: '', last: '' }
function calendarOf (nowMs: number, daysAhead: number): { today: string; last: string } {
  const quarter = Math.floor(nowMs / QUARTER_HOUR_MS)
  if (calendar.quarter !== quarter || calendar.daysAhead !== daysAhead) {
    const today = parisDateOf(new Date(nowMs))
    calendar = { quarter, daysAhead, today, last: addDays(today, daysAhead) }
  }
  return calendar
}

/** The pointer of a slot field; a module function, not a closure per site. */
// load-bearing: POST 1 × 96 and POST 100 × 96, "the schema and the contract's rules"; no figure of its own (bench/README.md#where-post-1--96-goes-e-against-c)
function slotPointer (site: string, j: number, field: string): string {
  return `${site}/energie_programmee/${j}/${field}`
}

const MISALIGNED = 'must be aligned to a 900 s boundary (HH:00, HH:15, HH:30 or HH:45, with no seconds and no fraction of a second)'

/**
 * A slot's debut_utc or fin_utc (contract §2.2): a UTC instant on a 900 s boundary
 * (HH:00, HH:15, HH:30 or HH:45), so its fraction of a second is zero by rule. NaN,
 * reported, when it is not; a non-string is the schema's to report.
 */
function slotInstant (value: unknown, site: string, j: number, field: string, details: Details): number {
  if (typeof value !== 'string') return NaN
  const ms = utcInstantMs(value)
  if (ms !== ms) {
    // Not an instant (the reader says why), or one with a sub-millisecond fraction.
    const read = readUtcInstant(value)
    details.add(slotPointer(site, j, field), typeof read === 'string' ? read : `${MISALIGNED}; got ${JSON.stringify(value)}`)
    return NaN
  }
  if (ms % QUARTER_HOUR_MS !== 0) {
    details.add(slotPointer(site, j, field), `${MISALIGNED}; got ${JSON.stringify(value)}`)
    return NaN
  }
  return ms
}

interface Day {
  readonly startMs: number
  readonly endMs: number
  readonly text: string
  /** Why the day has no quarter-hour grid, when it has none. */
  readonly offGrid?: string
}
const days = new BoundedCache<string, Day | null>(1000)

/** The coverage of a target date (luxon, so cached: a programme names one day). */
function dayOf (targetDate: unknown): Day | undefined {
  if (typeof targetDate !== 'string') return undefined
  return days.getOrCompute(targetDate, readDay) ?? undefined
}

function readDay (targetDate: string): Day | null {
  try {
    const { startMs, endMs } = parisDayMs(targetDate)
    const c = coverageOf(targetDate)
    return {
      startMs,
      endMs,
      text: `${targetDate} (Europe/Paris) covers [${c.startUtc}, ${c.endUtc}), ${c.slots} quarter-hours`,
      offGrid: startMs % QUARTER_HOUR_MS === 0 && endMs % QUARTER_HOUR_MS === 0 ? undefined : offGridMessage(targetDate, c),
    }
  } catch {
    return null   // not a calendar date: the schema reports it
  }
}

/**
 * Europe/Paris kept local mean time (UTC+00:09:21 in the tz database) until 1911-03-11:
 * such a day starts and ends off the UTC quarter-hours, so no 900 s slot grid fits it
 * (DECISIONS.md "Time": 92, 96 or 100 quarter-hours). The date is refused, saying so,
 * rather than given a grid that is neither Paris's nor UTC's. `FIRST_GRID_DAY` is the
 * first day luxon's Paris starts and ends on quarter-hours (a test keeps it true).
 */
const FIRST_GRID_DAY = '1911-03-12'

function offGridMessage (targetDate: string, c: { startUtc: string; endUtc: string }): string {
  return `the Europe/Paris day ${targetDate} covers [${c.startUtc}, ${c.endUtc}), which does not start and end on UTC quarter-hours: ` +
    `Paris kept local mean time (UTC+00:09:21) until 1911, so no 900 s slot grid fits the day; send a target_date from ${FIRST_GRID_DAY} on`
}
