import t, { type Test as Tap } from 'tap'
import type { Store } from '../../src/store/open-store.ts'
import { openCompanies, type CompanyRecord } from '../../src/store/companies.ts'
import { openTenure } from '../../src/store/tenure.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openWithdrawals, withdrawInstructions } from '../../src/store/withdrawals.ts'
import { openAudit } from '../../src/store/audit.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import type { InstructionBatch } from '../../src/contract/instruction.ts'
import { programme, siteId } from '../helpers/programme.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

// DECISIONS.md "Tenure: who holds a site, and when".
const P1 = siteId(1)
const P2 = siteId(2)
const CLI = { actor: { kind: 'cli' as const, user: 'operator' } }
const T0 = Date.parse('2026-11-21T08:00:00Z')
const T1 = Date.parse('2026-11-21T09:00:00Z')
const T2 = Date.parse('2026-11-21T10:00:00Z')
const T3 = Date.parse('2026-11-21T11:00:00Z')
const END = Date.parse('2026-11-23T00:00:00Z')
const check = createProgrammeCheck({ maxSites: 5000, requireContiguous: false })

const company = (id: string, perimeter: CompanyRecord['perimeter'], status: CompanyRecord['status'] = 'active'): CompanyRecord =>
  ({ id, name: id, status, certSubject: `CN=${id},O=${id}`, perimeter, createdAt: '2026-11-01T00:00:00Z' })

