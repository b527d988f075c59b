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
