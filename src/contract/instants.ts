/**
 * Wire instants: ISO 8601 UTC with `Z` only (DECISIONS.md "Time"); milliseconds kept.
 * @module
 */

// Calendar fields are checked by round-tripping through Date below; the pattern only
// fixes the shape, so `+01:00` and bare local times are refused.
const UTC_INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/

/** Milliseconds since the epoch of a wire instant, or undefined when it is not one. */
export function parseUtcInstant (text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined
  // A programme carries two instants per slot (192 a site): the common exact shape is
  // read digit by digit, ~20x cheaper than the regex and Date round-trip below.
  if (text.length === 20) return parseSeconds(text)
  const m = UTC_INSTANT.exec(text)
  if (!m) return undefined
  const [, y, mo, d, h, mi, s, frac] = m
  const ms = frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0
  const t = Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, +s!, ms)
  const back = new Date(t)
  // Rejects 2026-02-30T… and 24:00:00, which Date would silently roll over.
  if (back.getUTCFullYear() !== +y! || back.getUTCMonth() !== +mo! - 1 || back.getUTCDate() !== +d! ||
      back.getUTCHours() !== +h! || back.getUTCMinutes() !== +mi! || back.getUTCSeconds() !== +s!) return undefined
  return t
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** `YYYY-MM-DDTHH:MM:SSZ` exactly, with the same checks as the general path. */
function parseSeconds (s: string): number | undefined {
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 ||
      s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58 || s.charCodeAt(19) !== 90) return undefined
  const y = digits(s, 0, 4); const mo = digits(s, 5, 2); const d = digits(s, 8, 2)
  const h = digits(s, 11, 2); const mi = digits(s, 14, 2); const sec = digits(s, 17, 2)
  // y < 100 is refused as the general path does (Date.UTC reads 0-99 as 1900-1999).
  if (y < 100 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59) return undefined
  const leap = mo === 2 && ((y % 4 === 0 && y % 100 !== 0) || y % 400 === 0)
  if (d > DAYS_IN_MONTH[mo - 1]! + (leap ? 1 : 0)) return undefined
  return Date.UTC(y, mo - 1, d, h, mi, sec)
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

/** The canonical wire form: `2026-11-21T12:30:00Z`, or `…00.250Z` with milliseconds. */
export function formatUtcInstant (ms: number): string {
  const iso = new Date(ms).toISOString()
  return ms % 1000 === 0 ? iso.slice(0, 19) + 'Z' : iso
}

/** UTC basic format `YYYYMMDDTHHMMSSZ`, `.sss` after the seconds when non-zero. */
export function basicUtc (ms: number): string {
  const iso = new Date(ms).toISOString()   // 2026-11-21T12:30:00.250Z
  const base = iso.slice(0, 19).replace(/[-:]/g, '')
  const millis = iso.slice(20, 23)
  return millis === '000' ? `${base}Z` : `${base}.${millis}Z`
}

/** IMF-fixdate (RFC 9110 §5.6.7) for Last-Modified. */
export function httpDate (ms: number): string {
  return new Date(ms).toUTCString()
}
