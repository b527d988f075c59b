/**
 * Wire instants (DECISIONS.md "Time"): ISO 8601 UTC ending in `Z`, years 0000–9999,
 * a fraction of a second of 1 to 9 digits kept at full precision. The one reader of an
 * instant in the contract: every door, message and comparison goes through here.
 * @module
 */

/**
 * An instant at full precision: milliseconds since the epoch plus the nanoseconds
 * within that millisecond (0 to 999,999). Not a bigint of nanoseconds: years up to 9999
 * need 69 bits, past what LMDB's keys and msgpack's int64 hold, and a bigint allocates
 * per read; `ms` stays a plain double that Date, luxon and the stored records already
 * use (exact for every year here), and slot instants (whole quarter-hours) never need more.
 */
export interface Instant {
  readonly ms: number
  readonly nanos: number
}

/**
 * The shape of a wire instant for JSON Schema readers (openapi/schemas, the BSP client);
 * `readUtcInstant` decides (it also checks the calendar).
 */
export const UTC_INSTANT_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?Z$'

/** Orders two instants at full precision: negative, 0 or positive. */
export function compareInstants (a: Instant, b: Instant): number {
  return a.ms !== b.ms ? a.ms - b.ms : a.nanos - b.nanos
}

/**
 * The instant `text` denotes, or a message saying exactly what is wrong with it (ending
 * with what was sent), ready for `error.details`.
 */
export function readUtcInstant (text: unknown): Instant | string {
  if (scan(text)) return { ms: scannedMs, nanos: scannedNanos }
  return explain(text)
}

/**
 * Milliseconds since the epoch of a wire instant with no sub-millisecond part, else NaN
 * (then `readUtcInstant` says why). The hot path: a 1,000-site programme carries 192,000
 * slot instants; no regex, no allocation, no Date.
 */
export function utcInstantMs (text: unknown): number {
  return scan(text) && scannedNanos === 0 ? scannedMs : NaN
}

// `scan` leaves its result here rather than in an object: one read per slot instant
// must not allocate. Single-threaded per isolate (the worker has its own module copy).
let scannedMs = 0
let scannedNanos = 0

const DAY_MS = 86_400_000
const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]

/**
 * `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z` read digit by digit at fixed positions, with the
 * calendar checked. True when valid (result in scannedMs/scannedNanos). `explain`
 * states the same rules for a reader and says which one failed; a test keeps them equal.
 */
function scan (s: unknown): boolean {
  if (typeof s !== 'string') return false
  const n = s.length
  if (n < 20 || n > 30 || s.charCodeAt(n - 1) !== 90 /* Z */) return false
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 ||
      s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return false
  const y = digits(s, 0, 4); const mo = digits(s, 5, 2); const d = digits(s, 8, 2)
  const h = digits(s, 11, 2); const mi = digits(s, 14, 2); const sec = digits(s, 17, 2)
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) ||
      h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59) return false
  let fraction = 0                                   // nanoseconds within the second
  if (n > 20) {
    const k = n - 21                                 // fraction digits, 1..9
    if (s.charCodeAt(19) !== 46 /* . */ || k < 1) return false
    const f = digits(s, 20, k)
    if (f < 0) return false
    fraction = f * POW10[9 - k]!
  }
  const subMs = fraction % 1_000_000
  scannedMs = daysFromCivil(y, mo, d) * DAY_MS + h * 3_600_000 + mi * 60_000 + sec * 1000 + (fraction - subMs) / 1_000_000
  scannedNanos = subMs
  return true
}

