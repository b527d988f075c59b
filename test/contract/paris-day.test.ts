import t from 'tap'
import { coverageOf, isCalendarDate } from '../../src/contract/paris-day.ts'
import { buildBesoins } from '../../src/publish/build-besoins.ts'

// DECISIONS.md "Time": the checked facts.
const FACTS = [
  ['2026-10-25', '2026-10-24T22:00:00Z', '2026-10-25T23:00:00Z', 100],
  ['2026-11-22', '2026-11-21T23:00:00Z', '2026-11-22T23:00:00Z', 96],
  ['2027-03-28', '2027-03-27T23:00:00Z', '2027-03-28T22:00:00Z', 92],
  ['2027-10-31', '2027-10-30T22:00:00Z', '2027-10-31T23:00:00Z', 100],
] as const

for (const [date, start, end, slots] of FACTS) {
  t.test(`${date} covers [${start}, ${end}) in ${slots} quarter-hours`, async t => {
    t.same(coverageOf(date), { targetDate: date, startUtc: start, endUtc: end, slots })
  })

  t.test(`a Besoins_Agreges for ${date} has ${slots} contiguous puissance_disponible slots`, async t => {
    const cov = coverageOf(date)
    const draft = buildBesoins({
      site: { site_id: 'PRM00000000000001', site_name: 's' },
      needs: { milestones: [], availablePowerKw: new Array(slots).fill(7) },
      coverage: cov,
      emittedBy: 'epx',
    })
    const p = draft.sites[0]!.puissance_disponible
    t.equal(p.length, slots)
    t.equal(p[0]!.debut_utc, start)
    t.equal(p.at(-1)!.fin_utc, end)
    t.ok(p.every((s, i) => Date.parse(s.fin_utc) - Date.parse(s.debut_utc) === 900_000 && (i === 0 || s.debut_utc === p[i - 1]!.fin_utc)),
      'each slot is 900 s and starts where the previous one ends')
  })
}

t.test('only real calendar dates have a coverage', async t => {
  for (const d of ['2026-11-22', '2028-02-29', '0050-01-01', '9999-12-31']) t.ok(isCalendarDate(d), d)
  for (const d of ['2026-02-29', '2026-02-30', '2026-04-31', '2026-13-01', '2026-00-10', '2026-1-05', ' 2026-11-22',
    '2026-11-22T00:00:00Z', '', '2026-11-22\n', 20261122, null]) t.notOk(isCalendarDate(d), JSON.stringify(d))
  t.throws(() => coverageOf('2026-13-01'), RangeError)
})
