import t from 'tap'
import { CSV_ANNOTATIONS, CSV_HEADER, realisationCsv } from '../../src/apply/realisation-csv.ts'
import { instantText } from '../../src/contract/instant-text.ts'
import type { Creneau, RealiseBody } from '../../src/contract/realise.ts'

// The day's CSV in its two dialects: scripts keep their columns where they were; a French
// spreadsheet gets `;`, `,` decimals and a BOM; both can add Paris time and French verdicts.

const Q = 900_000
/** The autumn day: 02:00-03:00 in Paris happens twice (00:00 UTC and 01:00 UTC). */
const DAY = '2026-10-25'
const start = Date.parse('2026-10-24T22:00:00Z')
const slot = (i: number, c: Partial<Creneau>): Creneau => ({
  debut_utc: instantText(start + i * Q), fin_utc: instantText(start + (i + 1) * Q), energie_programmee_kwh: 2.5, energie_realisee_kwh: 1.25, verdict: 'short', manque_kwh: 1.25, ...c,
})
const body: RealiseBody = {
  site_id: '30000000000001',
  target_date: DAY,
  instruction_id: 'ProgrammeSoutirage-2026-10-25-rev-20261024T100000Z',
  creneaux: [
    slot(8, { company_id: 'acme' }),
    slot(12, { company_id: 'acme', energie_realisee_kwh: 3, verdict: 'met', manque_kwh: undefined, tardif: { instruction_id: 'ProgrammeSoutirage-2026-10-25-rev-20261025T020000Z', energie_programmee_kwh: 0.75, verdict: 'late' } }),
    slot(13, { company_id: 'bê;ta', energie_programmee_kwh: null, energie_realisee_kwh: null, verdict: 'unconstrained', manque_kwh: undefined }),
  ],
  totaux: { energie_programmee_kwh: 5, energie_realisee_kwh: 4.25, manque_kwh: 1.25, verdicts: { met: 1, short: 1, curtailment_respected: 0, curtailment_broken: 0, no_data: 0, unconstrained: 1 }, tardifs: 1 },
}

t.test('without options: the columns and bytes scripts have always read', async t => {
  const csv = realisationCsv([body])
  t.notOk(csv.startsWith('\uFEFF'))
  const rows = csv.trimEnd().split('\r\n').map(l => l.split(','))
  t.same(rows[0], [...CSV_HEADER])
  t.same(rows[1], ['30000000000001', DAY, body.instruction_id!, '2026-10-25T00:00:00Z', '2026-10-25T00:15:00Z', '2.5', '1.25', 'short', '1.25', 'acme', '', ''])
  t.equal(rows.length, 4)
})

t.test('annotated: Paris time with its offset (the repeated hour told apart) and French verdicts after the usual columns', async t => {
  const rows = realisationCsv([body], { annotated: true }).trimEnd().split('\r\n')
  t.same(rows[0]!.split(','), [...CSV_HEADER, ...CSV_ANNOTATIONS])
  t.same(rows[1]!.split(',').slice(0, CSV_HEADER.length), realisationCsv([body]).split('\r\n')[1]!.split(','), 'the usual columns unchanged')
  t.same(rows[1]!.split(',').slice(CSV_HEADER.length), ['2026-10-25 02:00', '+02:00', 'insuffisant', ''])
  t.same(rows[2]!.split(',').slice(CSV_HEADER.length), ['2026-10-25 02:00', '+01:00', 'atteint', 'reçu trop tard'], 'the second 02:00, one hour later in UTC')
  t.match(rows[3], /,"bê;ta",/, 'a cell with a separator is quoted')
})

t.test('the French spreadsheet dialect: a BOM, `;` between cells, `,` in numbers, the same rows', async t => {
  const csv = realisationCsv([body], { dialect: 'tableur-fr', annotated: true })
  t.ok(csv.startsWith('\uFEFF'), 'UTF-8 BOM: the spreadsheet reads é as é')
  const rows = csv.slice(1).trimEnd().split('\r\n').map(l => l.split(';'))
  t.same(rows[0], [...CSV_HEADER, ...CSV_ANNOTATIONS])
  t.same(rows[1], ['30000000000001', DAY, body.instruction_id!, '2026-10-25T00:00:00Z', '2026-10-25T00:15:00Z', '2,5', '1,25', 'short', '1,25', 'acme', '', '', '2026-10-25 02:00', '+02:00', 'insuffisant', ''])
  t.same(rows[2]!.slice(5, 7).concat(rows[2]!.slice(11, 12)), ['2,5', '3', '0,75'])
  t.same(rows[3]!.slice(5, 9), ['', '', 'unconstrained', ''])
  t.match(csv, /;"bê;ta";/, 'quoted: its `;` is no separator')
  t.equal(Buffer.from(csv).subarray(0, 3).toString('hex'), 'efbbbf')
})