/** The decimal value of `n` ASCII digits at `at`, or -1 on a non-digit. */
function digits (s: string, at: number, n: number): number {
  let v = 0
  for (let i = at; i < at + n; i++) {
    const c = s.charCodeAt(i) - 48
    if (c < 0 || c > 9) return -1
    v = v * 10 + c
  }
  return v
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function daysInMonth (y: number, mo: number): number {
  const leap = mo === 2 && ((y % 4 === 0 && y % 100 !== 0) || y % 400 === 0)
  return DAYS_IN_MONTH[mo - 1]! + (leap ? 1 : 0)
}

/**
 * Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
 * Not Date.UTC: it reads years 0–99 as 1900–1999.
 */
function daysFromCivil (y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y
  const era = Math.floor(yy / 400)
  const yoe = yy - era * 400
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1
  return era * 146_097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719_468
}

const EXAMPLE = '2026-11-21T23:15:00Z'
const SHAPE = `an ISO 8601 UTC instant YYYY-MM-DDTHH:MM:SS[.fraction]Z, e.g. ${EXAMPLE}`
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']

/**
 * Loose enough to name the faulty part of most near-misses; only read on a refusal, and
 * only on a text of instant size (a 10 MiB body could otherwise make it backtrack).
 */
const LOOSE = /^([+-]?\d+)-(\d+)-(\d+)(?:([Tt ]|[^\d])(\d+)(?::(\d+))?(?::(\d+))?(?:([.,])(\d*))?([\s\S]*))?$/

/** What is wrong with a text `scan` refused, as a message for `error.details`. */
function explain (text: unknown): string {
  if (typeof text !== 'string') return `must be a string: ${SHAPE}`
  const got = `; got ${quote(text)}`
  const m = text.length <= 64 ? LOOSE.exec(text) : null
  if (!m) return `must be ${SHAPE}${got}`
  const [, y, mo, d, sep, h, mi, s, dot, frac, zone] = m as unknown as Array<string | undefined>
  if (y!.length !== 4 || y![0] === '+' || y![0] === '-') return `the year must have 4 digits, 0000 to 9999${got}`
  if (mo!.length !== 2) return `the month must have 2 digits (01 to 12)${got}`
  if (d!.length !== 2) return `the day must have 2 digits (01 to 31)${got}`
  if (+mo! < 1 || +mo! > 12) return `month ${mo} does not exist${got}`
  if (+d! < 1 || +d! > daysInMonth(+y!, +mo!)) {
    return `${y}-${mo}-${d} is not a calendar date (${MONTHS[+mo! - 1]} ${y} has ${daysInMonth(+y!, +mo!)} days)${got}`
  }
  if (sep === undefined) return `must have a time of day: a date alone is not an instant; expected ${SHAPE}${got}`
  if (sep !== 'T') return `the date and the time must be separated by an upper-case T${got}`
  if (h!.length !== 2 || (mi !== undefined && mi.length !== 2) || (s !== undefined && s.length !== 2)) {
    return `hours, minutes and seconds must have 2 digits each (HH:MM:SS)${got}`
  }
  if (mi === undefined || s === undefined) return `must have hours, minutes and seconds (HH:MM:SS)${got}`
  if (+h! === 24) return `hour 24 does not exist; write 00:00:00 of the next day${got}`
  if (+h! > 23) return `hour ${h} does not exist (00 to 23)${got}`
  if (+mi! > 59) return `minute ${mi} does not exist (00 to 59)${got}`
  if (+s! > 59) return `second ${s} does not exist (00 to 59; no leap second)${got}`
  if (dot === ',') return `the fraction of a second follows a dot, not a comma${got}`
  if (dot === '.' && frac!.length === 0) return `a dot must be followed by the fraction of a second (1 to 9 digits)${got}`
  if (frac !== undefined && frac.length > 9) return `the fraction of a second has at most 9 digits (nanoseconds); got ${frac.length} in ${quote(text)}`
  if (zone === '') return `must end in Z (UTC); got no time zone, a local time${got}`
  if (zone === 'z') return `must end in an upper-case Z${got}`
  const offset = /^([+-])(\d{2}):?(\d{2})$/.exec(zone!)
  if (offset) {
    const inUtc = readUtcInstant(text.slice(0, text.length - zone!.length) + 'Z')
    if (typeof inUtc === 'string') return `must end in Z (UTC); got an offset ${zone}${got}`
    const shift = (offset[1] === '-' ? 1 : -1) * (+offset[2]! * 60 + +offset[3]!) * 60_000
    return `must end in Z (UTC); got an offset ${zone}: write ${formatUtcInstant(inUtc.ms + shift, inUtc.nanos)} instead${got}`
  }
  if (zone![0] !== 'Z') return `must end in Z (UTC); got ${quote(zone!)} after the time${got}`
  return `must be ${SHAPE}${got}`
}

function quote (text: string): string {
  return JSON.stringify(text.length > 40 ? text.slice(0, 40) + '…' : text)
}

/**
 * The canonical wire form: `2026-11-21T12:30:00Z`, or with the shortest of `.sss`,
 * `.ssssss`, `.sssssssss` that holds a non-zero fraction exactly.
 */
export function formatUtcInstant (ms: number, nanos = 0): string {
  const iso = new Date(ms).toISOString()   // 2026-11-21T12:30:00.250Z
  return iso.slice(0, 19) + fractionOf(ms, nanos) + 'Z'
}

/** UTC basic format `YYYYMMDDTHHMMSSZ`, the fraction as `formatUtcInstant` writes it. */
export function basicUtc (ms: number, nanos = 0): string {
  const iso = new Date(ms).toISOString()
  return iso.slice(0, 4) + iso.slice(5, 7) + iso.slice(8, 13) + iso.slice(14, 16) + iso.slice(17, 19) + fractionOf(ms, nanos) + 'Z'
}

/** `''`, or `.` and 3, 6 or 9 digits: the fraction of a second, shortest exact form. */
function fractionOf (ms: number, nanos: number): string {
  const millis = ms - Math.floor(ms / 1000) * 1000
  if (nanos === 0) return millis === 0 ? '' : '.' + String(millis).padStart(3, '0')
  const all = String(millis * 1_000_000 + nanos).padStart(9, '0')
  return '.' + (nanos % 1000 === 0 ? all.slice(0, 6) : all)
}

/** IMF-fixdate (RFC 9110 §5.6.7) for Last-Modified. */
export function httpDate (ms: number): string {
  return new Date(ms).toUTCString()
}
