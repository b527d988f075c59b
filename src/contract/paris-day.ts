/**
 * Europe/Paris civil days (DECISIONS.md "Time"): a target date covers
 * [00:00 Paris, 00:00 Paris of the next day) in UTC, 92, 96 or 100 quarter-hours.
 * Time-zone arithmetic is luxon's, never a hand-written offset.
 * @module
 */
import { DateTime } from 'luxon'
import { formatUtcInstant } from './instants.ts'
import { BoundedCache } from '../bounded-cache.ts'

export const PARIS = 'Europe/Paris'
export const QUARTER_HOUR_MS = 900_000
/** The longest Paris day (autumn DST change: 25 h, 100 quarter-hours): no slot can be longer. */
export const LONGEST_DAY_SECS = 100 * 900

/** The Paris day a publication or an instruction is about, as UTC instants. */
export interface Coverage {
  readonly targetDate: string   // YYYY-MM-DD, Europe/Paris civil day
  readonly startUtc: string     // ISO 8601 UTC, inclusive
  readonly endUtc: string       // ISO 8601 UTC, exclusive
  readonly slots: number        // 92, 96 or 100 quarter-hours
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
/** The shape of a date for JSON Schema readers (openapi/schemas); `isCalendarDate` decides. */
export const DATE_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'

/**
 * True when `text` is a real calendar date `YYYY-MM-DD`. A calendar check needs no
 * time zone, so it does without luxon: the GET path calls it (the GET profile, bench/README.md#where-the-doors-thread-spends-a-get).
 */
export function isCalendarDate (text: unknown): text is string {
  if (typeof text !== 'string') return false
  const m = DATE.exec(text)
  if (!m) return false
  const y = +m[1]!, mo = +m[2]!, d = +m[3]!
  const t = new Date(0)
  t.setUTCFullYear(y, mo - 1, d)   // unlike Date.UTC, years 0-99 stay themselves
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d
}

/**
 * Days already computed: luxon takes ~80 µs a day, and a realise read, which a BSP polls,
 * needs its day's span on every request (its tenure of the site that day).
 */
const DAY_SPANS = new BoundedCache<string, { readonly startMs: number; readonly endMs: number }>(64)

/** The UTC span of a Paris day in ms. Throws on a date that is not a real calendar date. */
export function parisDayMs (targetDate: string): { readonly startMs: number; readonly endMs: number } {
  const known = DAY_SPANS.get(targetDate)
  if (known) return known
  if (!isCalendarDate(targetDate)) throw new RangeError(`not a calendar date: ${targetDate}`)
  const start = DateTime.fromISO(targetDate, { zone: PARIS }).startOf('day')
  const span = Object.freeze({ startMs: start.toMillis(), endMs: start.plus({ days: 1 }).toMillis() })
  DAY_SPANS.set(targetDate, span)
  return span
}

/** The UTC span of a Paris day. Throws on a date that is not a real calendar date. */
export function coverageOf (targetDate: string): Coverage {
  const { startMs, endMs } = parisDayMs(targetDate)
  return {
    targetDate,
    startUtc: formatUtcInstant(startMs),
    endUtc: formatUtcInstant(endMs),
    slots: (endMs - startMs) / QUARTER_HOUR_MS,
  }
}

/** The Paris date of an instant, `YYYY-MM-DD`. */
export function parisDateOf (instant: Date): string {
  return DateTime.fromJSDate(instant, { zone: PARIS }).toISODate()!
}

/** `date` shifted by whole Paris days. */
export function addDays (date: string, days: number): string {
  return DateTime.fromISO(date, { zone: PARIS }).plus({ days }).toISODate()!
}

/** ISO weekday of a Paris date: 1 = Monday … 7 = Sunday. */
export function weekdayOf (date: string): number {
  return DateTime.fromISO(date, { zone: PARIS }).weekday
}
