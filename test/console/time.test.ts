import t from 'tap'
import { isRepeatedHour, parisFieldMs, parisFieldValue, parisText, parisTime, parisTimeOrDash } from '../../src/console/time.ts'

t.test('instants are shown in Paris wall time, winter and summer', async t => {
  t.equal(parisText('2026-11-21T23:00:00Z'), '22/11/2026 00:00:00 (UTC+01:00)', 'a full date and time says its offset')
  t.equal(parisText('2026-07-01T10:15:00Z'), '01/07/2026 12:15:00 (UTC+02:00)')
  t.equal(parisText('2026-07-01T10:15:00Z', 'time'), '12:15')
  t.equal(parisText(Date.parse('2027-03-27T23:00:00Z'), 'date'), '28/03/2027')
})

t.test('a time in the repeated autumn hour carries its offset; others do not', async t => {
  t.equal(parisText('2026-10-25T00:15:00Z', 'time'), '02:15 (UTC+02:00)')
  t.equal(parisText('2026-10-25T01:15:00Z', 'time'), '02:15 (UTC+01:00)')
  t.equal(parisText('2026-10-25T02:15:00Z', 'time'), '03:15')
  t.equal(parisText('2026-10-25T01:15:00Z', 'minute'), '25/10/2026 02:15 (UTC+01:00)', 'a table cell: the offset only where the hour repeats')
  t.equal(parisText('2026-11-21T12:00:00Z', 'slot'), '21/11/2026 13:00:00', 'elsewhere the column header says the clock')
  t.ok(isRepeatedHour(Date.parse('2026-10-25T01:59:00Z')))
  t.notOk(isRepeatedHour(Date.parse('2026-10-24T23:59:00Z')))
  t.equal(parisText('2026-10-25T01:15:00Z', 'date'), '25/10/2026', 'a date alone needs no offset')
})

t.test('<time> keeps the UTC instant, at the precision sent, in datetime and title', async t => {
  t.equal(parisTime('2026-11-21T12:00:00.000001Z').toString(),
    '<time datetime="2026-11-21T12:00:00.000001Z" title="2026-11-21T12:00:00.000001Z (UTC)">21/11/2026 13:00:00 (UTC+01:00)</time>')
  t.equal(parisTime(Date.parse('2026-11-21T12:00:00Z'), 'time').toString(),
    '<time datetime="2026-11-21T12:00:00Z" title="2026-11-21T12:00:00Z (UTC)">13:00</time>')
})

t.test('parisTimeOrDash: a dash for no instant, escaped text for text that is not one', async t => {
  t.equal(String(parisTimeOrDash(undefined)), '<span aria-label="aucune">&ndash;</span>')
  t.equal(String(parisTimeOrDash(null)), '<span aria-label="aucune">&ndash;</span>')
  t.equal(String(parisTimeOrDash('<b>not a date</b>')), '&lt;b&gt;not a date&lt;/b&gt;', 'shown as escaped text')
  t.match(String(parisTimeOrDash('2026-12-01T10:00:00.000Z')), '>01/12/2026 11:00:00 (UTC+01:00)<', 'winter: UTC+1')
})

t.test('a form field of Paris time: a wall time or a day, its start or with end its last instant, over the DST days', async t => {
  t.equal(parisFieldMs('2026-11-21T13:29'), Date.parse('2026-11-21T12:29:00Z'))
  t.equal(parisFieldMs('2026-11-21T13:29', true), Date.parse('2026-11-21T12:29:59.999Z'), 'a bound to the minute includes it')
  t.equal(parisFieldMs('2026-10-25', true)! + 1 - parisFieldMs('2026-10-25')!, 25 * 3_600_000, 'the autumn day has 25 hours')
  t.equal(parisFieldMs('2026-03-29', true)! + 1 - parisFieldMs('2026-03-29')!, 23 * 3_600_000, 'the spring day 23')
  t.equal(parisFieldMs('2026-10-25T02:30'), Date.parse('2026-10-25T00:30:00Z'), 'the repeated hour: a start is the first of its two instants')
  t.equal(parisFieldMs('2026-10-25T02:30', true), Date.parse('2026-10-25T01:30:59.999Z'), 'an end the last')
  t.equal(parisFieldValue(Date.parse('2026-10-25T01:30:00Z')), '2026-10-25T02:30')
  for (const bad of ['2026-11-31', '21/11/2026', '2026-11-21T25:00', '2026-11-21 13:29', '']) t.equal(parisFieldMs(bad), undefined, `« ${bad} »`)
})
