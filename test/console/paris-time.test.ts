import t from 'tap'
import { parisTime } from '../../src/console/paris-time.ts'

t.test('Paris wall time shown, the UTC instant in datetime and title; a dash for none', async t => {
  t.equal(String(parisTime('2026-07-01T10:00:00Z')), '<time datetime="2026-07-01T10:00:00.000Z" title="2026-07-01T10:00:00.000Z (UTC)">01/07/2026 12:00:00</time>')
  t.match(String(parisTime('2026-12-01T10:00:00Z')), '>01/12/2026 11:00:00<', 'winter: UTC+1')
  t.match(String(parisTime(undefined)), '–')
  t.equal(String(parisTime('<b>not a date</b>')), '&lt;b&gt;not a date&lt;/b&gt;', 'shown as escaped text')
})
