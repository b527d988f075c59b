import t, { type Test as Tap } from 'tap'
import { openInstructions } from '../../src/store/instructions.ts'
import { openMetering } from '../../src/store/metering.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import { realisation, realisationCsv, realisationTotals, CSV_HEADER, type HoldersDuring, type RealiseBody } from '../../src/apply/realisation.ts'
import { coverageOf } from '../../src/contract/paris-day.ts'
import type { InstructionBatch } from '../../src/contract/instruction.ts'
import { programme, siteId, type ProgrammeOptions } from '../helpers/programme.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

// DECISIONS.md "In force, quarter-hour by quarter-hour": each quarter-hour judged against the
// instruction in force at its start; a slot received after its quarter-hour began is `late`,
// counted apart; a superseded instruction keeps the verdicts of the hours it governed; a
// company's day covers the quarter-hours it held the site (DECISIONS.md "Tenure").

const DAY = '2026-11-22'
const Q = 900_000
const TOLERANCE = { toleranceKwh: 0.1, tolerancePercent: 5 }
const check = createProgrammeCheck({ maxSites: 5000, requireContiguous: false })
const iso = (ms: number) => new Date(ms).toISOString()

function batch (o: ProgrammeOptions & { receivedAt: string; companyId?: string }): InstructionBatch {
  const r = check(Buffer.from(JSON.stringify(programme(o))), {
    perimeter: 'all',
    provenance: { receivedAt: o.receivedAt, companyId: o.companyId ?? 'acme', tokenId: 'tok_1', certFingerprint256: 'AB:CD' },
  })
  if (!r.ok) throw new Error(JSON.stringify(r.details))
  return r.batch
}

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)

  /** A store with the governing instruction G of `date` (every slot 2.5 kWh, received the day before, applied at cycle 1), and meter values. */
  async function dayOf (t: Tap, date = DAY, kwh: (j: number) => number = () => 2.6) {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const instructions = openInstructions(store)
    const start = Date.parse(coverageOf(date).startUtc)
    const n = (Date.parse(coverageOf(date).endUtc) - start) / Q
    const dayBefore = iso(start - 10 * 3_600_000)
    const g = batch({ targetDate: date, emittedAt: dayBefore.replace('.000Z', 'Z'), receivedAt: dayBefore, kwh: () => 2.5 })
    await instructions.save(g, dayBefore, 'queued')
    await instructions.markApplied([{ instructionId: g.instructionId, siteId: siteId(1) }], 1, iso(start - 10 * 3_600_000 + 1000))
    const metering = openMetering(store, { now: () => start + 2 * 86_400_000, retentionDays: 90000 })
    await metering.report(Array.from({ length: n }, (_, j) => ({ siteId: siteId(1), startUtc: iso(start + j * Q), endUtc: iso(start + (j + 1) * Q), kwh: kwh(j) })))
    const deps = { instructions, metering, tolerance: TOLERANCE }
    /** Another programme of the day, received at `atMs`. */
    const send = async (atMs: number, kwh: (j: number) => number, companyId = 'acme') => {
      const b = batch({ targetDate: date, emittedAt: iso(atMs).replace('.000Z', 'Z'), receivedAt: iso(atMs), kwh, companyId })
      await instructions.save(b, iso(atMs), 'queued')
      return b.instructionId
    }
    return { store, instructions, deps, start, n, g: g.instructionId, send }
  }

  t.test('a programme for today received with 25 of its 96 periods over: those 25 slots are late, the hours keep the verdicts of the instruction that governed them', async t => {
    const { deps, start, g, send } = await dayOf(t, DAY, j => j === 3 ? 2 : 2.6)
    // 06:15 in Paris. Its first 25 slots, had they been judged, were curtailments broken and floors far short.
    const late = await send(start + 25 * Q, j => j < 25 ? (j % 6 === 0 ? 0 : 80) : 2.5)
    const body = realisation(deps, DAY, siteId(1))!
    t.equal(body.instruction_id, late, 'the day\'s instruction is the one in force last')
    t.equal(body.creneaux.length, 96)
    for (let j = 0; j < 25; j++) {
      const c = body.creneaux[j]!
      t.equal(c.instruction_id, g, `slot ${j}: governed by the instruction in force at its start`)
      t.same(c.tardif, { instruction_id: late, energie_programmee_kwh: j % 6 === 0 ? 0 : 80, verdict: 'late' }, `slot ${j}: the late slot, told beside`)
      t.equal(c.energie_programmee_kwh, 2.5)
    }
    t.same(body.creneaux[3], {
      debut_utc: iso(start + 3 * Q).replace('.000Z', 'Z'), fin_utc: iso(start + 4 * Q).replace('.000Z', 'Z'), instruction_id: g, company_id: 'acme',
      energie_programmee_kwh: 2.5, energie_realisee_kwh: 2, verdict: 'short', manque_kwh: 0.5,
      tardif: { instruction_id: late, energie_programmee_kwh: 80, verdict: 'late' },
    }, 'the governing instruction\'s own verdict (a shortfall of its own)')
    for (let j = 25; j < 96; j++) {
      t.notOk('instruction_id' in body.creneaux[j]!, `slot ${j}: the day's instruction`)
      t.notOk('tardif' in body.creneaux[j]!)
    }
    t.same(body.totaux, {
      energie_programmee_kwh: 96 * 2.5, energie_realisee_kwh: 249, manque_kwh: 0.5,
      verdicts: { met: 95, short: 1, curtailment_respected: 0, curtailment_broken: 0, no_data: 0, unconstrained: 0 },
      tardifs: 25,
    }, 'no broken curtailment nor shortfall of the late slots: counted apart')
  })

  t.test('received 4 minutes into a quarter-hour: that quarter-hour is the former instruction\'s too (26 late)', async t => {
    const { deps, start, g, send } = await dayOf(t)
    const late = await send(start + 25 * Q + 4 * 60_000, () => 0)   // 06:19 in Paris
    const body = realisation(deps, DAY, siteId(1))!
    t.equal(body.totaux.tardifs, 26)
    t.match(body.creneaux[25], { instruction_id: g, verdict: 'met', tardif: { instruction_id: late, verdict: 'late' } })
    t.match(body.creneaux[26], { energie_programmee_kwh: 0, verdict: 'curtailment_broken' })
    t.notOk('tardif' in body.creneaux[26]!)
  })

  t.test('with nothing in force before it, a late slot leaves its quarter-hour unconstrained', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const instructions = openInstructions(store)
    const start = Date.parse(coverageOf(DAY).startUtc)
    const at = iso(start + 10 * Q)
    await instructions.save(batch({ emittedAt: at.replace('.000Z', 'Z'), receivedAt: at, kwh: () => 1 }), at)
    const metering = openMetering(store, { now: () => start + 86_400_000, retentionDays: 90000 })
    const body = realisation({ instructions, metering, tolerance: TOLERANCE }, DAY, siteId(1))!
    t.match(body.creneaux[9], { instruction_id: null, energie_programmee_kwh: null, verdict: 'unconstrained', tardif: { energie_programmee_kwh: 1, verdict: 'late' } })
    t.match(body.creneaux[10], { energie_programmee_kwh: 1, verdict: 'no_data' })
    t.same(body.totaux.verdicts, { met: 0, short: 0, curtailment_respected: 0, curtailment_broken: 0, no_data: 86, unconstrained: 10 })
    t.equal(body.totaux.tardifs, 10)
  })

  t.test('a superseded instruction keeps the verdicts of the hours it governed, through several changes', async t => {
    const { deps, start, g, send } = await dayOf(t, DAY, j => j < 40 ? 2.6 : 0.05)
    const second = await send(start + 20 * Q, () => 3)      // 2.6 against 3: short
    const third = await send(start + 40 * Q, () => 0)       // a curtailment, respected
    const body = realisation(deps, DAY, siteId(1))!
    t.equal(body.instruction_id, third)
    const governed = body.creneaux.map(c => c.instruction_id === undefined ? body.instruction_id : c.instruction_id)
    t.same([governed[0], governed[19], governed[20], governed[39], governed[40], governed[95]], [g, g, second, second, third, third])
    t.same(body.totaux.verdicts, { met: 20, short: 20, curtailment_respected: 56, curtailment_broken: 0, no_data: 0, unconstrained: 0 })
    t.equal(body.totaux.manque_kwh, 20 * 0.4)
    t.equal(body.totaux.tardifs, 40, 'the second one\'s first 20 slots, then the third one\'s first 40 (the latest told)')
    t.equal(body.creneaux[5]!.tardif?.instruction_id, third)
    t.equal(body.creneaux[25]!.tardif?.instruction_id, third)
  })

  for (const [date, slots] of [['2027-03-28', 92], ['2026-10-25', 100]] as const) {
    t.test(`a DST day, ${date}: ${slots} quarter-hours, each judged by the instruction in force at its start`, async t => {
      const { deps, start, g, send } = await dayOf(t, date)
      const late = await send(start + 10 * Q, () => 2.5)
      const body = realisation(deps, date, siteId(1))!
      t.equal(body.creneaux.length, slots, `${date}: ${slots} quarter-hours`)
      t.equal(body.creneaux.at(-1)!.fin_utc, coverageOf(date).endUtc)
      t.same(body.creneaux.slice(0, 10).map(c => c.instruction_id), Array(10).fill(g), date)
      t.equal(body.totaux.tardifs, 10)
      t.equal(body.totaux.verdicts.met, slots)
      t.equal(body.instruction_id, late)
    })
  }

  t.test('a company reads its own instructions only; the operator sees each quarter-hour with its holder', async t => {
    const { deps, start, g, send } = await dayOf(t)
    const others = await send(start + 48 * Q, () => 1, 'other')   // one BSP per site not yet enforced: another company's later programme
    const acme = realisation(deps, DAY, siteId(1), 'acme')!
    t.equal(acme.instruction_id, g)
    t.notOk(JSON.stringify(acme).includes(others), 'never another company\'s id')
    t.match(acme.creneaux[47], { verdict: 'met' })
    t.match(acme.creneaux[48], { instruction_id: null, energie_programmee_kwh: null, verdict: 'unconstrained' })
    t.notOk(acme.creneaux.some(c => 'company_id' in c), 'a company is not told holders')
    const operator = realisation(deps, DAY, siteId(1))!
    t.same([operator.creneaux[47]!.company_id, operator.creneaux[48]!.company_id], ['acme', 'other'])
  })

  t.test('tenure: a company\'s day is the quarter-hours that began while it held the site', async t => {
    const { deps, start, g } = await dayOf(t)
    const handover = start + 40 * Q + 7 * 60_000   // a quarter-hour begun before it stays the former holder's
    const holders: HoldersDuring = (site, fromMs, untilMs) => site === siteId(1)
      ? [{ companyId: 'acme', fromMs, untilMs: handover }, { companyId: 'newco', fromMs: handover, untilMs }]
      : []
    const withTenure = { ...deps, holders }
    const acme = realisation(withTenure, DAY, siteId(1), 'acme')!
    t.equal(acme.creneaux.length, 41)
    t.equal(acme.creneaux.at(-1)!.debut_utc, iso(start + 40 * Q).replace('.000Z', 'Z'))
    t.equal(acme.totaux.energie_realisee_kwh, Math.round(41 * 2.6 * 1000) / 1000, 'no meter value of another\'s tenure')
    const newco = realisation(withTenure, DAY, siteId(1), 'newco')!
    t.equal(newco.creneaux.length, 55)
    t.equal(newco.instruction_id, null)
    t.same(newco.totaux.verdicts.unconstrained, 55)
    t.equal(realisation(withTenure, DAY, siteId(1), 'nobody'), undefined, 'never held: nothing to compare')
    const operator = realisation(withTenure, DAY, siteId(1))!
    t.same([operator.creneaux[40]!.company_id, operator.creneaux[41]!.company_id], ['acme', 'newco'])
    t.equal(operator.instruction_id, g)
  })

  t.test('the totals alone (what a list of many sites reads) are the body\'s, without its quarter-hours', async t => {
    const { deps, start, send } = await dayOf(t, DAY, j => j % 3 ? 2.6 : 1)
    await send(start + 2 * Q, () => 7)
    const { creneaux, ...totals } = realisation(deps, DAY, siteId(1))!
    t.equal(creneaux.length, 96)
    t.ok(totals.totaux.verdicts.short > 0 && totals.totaux.tardifs > 0, 'short and late quarter-hours among them')
    t.same(realisationTotals(deps, DAY, siteId(1)), totals)
    t.same(realisationTotals(deps, DAY, siteId(1), 'acme'), totals, 'a company\'s')
    t.equal(realisationTotals(deps, DAY, siteId(2)), undefined, 'nothing to compare: none')
  })

  t.test('the CSV: each row names the instruction in force, its holder, and the late slot apart', async t => {
    const { deps, start, g, send } = await dayOf(t)
    const late = await send(start + 2 * Q, () => 7)
    const rows = realisationCsv([realisation(deps, DAY, siteId(1)) as RealiseBody]).trimEnd().split('\r\n').map(l => l.split(','))
    t.same(rows[0], [...CSV_HEADER])
    t.same(rows[1]!.slice(2), [g, iso(start).replace('.000Z', 'Z'), iso(start + Q).replace('.000Z', 'Z'), '2.5', '2.6', 'met', '', 'acme', late, '7'])
    t.same(rows[3]!.slice(2, 3).concat(rows[3]!.slice(9)), [late, 'acme', '', ''])
    const programmed = rows.slice(1).reduce((a, r) => a + Number(r[5] || 0), 0)
    t.equal(programmed, 2 * 2.5 + 94 * 7, 'the programmed column sums to the total: no late slot in it')
  })
})
