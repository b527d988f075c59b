import t, { type Test as Tap } from 'tap'
import fc from 'fast-check'
import {
  basicUtc, compareInstants, formatUtcInstant, httpDate, readUtcInstant, utcInstantMs, type Instant,
} from '../../src/contract/instants.ts'

// DECISIONS.md "Time": every wire instant is ISO 8601 UTC with Z; a fraction of a second
// of 1 to 9 digits is kept at the precision sent; years 0000–9999 are all valid.

/** The instant, or fails the test with the refusal. */
function read (t: Tap, text: string): Instant {
  const r = readUtcInstant(text)
  if (typeof r === 'string') t.fail(`${text} refused: ${r}`)
  return r as Instant
}

/** ms since the epoch of a calendar instant in any year (Date.UTC maps years 0-99 to 19xx). */
function utc (y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0): number {
  const date = new Date(0)
  date.setUTCFullYear(y, mo - 1, d)
  date.setUTCHours(h, mi, s, ms)
  return date.getTime()
}

t.test('a wire instant is ISO 8601 UTC with Z; milliseconds are accepted and kept', async t => {
  t.same(read(t, '2026-11-21T12:30:00Z'), { ms: Date.UTC(2026, 10, 21, 12, 30), nanos: 0 })
  t.same(read(t, '2026-11-21T12:30:00.250Z'), { ms: Date.UTC(2026, 10, 21, 12, 30, 0, 250), nanos: 0 })
  t.same(read(t, '2026-11-21T12:30:00.25Z'), { ms: Date.UTC(2026, 10, 21, 12, 30, 0, 250), nanos: 0 }, '.25 is 250 ms')
})

t.test('a fraction of 1 to 9 digits is kept to the nanosecond, not cut to milliseconds', async t => {
  const base = Date.UTC(2026, 11 - 1, 21, 10)
  t.same(read(t, '2026-11-21T10:00:00.123456Z'), { ms: base + 123, nanos: 456_000 })
  t.same(read(t, '2026-11-21T10:00:00.123456789Z'), { ms: base + 123, nanos: 456_789 })
  t.same(read(t, '2026-11-21T10:00:00.000000001Z'), { ms: base, nanos: 1 })
  t.same(read(t, '2026-11-21T10:00:00.5Z'), read(t, '2026-11-21T10:00:00.500000000Z'), 'trailing zeros change nothing')
})

t.test('years 0000 to 9999 are all valid, 0000–0099 included (not read as 19xx)', async t => {
  for (const [text, y] of [['0000-01-01T00:00:00Z', 0], ['0050-06-15T12:00:00Z', 50], ['0099-12-31T23:59:59Z', 99],
    ['0100-01-01T00:00:00Z', 100], ['9999-12-31T23:59:59.999999999Z', 9999]] as const) {
    const at = read(t, text)
    t.equal(new Date(at.ms).getUTCFullYear(), y, text)
    t.equal(formatUtcInstant(at.ms, at.nanos), text, `${text} formats back to itself`)
  }
  t.equal(read(t, '0050-06-15T12:00:00.123Z').ms, utc(50, 6, 15, 12, 0, 0, 123), 'the general path too')
  t.equal(read(t, '0004-02-29T00:00:00Z').ms, utc(4, 2, 29), 'year 4 is a leap year')
})

