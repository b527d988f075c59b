import t, { type Test } from 'tap'
import { instructionSummary, instructionViewsOf, listInstructionViews, slotConstraints } from '../../src/apply/instruction-view.ts'
import { siteId } from '../helpers/programme.ts'
import { seedStore } from '../helpers/seed.ts'

const A = 'ProgrammeSoutirage-2026-11-22-rev-20261121T100000Z'
const B = 'ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z'
const C = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'

async function seeded (t: Test) {
  const s = seedStore(t)
  // Site 1: acme at 10:00, beta at 11:00, acme at 12:00 (effective); site 2: acme at 10:00 only.
  await s.receive({ emittedAt: '2026-11-21T10:00:00Z', sites: 2, slots: 3, kwh: j => j }, 'acme')
  await s.receive({ emittedAt: '2026-11-21T11:00:00Z', sites: 1, slots: 2 }, 'beta')
  await s.receive({ emittedAt: '2026-11-21T12:00:00Z', sites: 1, slots: 1 }, 'acme')
  return s
}

t.test('each superseded instruction names the next later one of its site and day', async t => {
  const s = await seeded(t)
  const views = listInstructionViews(s.instructions)
  t.same(views.map(v => [v.instruction.instructionId, v.instruction.siteId, v.instruction.state.status, v.supersededBy?.instructionId]), [
    [A, siteId(1), 'superseded', B],
    [A, siteId(2), 'received', undefined],
    [B, siteId(1), 'superseded', C],
    [C, siteId(1), 'received', undefined],
  ])
  t.same(views[0]!.supersededBy, { instructionId: B, companyId: 'beta' })
})

t.test('a company filter keeps its instructions, and their superseders from the whole pair', async t => {
  const s = await seeded(t)
  const views = listInstructionViews(s.instructions, { companyId: 'acme', siteIds: [siteId(1)] })
  t.same(views.map(v => [v.instruction.instructionId, v.supersededBy?.instructionId]), [[A, B], [C, undefined]])
  t.same(listInstructionViews(s.instructions, { targetDate: '2026-11-23' }), [])
})

t.test('one id gives its sites; a text that is no instruction id gives nothing', async t => {
  const s = await seeded(t)
  t.same(instructionViewsOf(s.instructions, A).map(v => v.instruction.siteId), [siteId(1), siteId(2)])
  t.same(instructionViewsOf(s.instructions, A, { companyId: 'beta' }), [])
  t.same(instructionViewsOf(s.instructions, 'not-an-id'), [])
})

t.test('slots become floors (energy > 0) and curtailments (energy 0), with their energy', async t => {
  const s = await seeded(t)
  const [v] = instructionViewsOf(s.instructions, A, { siteIds: [siteId(2)] })
  t.same(slotConstraints(v!.instruction), [
    { startUtc: '2026-11-21T23:00:00Z', endUtc: '2026-11-21T23:15:00Z', maxKw: 0, energyKwh: 0 },
    { startUtc: '2026-11-21T23:15:00Z', endUtc: '2026-11-21T23:30:00Z', minKw: 4, energyKwh: 1 },
    { startUtc: '2026-11-21T23:30:00Z', endUtc: '2026-11-21T23:45:00Z', minKw: 8, energyKwh: 2 },
  ])
  t.match(instructionSummary(listInstructionViews(s.instructions)[0]!), { status: 'superseded', superseded_by: B, company_id: 'acme', periods_count: 3 })
})
