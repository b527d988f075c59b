import t from 'tap'
import { basicUtc, formatUtcInstant, httpDate, parseUtcInstant } from '../../src/contract/instants.ts'

t.test('a wire instant is ISO 8601 UTC with Z; milliseconds are accepted and kept', async t => {
  t.equal(parseUtcInstant('2026-11-21T12:30:00Z'), Date.UTC(2026, 10, 21, 12, 30))
  t.equal(parseUtcInstant('2026-11-21T12:30:00.250Z'), Date.UTC(2026, 10, 21, 12, 30, 0, 250))
  t.equal(parseUtcInstant('2026-11-21T12:30:00.25Z'), Date.UTC(2026, 10, 21, 12, 30, 0, 250), '.25 is 250 ms')
})

t.test('an offset other than Z, a local time or a non-string is refused', async t => {
  for (const bad of ['2026-11-21T13:30:00+01:00', '2026-11-21T12:30:00', '2026-11-21', 'now', 42, null, '2026-11-21T12:30:00z']) {
    t.equal(parseUtcInstant(bad), undefined, String(bad))
  }
})

t.test('impossible calendar instants are refused rather than rolled over', async t => {
  for (const bad of ['2026-02-30T00:00:00Z', '2026-11-21T24:00:00Z', '2026-11-21T12:60:00Z', '2026-13-01T00:00:00Z']) {
    t.equal(parseUtcInstant(bad), undefined, bad)
  }
})

t.test('the canonical wire form drops zero milliseconds and keeps the others', async t => {
  t.equal(formatUtcInstant(Date.UTC(2026, 10, 21, 23)), '2026-11-21T23:00:00Z')
  t.equal(formatUtcInstant(Date.UTC(2026, 10, 21, 23, 0, 0, 7)), '2026-11-21T23:00:00.007Z')
})

t.test('the basic format is YYYYMMDDTHHMMSSZ, with .sss only when milliseconds are not zero', async t => {
  t.equal(basicUtc(Date.UTC(2026, 10, 21, 12, 30)), '20261121T123000Z')
  t.equal(basicUtc(Date.UTC(2026, 10, 21, 12, 30, 0, 250)), '20261121T123000.250Z')
})

t.test('Last-Modified uses the IMF-fixdate form', async t => {
  t.equal(httpDate(Date.UTC(2026, 10, 21, 8, 0, 0, 999)), 'Sat, 21 Nov 2026 08:00:00 GMT')
})