t.test('every refusal says exactly what is wrong, and quotes what was sent', async t => {
  const cases: Array<[unknown, RegExp]> = [
    ['2026-11-21T13:30:00+01:00', /^must end in Z \(UTC\); got an offset \+01:00: write 2026-11-21T12:30:00Z instead; got "2026-11-21T13:30:00\+01:00"$/],
    ['2026-11-21T10:30:00.5-02:00', /got an offset -02:00: write 2026-11-21T12:30:00\.500Z instead/],
    ['2026-11-21T12:30:00', /^must end in Z \(UTC\); got no time zone, a local time; got "2026-11-21T12:30:00"$/],
    ['2026-11-21T12:30:00z', /^must end in an upper-case Z/],
    ['2026-11-21T12:30:00 UTC', /^must end in Z \(UTC\); got " UTC" after the time/],
    ['2026-13-01T00:00:00Z', /^month 13 does not exist; got "2026-13-01T00:00:00Z"$/],
    ['2026-00-01T00:00:00Z', /^month 00 does not exist/],
    ['2026-02-30T00:00:00Z', /^2026-02-30 is not a calendar date \(February 2026 has 28 days\)/],
    ['2100-02-29T00:00:00Z', /^2100-02-29 is not a calendar date \(February 2100 has 28 days\)/],
    ['2026-11-21T24:00:00Z', /^hour 24 does not exist; write 00:00:00 of the next day/],
    ['2026-11-21T25:00:00Z', /^hour 25 does not exist/],
    ['2026-11-21T12:60:00Z', /^minute 60 does not exist/],
    ['2016-12-31T23:59:60Z', /^second 60 does not exist \(00 to 59; no leap second\)/],
    ['2026-11-21T12:30:00.1234567891Z', /^the fraction of a second has at most 9 digits \(nanoseconds\); got 10 in "/],
    ['2026-11-21T12:30:00.Z', /^a dot must be followed by the fraction of a second \(1 to 9 digits\)/],
    ['2026-11-21T12:30:00,5Z', /^the fraction of a second follows a dot, not a comma/],
    ['2026-11-21T12:30Z', /^must have hours, minutes and seconds \(HH:MM:SS\)/],
    ['2026-11-21 12:30:00Z', /^the date and the time must be separated by an upper-case T/],
    ['2026-11-21', /^must have a time of day: a date alone is not an instant/],
    ['+10000-01-01T00:00:00Z', /^the year must have 4 digits, 0000 to 9999/],
    ['-0001-01-01T00:00:00Z', /^the year must have 4 digits/],
    ['2026-1-21T12:30:00Z', /^the month must have 2 digits/],
    ['2026-11-21T1:30:00Z', /^hours, minutes and seconds must have 2 digits each/],
    ['now', /^must be an ISO 8601 UTC instant YYYY-MM-DDTHH:MM:SS\[\.fraction\]Z, e\.g\. 2026-11-21T23:15:00Z; got "now"$/],
    [42, /^must be a string: an ISO 8601 UTC instant/],
    [null, /^must be a string/],
  ]
  for (const [text, message] of cases) {
    const r = readUtcInstant(text)
    t.match(r, message, String(text))
    t.ok(Number.isNaN(utcInstantMs(text)), `${String(text)}: the hot path refuses it too`)
  }
})

t.test('the hot path reads whole-millisecond instants and leaves finer ones to readUtcInstant', async t => {
  t.equal(utcInstantMs('2026-11-21T23:15:00Z'), Date.UTC(2026, 10, 21, 23, 15))
  t.equal(utcInstantMs('2026-11-21T23:15:00.000Z'), Date.UTC(2026, 10, 21, 23, 15))
  t.equal(utcInstantMs('0050-06-15T00:15:00Z'), utc(50, 6, 15, 0, 15))
  t.ok(Number.isNaN(utcInstantMs('2026-11-21T23:15:00.0000001Z')), 'a sub-millisecond fraction is not a whole millisecond')
})

t.test('the fast reader and the explained reader agree on every near-miss (property)', async t => {
  // Valid instants with one character changed: the fixed-position reader accepts a
  // text exactly when the readable rules in `explain` find nothing wrong.
  const valid = fc.record({
    y: fc.integer({ min: 0, max: 9999 }), mo: fc.integer({ min: 1, max: 12 }), d: fc.integer({ min: 1, max: 28 }),
    h: fc.integer({ min: 0, max: 23 }), mi: fc.integer({ min: 0, max: 59 }), s: fc.integer({ min: 0, max: 59 }),
    frac: fc.stringMatching(/^[0-9]{0,9}$/),
  }).map(v => `${p(v.y, 4)}-${p(v.mo)}-${p(v.d)}T${p(v.h)}:${p(v.mi)}:${p(v.s)}${v.frac ? '.' + v.frac : ''}Z`)
  const mutated = fc.tuple(valid, fc.nat(), fc.constantFrom(...'0123456789-:.TZz+ 9'.split(''), '', '00')).map(
    ([text, at, c]) => { const i = at % (text.length + 1); return text.slice(0, i) + c + text.slice(i + 1) })
  fc.assert(fc.property(fc.oneof(valid, mutated), text => {
    const r = readUtcInstant(text)
    const loose = LOOSE_OK(text)
    if ((typeof r !== 'string') !== loose) throw new Error(`${text}: reader ${JSON.stringify(r)}, rules ${loose}`)
    if (typeof r !== 'string') {
      // …and they agree with Date wherever Date reads the same text (4-digit years, ms).
      const date = new Date(0)
      const [, y, mo, d, h, mi, s, f] = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z$/.exec(text)!
      date.setUTCFullYear(+y!, +mo! - 1, +d!)
      date.setUTCHours(+h!, +mi!, +s!, +(f ?? '').padEnd(9, '0').slice(0, 3))
      if (date.getTime() !== r.ms) throw new Error(`${text}: ${r.ms} vs Date ${date.getTime()}`)
      if (r.nanos !== +(f ?? '').padEnd(9, '0').slice(3)) throw new Error(`${text}: nanos ${r.nanos}`)
    }
  }), { numRuns: 5000 })
  t.pass('5,000 cases agree')
})

/** The format restated as a regex plus a calendar check, independently of the reader. */
function LOOSE_OK (text: string): boolean {
  const m = /^(\d{4})-(\d\d)-(\d\d)T([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(\.\d{1,9})?Z$/.exec(text)
  if (!m) return false
  const date = new Date(0)
  date.setUTCFullYear(+m[1]!, +m[2]! - 1, +m[3]!)
  return date.getUTCFullYear() === +m[1]! && date.getUTCMonth() === +m[2]! - 1 && date.getUTCDate() === +m[3]!
}
const p = (n: number, w = 2) => String(n).padStart(w, '0')

t.test('instants compare at full precision', async t => {
  const a = read(t, '2026-11-21T10:00:00.123456Z')
  const b = read(t, '2026-11-21T10:00:00.123457Z')
  t.ok(compareInstants(a, b) < 0)
  t.ok(compareInstants(b, a) > 0)
  t.equal(compareInstants(a, read(t, '2026-11-21T10:00:00.123456000Z')), 0)
  t.ok(compareInstants(read(t, '0050-01-01T00:00:00Z'), read(t, '1970-01-01T00:00:00Z')) < 0, 'before the epoch too')
})

t.test('the canonical wire form drops a zero fraction and keeps the others in the shortest of 3, 6 or 9 digits', async t => {
  t.equal(formatUtcInstant(Date.UTC(2026, 10, 21, 23)), '2026-11-21T23:00:00Z')
  t.equal(formatUtcInstant(Date.UTC(2026, 10, 21, 23, 0, 0, 7)), '2026-11-21T23:00:00.007Z')
  t.equal(formatUtcInstant(Date.UTC(2026, 10, 21, 23, 0, 0, 7), 100_000), '2026-11-21T23:00:00.007100Z')
  t.equal(formatUtcInstant(Date.UTC(2026, 10, 21, 23), 1), '2026-11-21T23:00:00.000000001Z')
  t.equal(formatUtcInstant(utc(50, 1, 1, 0, 0, 0, 500)), '0050-01-01T00:00:00.500Z', 'years before 1970 too')
})

t.test('the basic format is YYYYMMDDTHHMMSSZ, the fraction as .sss, .ssssss or .sssssssss', async t => {
  t.equal(basicUtc(Date.UTC(2026, 10, 21, 12, 30)), '20261121T123000Z')
  t.equal(basicUtc(Date.UTC(2026, 10, 21, 12, 30, 0, 250)), '20261121T123000.250Z')
  t.equal(basicUtc(Date.UTC(2026, 10, 21, 12, 30, 0, 123), 456_000), '20261121T123000.123456Z')
  t.equal(basicUtc(Date.UTC(2026, 10, 21, 12, 30, 0, 123), 456_789), '20261121T123000.123456789Z')
  t.equal(basicUtc(utc(50, 6, 15, 12)), '00500615T120000Z')
})

t.test('Last-Modified uses the IMF-fixdate form', async t => {
  t.equal(httpDate(Date.UTC(2026, 10, 21, 8, 0, 0, 999)), 'Sat, 21 Nov 2026 08:00:00 GMT')
})

t.test('a huge text is refused at once, with the format and the start of what was sent', async t => {
  const r = readUtcInstant('2026-11-21T1' + '1'.repeat(5_000_000) + '\n')
  t.match(r, /^must be an ISO 8601 UTC instant .*; got "2026-11-21T1{29}…"$/)
})