/** A programme of `companyId` for 2026-11-22, as the door's check turns it into a batch. */
function batchOf (companyId: string, emittedAt: string, sites: readonly string[], kwh = 2.5): InstructionBatch {
  const r = check(Buffer.from(JSON.stringify(programme({ slots: 2, sites, emittedAt, kwh: () => kwh }))), {
    perimeter: 'all', provenance: { receivedAt: emittedAt, companyId, tokenId: 'tok', certFingerprint256: 'F' },
  })
  if (!r.ok) throw new Error(JSON.stringify(r.details))
  return r.batch
}
const idOf = (emittedAt: string) => `ProgrammeSoutirage-2026-11-22-rev-${emittedAt.replace(/[-:]/g, '')}`

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)

  /** A store whose company changes happen at `clock.ms`. */
  async function open (t: Tap): Promise<{ store: Store; clock: { ms: number }; companies: ReturnType<typeof openCompanies> }> {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const clock = { ms: T0 }
    return { store, clock, companies: openCompanies(store, { now: () => clock.ms }) }
  }

  t.test('every change of a perimeter or a status is kept with its instant and its actor, whichever path writes it', async t => {
    const { store, clock, companies } = await open(t)
    await companies.add(company('a', [P1, P2]), CLI)
    clock.ms = T1
    await companies.update('a', c => ({ ...c, perimeter: [P1] }), { actor: { kind: 'console', user: 'alice' } })
    clock.ms = T2
    await companies.update('a', c => ({ ...c, status: 'suspended' }), CLI)
    clock.ms = T3
    await companies.update('a', c => ({ ...c, status: 'active' }), CLI)
    await companies.setPins('a', () => ['AA:BB'])
    const history = openTenure(store).historyOf('a')
    t.same(history.map(h => [h.kind, h.at, h.status, h.perimeter, h.actor]), [
      ['added', '2026-11-21T08:00:00.000Z', 'active', [P1, P2], CLI.actor],
      ['perimeter', '2026-11-21T09:00:00.000Z', 'active', [P1], { kind: 'console', user: 'alice' }],
      ['suspended', '2026-11-21T10:00:00.000Z', 'suspended', [P1], CLI.actor],
      ['resumed', '2026-11-21T11:00:00.000Z', 'active', [P1], CLI.actor],
    ], 'a new pin changes neither perimeter nor status: no entry')
    t.same(openTenure(store).historyOf('ghost'), [], 'no such company: no history')
  })

  t.test('a company stored before the history starts with its record: its createdAt, its perimeter then', async t => {
    const { store, clock, companies } = await open(t)
    await store.writeDurable(() => store.db<CompanyRecord>('companies').putSync('old', company('old', [P1, P2])))
    const tenure = openTenure(store)
    t.same(tenure.historyOf('old').map(h => [h.kind, h.at, h.perimeter]), [['recorded', '2026-11-01T00:00:00Z', [P1, P2]]])
    t.equal(tenure.holderAt(P2, T0), 'old', 'it holds its sites since its creation')
    clock.ms = T1
    await companies.update('old', c => ({ ...c, perimeter: [P1] }), CLI)
    t.same(tenure.historyOf('old').map(h => [h.kind, h.perimeter]), [['recorded', [P1, P2]], ['perimeter', [P1]]], 'its first change keeps the record as it was')
    t.equal(tenure.holderAt(P2, T0), 'old', 'and the past stays as it was')
    t.equal(tenure.holderAt(P2, T1), undefined)
  })

  t.test('a transfer: the holder is the company whose perimeter held the site then, and its spans are clipped', async t => {
    const { store, clock, companies } = await open(t)
    await companies.add(company('a', [P1, P2]), CLI)
    clock.ms = T1
    await companies.update('a', c => ({ ...c, perimeter: [P1] }), CLI)
    clock.ms = T2
    await companies.add(company('b', [P2]), CLI)
    const tenure = openTenure(store)
    t.equal(tenure.holderAt(P2, T0 - 1), undefined, 'before any company')
    t.equal(tenure.holderAt(P2, T0), 'a')
    t.equal(tenure.holderAt(P2, T1 - 1), 'a')
    t.equal(tenure.holderAt(P2, T1), undefined, 'narrowed: nobody holds it')
    t.equal(tenure.holderAt(P2, T2), 'b')
    t.equal(tenure.holderAt(P1, T3), 'a')
    t.same(tenure.heldSpans('a', P2, 0, END), [{ fromMs: T0, untilMs: T1 }])
    t.same(tenure.heldSpans('b', P2, 0, END), [{ fromMs: T2, untilMs: END }])
    t.same(tenure.heldSpans('a', P2, T0 + 5, T3), [{ fromMs: T0 + 5, untilMs: T1 }], 'clipped to the window')
    t.same(tenure.heldSpans('b', P2, T0, T1), [], 'outside the window: none')
  })

  t.test('a suspended company keeps its tenure until another company is given the site', async t => {
    const { store, clock, companies } = await open(t)
    await companies.add(company('a', [P1, P2]), CLI)
    clock.ms = T1
    await companies.update('a', c => ({ ...c, status: 'suspended' }), CLI)
    const tenure = openTenure(store)
    t.equal(tenure.holderAt(P2, T1 + 1), 'a', 'suspension stops its calls, not its tenure')
    clock.ms = T2
    await companies.add(company('b', [P2]), CLI)
    t.equal(tenure.holderAt(P2, T2), 'b', 'given to another company')
    t.equal(tenure.holderAt(P1, T2), 'a', 'its other site stays its own')
    t.same(tenure.heldSpans('a', P2, 0, END), [{ fromMs: T0, untilMs: T2 }])
    await t.rejects(companies.update('a', c => ({ ...c, status: 'active' }), CLI), { code: 'EPX_CONFLICT' }, 'its resume is refused while b holds the site')
  })

  t.test('a resumption takes back a site from a suspended holder; a suspended company never takes one', async t => {
    const { store, clock, companies } = await open(t)
    await companies.add(company('a', [P2]), CLI)
    clock.ms = T1
    await companies.update('a', c => ({ ...c, status: 'suspended' }), CLI)
    await companies.add(company('b', [P2], 'suspended'), CLI)
    const tenure = openTenure(store)
    t.equal(tenure.holderAt(P2, T1), 'a', 'b, suspended, is given nothing')
    clock.ms = T2
    await companies.update('b', c => ({ ...c, status: 'active' }), CLI)
    t.equal(tenure.holderAt(P2, T2), 'b')
    t.same(tenure.heldSpans('b', P2, 0, END), [{ fromMs: T2, untilMs: END }])
  })

  t.test('"all" holds every site', async t => {
    const { store, clock, companies } = await open(t)
    await companies.add(company('a', 'all'), CLI)
    clock.ms = T1
    await companies.update('a', c => ({ ...c, perimeter: [P1] }), CLI)
    const tenure = openTenure(store)
    t.equal(tenure.holderAt(siteId(9), T0), 'a')
    t.equal(tenure.holderAt(siteId(9), T1), undefined)
    t.equal(tenure.holderAt(P1, T1), 'a')
  })

  t.test('a site leaving a perimeter withdraws its former holder\'s instructions; the new holder\'s are in force, never superseded by them', async t => {
    const { store, clock, companies } = await open(t)
    const instructions = openInstructions(store)
    await companies.add(company('a', [P1, P2]), CLI)
    // a's programme emitted_at is later than b's will be: a skew DECISIONS.md "Inbound" allows.
    t.same(await instructions.save(batchOf('a', '2026-11-21T08:04:50Z', [P1, P2]), '2026-11-21T08:05:00Z'), [true, true])
    clock.ms = T1
    await companies.update('a', c => ({ ...c, perimeter: [P1] }), CLI)
    const withdrawn = instructions.get(idOf('2026-11-21T08:04:50Z'), P2)!.state
    t.same(withdrawn, { status: 'withdrawn', at: '2026-11-21T09:00:00.000Z', reason: 'site-left-perimeter' })
    t.equal(instructions.get(idOf('2026-11-21T08:04:50Z'), P1)!.state.status, 'received', 'the site it keeps keeps its instruction')
    t.equal(instructions.effectiveId('2026-11-22', P2), undefined, 'nothing in force on the site that left')
    t.same(openWithdrawals(store).since(0).map(w => [w.instructionId, w.siteId, w.companyId, w.reason]), [[idOf('2026-11-21T08:04:50Z'), P2, 'a', 'site-left-perimeter']])
    t.match(openAudit(store).list({ action: 'instruction.withdrawn' }), [{ actor: CLI.actor, subject: 'a', details: { reason: 'site-left-perimeter', count: 1, sites: [P2] } }])

    clock.ms = T2
    await companies.add(company('b', [P2]), CLI)
    t.same(await instructions.save(batchOf('b', '2026-11-21T08:00:00Z', [P2]), '2026-11-21T10:01:00Z'), [true], 'an earlier emitted_at than the former holder\'s is in force')
    t.equal(instructions.effectiveId('2026-11-22', P2), idOf('2026-11-21T08:00:00Z'))
  })

  t.test('given to another company while suspended: the former holder\'s instructions are withdrawn at the transfer', async t => {
    const { store, clock, companies } = await open(t)
    const instructions = openInstructions(store)
    await companies.add(company('a', [P1, P2]), CLI)
    await instructions.save(batchOf('a', '2026-11-21T07:30:00Z', [P1, P2]), '2026-11-21T07:30:01Z')
    clock.ms = T1
    await companies.update('a', c => ({ ...c, status: 'suspended' }), CLI)
    t.equal(instructions.effectiveId('2026-11-22', P2), idOf('2026-11-21T07:30:00Z'), 'a suspended company\'s instructions stay in force')
    clock.ms = T2
    await companies.add(company('b', [P2]), CLI)
    t.match(instructions.get(idOf('2026-11-21T07:30:00Z'), P2)!.state, { status: 'withdrawn', at: '2026-11-21T10:00:00.000Z', reason: 'site-left-perimeter' })
    t.equal(instructions.effectiveId('2026-11-22', P1), idOf('2026-11-21T07:30:00Z'), 'its other site is untouched')
    t.equal(instructions.effectiveId('2026-11-22', P2), undefined)
  })

  t.test('a day that is over is left as it was', async t => {
    const { store, clock, companies } = await open(t)
    const instructions = openInstructions(store)
    await companies.add(company('a', [P1, P2]), CLI)
    await instructions.save(batchOf('a', '2026-11-21T07:30:00Z', [P2]), '2026-11-21T07:30:01Z')
    clock.ms = Date.parse('2026-11-23T09:00:00Z')
    await companies.update('a', c => ({ ...c, perimeter: [P1] }), CLI)
    t.equal(instructions.get(idOf('2026-11-21T07:30:00Z'), P2)!.state.status, 'received')
    t.equal(openWithdrawals(store).since(0).length, 0)
  })

  t.test('the operator withdraws a company\'s instructions by hand: same effect, audited, reason withdrawn', async t => {
    const { store, companies } = await open(t)
    const instructions = openInstructions(store)
    await companies.add(company('a', [P1, P2]), CLI)
    await instructions.save(batchOf('a', '2026-11-21T07:00:00Z', [P1, P2]), '2026-11-21T07:00:01Z')
    await instructions.save(batchOf('a', '2026-11-21T07:30:00Z', [P2]), '2026-11-21T07:30:01Z')
    const out = await withdrawInstructions(store, { companyId: 'a', siteIds: [P2], actor: CLI.actor, atMs: T1 })
    t.same(out.map(w => [w.instructionId, w.siteId, w.reason]).sort(), [
      [idOf('2026-11-21T07:00:00Z'), P2, 'withdrawn'],
      [idOf('2026-11-21T07:30:00Z'), P2, 'withdrawn'],
    ], 'every one of the site, the superseded one too: none can come back in force')
    t.equal(instructions.effectiveId('2026-11-22', P2), undefined)
    t.equal(instructions.effectiveId('2026-11-22', P1), idOf('2026-11-21T07:00:00Z'), 'another site is not asked for')
    await instructions.markApplied([{ instructionId: idOf('2026-11-21T07:30:00Z'), siteId: P2 }], 7, '2026-11-21T09:00:01Z')
    t.equal(instructions.get(idOf('2026-11-21T07:30:00Z'), P2)!.state.status, 'withdrawn', 'a cycle that reports it later does not bring it back')
    t.match(openAudit(store).list({ action: 'instruction.withdrawn' }), [{ subject: 'a', outcome: 'ok', details: { reason: 'withdrawn', count: 2 } }])
    t.same(await withdrawInstructions(store, { companyId: 'a', siteIds: [P2], actor: CLI.actor, atMs: T2 }), [], 'again: nothing left')
    t.match(openAudit(store).list({ action: 'instruction.withdrawn' }).at(-1), { outcome: 'nothing to withdraw' })
    t.same((await withdrawInstructions(store, { companyId: 'a', fromDate: '2026-11-23', actor: CLI.actor, atMs: T2 })), [], '--from after its days: nothing')
  })
})

t.test('another company\'s instruction in force (perimeters shared before one BSP per site) never supersedes the sender\'s', async t => {
  const { openStore } = storesOf(t, 'lmdb')
  const store = await openStore(t.testdir())
  t.teardown(() => store.close())
  const instructions = openInstructions(store)
  t.same(await instructions.save(batchOf('a', '2026-11-21T08:04:50Z', [P2]), '2026-11-21T08:05:00Z'), [true])
  t.same(await instructions.save(batchOf('b', '2026-11-21T08:00:00Z', [P2]), '2026-11-21T08:06:00Z'), [true], 'b\'s earlier emitted_at is in force')
  t.equal(instructions.get(idOf('2026-11-21T08:04:50Z'), P2)!.state.status, 'superseded')
  t.same(await instructions.save(batchOf('b', '2026-11-21T07:00:00Z', [P2]), '2026-11-21T08:07:00Z'), [false], 'its own later one still supersedes its older one')
})
