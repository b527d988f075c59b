import t from 'tap'
import { instantText, spellsQuarter } from '../../src/contract/instant-text.ts'
import { formatUtcInstant } from '../../src/contract/instants.ts'

// DECISIONS.md "Time": a slot instant is a quarter-hour, written `YYYY-MM-DDTHH:MM:SSZ`.
// `instantText` writes it from a cache; `spellsQuarter` tells whether bytes are that text,
// for the programme reader of bytes (src/apply/scan-programme.ts).

const view = (text: string, pad = 0) => {
  const bytes = Buffer.from(' '.repeat(pad) + text, 'latin1')
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

// Both sides of the spring and autumn changes, a day in the cache's fast path and days around it, the years' ends.
const QUARTERS = [
  '2027-03-28T00:45:00Z', '2027-03-28T01:00:00Z', '2027-10-31T00:45:00Z', '2027-10-31T01:15:00Z',
  '2026-11-30T23:00:00Z', '2026-12-01T00:00:00Z', '2026-12-01T22:45:00Z', '0001-01-01T00:00:00Z', '9999-12-31T23:45:00Z',
].map(Date.parse)

t.test('instantText writes a quarter-hour as formatUtcInstant does, the same string each time', async t => {
  for (const ms of [...QUARTERS, ...QUARTERS]) t.equal(instantText(ms), formatUtcInstant(ms))
  t.equal(instantText(QUARTERS[0]! + 1500), formatUtcInstant(QUARTERS[0]! + 1500), 'an instant off the quarter-hours too')
})

t.test('spellsQuarter: the 20 bytes are the quarter-hour as instantText writes it, and only those', async t => {
  for (const ms of QUARTERS) {
    const text = instantText(ms)
    t.ok(spellsQuarter(view(text, 3), 3, ms), `${text} at an offset that is no multiple of four`)
    t.notOk(spellsQuarter(view(instantText(ms + 900_000)), 0, ms), `${text}: the next quarter-hour's text is not it`)
    for (const k of [0, 5, 13, 18, 19]) {
      const one = text.slice(0, k) + String.fromCharCode(text.charCodeAt(k) ^ 1) + text.slice(k + 1)
      t.notOk(spellsQuarter(view(one), 0, ms), `${text} with character ${k} changed: ${one}`)
    }
  }
  t.notOk(spellsQuarter(view('2026-12-01T00:00:01Z'), 0, Date.parse('2026-12-01T00:00:01Z')), 'an instant off the quarter-hours is never one')
})
