/**
 * Conditional GET (RFC 9110 §13): does a request's If-None-Match / If-Modified-Since
 * let us answer 304 for the current revision? Pure: headers and validators in, a
 * verdict out (DECISIONS.md "Outbound").
 * @module
 */

/** The validators of the selected representation. */
export interface Validators {
  /** `W/"<opaque>"` or `"<opaque>"`. */
  readonly etag: string
  /** Last modification as epoch milliseconds (compared at one-second resolution). */
  readonly lastModifiedMs: number
}

/** The two request fields, as node hands them over (undefined when absent). */
export interface ConditionalHeaders {
  readonly ifNoneMatch?: string | undefined
  readonly ifModifiedSince?: string | undefined
}

/**
 * True when a GET/HEAD may be answered 304 Not Modified.
 * DECISIONS.md "Outbound": If-None-Match wins over If-Modified-Since (RFC 9110
 * §13.2.2 step 3 before step 4): when If-None-Match is present, If-Modified-Since is
 * not looked at.
 */
export function isNotModified (h: ConditionalHeaders, v: Validators): boolean {
  if (h.ifNoneMatch !== undefined) return noneMatchFails(h.ifNoneMatch, v.etag)
  if (h.ifModifiedSince !== undefined) {
    const since = parseHttpDate(h.ifModifiedSince)
    // RFC 9110 §13.1.3: an invalid date is ignored; the comparison has one-second resolution.
    if (since !== undefined) return Math.floor(v.lastModifiedMs / 1000) * 1000 <= since
  }
  return false
}

/**
 * RFC 9110 §13.1.2: the condition is false (→ 304) when the field is `*` or one of
 * its entity tags weakly matches the current one. Weak comparison ignores `W/`.
 */
function noneMatchFails (field: string, etag: string): boolean {
  if (field === etag) return true   // the common case: the BSP echoes our ETag back
  const trimmed = field.trim()
  if (trimmed === '*') return true
  const current = opaqueOf(etag)
  if (current === undefined) return false
  for (const tag of entityTags(trimmed)) if (tag === current) return true
  return false
}

const ENTITY_TAG = /\s*(?:W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*(?:,|$)/y

/** The opaque parts of a comma-separated list of entity tags; stops at the first malformed member. */
export function entityTags (field: string): string[] {
  const out: string[] = []
  ENTITY_TAG.lastIndex = 0
  while (ENTITY_TAG.lastIndex < field.length) {
    const start = ENTITY_TAG.lastIndex
    const m = ENTITY_TAG.exec(field)
    if (!m) {
      // Tolerate empty list members (`a, , b`, RFC 9110 §5.6.1) and skip the rest otherwise.
      const rest = field.slice(start)
      const empty = /^\s*,/.exec(rest)
      if (!empty) break
      ENTITY_TAG.lastIndex = start + empty[0].length
      continue
    }
    out.push(m[1]!)
  }
  return out
}

function opaqueOf (etag: string): string | undefined {
  const m = /^(?:W\/)?"([^"]*)"$/.exec(etag)
  return m?.[1]
}

const MONTHS = 'Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec'
const DAYS = 'Mon|Tue|Wed|Thu|Fri|Sat|Sun'
const LONG_DAYS = 'Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday'
// RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept.
const IMF_FIXDATE = new RegExp(`^(?:${DAYS}), (\\d{2}) (${MONTHS}) (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`)
const RFC850 = new RegExp(`^(?:${LONG_DAYS}), (\\d{2})-(${MONTHS})-(\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`)
const ASCTIME = new RegExp(`^(?:${DAYS}) (${MONTHS}) ([ \\d]\\d) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`)

/** Epoch milliseconds of an HTTP-date, or undefined when it is not one (then it is ignored). */
export function parseHttpDate (text: string): number | undefined {
  const s = text.trim()
  let m: RegExpExecArray | null
  let parts: [number, string, number, number, number, number] | undefined
  if ((m = IMF_FIXDATE.exec(s))) parts = [+m[1]!, m[2]!, +m[3]!, +m[4]!, +m[5]!, +m[6]!]
  else if ((m = RFC850.exec(s))) {
    // RFC 9110 §5.6.7: a two-digit year more than 50 years in the future is in the past century.
    const yy = +m[3]!
    const thisYear = new Date().getUTCFullYear()
    let year = Math.floor(thisYear / 100) * 100 + yy
    if (year > thisYear + 50) year -= 100
    parts = [+m[1]!, m[2]!, year, +m[4]!, +m[5]!, +m[6]!]
  } else if ((m = ASCTIME.exec(s))) parts = [+m[2]!.trim(), m[1]!, +m[6]!, +m[3]!, +m[4]!, +m[5]!]
  if (!parts) return undefined
  const [day, mon, year, h, mi, sec] = parts
  const month = MONTHS.split('|').indexOf(mon)
  const ms = Date.UTC(year, month, day, h, mi, sec)
  const d = new Date(ms)
  // Reject calendar overflow (31 Feb) and out-of-range times, which Date.UTC would roll over.
  if (d.getUTCDate() !== day || d.getUTCMonth() !== month || h > 23 || mi > 59 || sec > 60) return undefined
  return ms
}
