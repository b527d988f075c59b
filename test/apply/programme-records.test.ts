import t, { type Test } from 'tap'
import pino from 'pino'
import { openInbound } from '../../src/apply/receive-programme.ts'
import { programmeRecords, type ProgrammeCount } from '../../src/apply/programme-records.ts'
import { openAudit } from '../../src/store/audit.ts'
import { openInstructionFlags } from '../../src/store/instruction-flags.ts'
import type { Caller } from '../../src/auth/caller.ts'
import type { Logger, SolverPort } from '../../src/host/contract.ts'
import { programme, siteId } from '../helpers/programme.ts'
import { seedStore } from '../helpers/seed.ts'

// What is kept of each programme (docs/operating.md): an accepted one's audit record and
// feasibility flags are written in the transaction that saves its instructions, so a
// 202 means all of it is on disk and a failed save leaves none of it.

const caller: Caller = { companyId: 'acme', tokenId: 'tok', certFingerprint256: 'AB:CD', perimeter: 'all' }
const at = new Date('2026-11-21T12:30:00Z')
const ID = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'
/** Site 1 asks 100 kWh in its second quarter-hour: a 400 kW floor over the 50 kW published. */
const overPower = Buffer.from(JSON.stringify(programme({ sites: 2, slots: 2, kwh: (j, i) => (i === 0 && j === 1 ? 100 : 1) })))

async function setup (t: Test) {
  const seeded = seedStore(t)
  await seeded.publish('2026-11-22', siteId(1), { kw: () => 50 })
  const solver: SolverPort = {
    sites: async () => [],
    needs: async () => { throw new Error('unused') },
    enqueueNextCycle: () => {},
    onCycleApplied: () => () => {},
  }
  const lines: Array<{ level: number; msg: string }> = []
  const log = pino({ level: 'info' }, { write: (l: string) => { lines.push(JSON.parse(l)) } }) as unknown as Logger
  const counts: ProgrammeCount[] = []
  const audit = openAudit(seeded.store)
  const flags = openInstructionFlags(seeded.store)
  const inbound = await openInbound({
    store: seeded.store, solver, log, clock: { now: () => at },
    options: { maxSites: 100, requireContiguous: false },
    records: programmeRecords({ audit, flags, feasibility: { revisions: seeded.revisions }, log, counted: c => counts.push(c) }),
  })
  t.teardown(async () => { await inbound.close(); await audit.flush() })
  return { ...seeded, inbound, audit, flags, counts, lines }
}

t.test('a 202 means the audit record and the feasibility flags are already stored, with no wait', async t => {
  const s = await setup(t)
  const outcome = await s.inbound.receive(overPower, caller, at)
  t.equal(outcome.accepted, true)
  const [record] = s.audit.list({ action: 'programme.accepted' })
  t.match(record, { subject: ID, actor: { companyId: 'acme', tokenId: 'tok' }, details: { sites: 2, bytes: overPower.length } })
  t.match(s.flags.get(ID, siteId(1)), { infeasibleSlots: [{ floorKw: 400, availableKw: 50 }] })
  t.equal(s.flags.get(ID, siteId(2)), undefined, 'site 2 has no published needs: not checked')
  t.same(s.counts, [{ accepted: true, companyId: 'acme', sites: 2, flagged: 1, atMs: at.getTime() }])
  t.equal(s.lines.filter(l => l.level === 40 && /asks more than the site can take/.test(l.msg)).length, 1, 'one warn line')
})

t.test('a save that fails half-way leaves no instruction, no audit record of acceptance and no flag: the refusal is audited', async t => {
  const s = await setup(t)
  s.store.faults.failWriteAfter = 6   // the 6 puts of 2 instructions pass, the audit record's fails: the whole transaction is undone
  const outcome = await s.inbound.receive(overPower, caller, at)
  if (outcome.accepted) return t.fail('accepted')
  t.equal(outcome.error.code, 'NO_STORE')
  t.equal(s.instructions.get(ID, siteId(1)), undefined)
  t.same(s.audit.list({ action: 'programme.accepted' }), [])
  t.equal(s.flags.get(ID, siteId(1)), undefined)
  await s.audit.flush()
  t.match(s.audit.list({ action: 'programme.rejected' }), [{ outcome: 'refused 503 NO_STORE' }])
  t.same(s.counts, [{ accepted: false, companyId: 'acme', atMs: at.getTime() }])
})

t.test('an accepted programme costs one durable write, the records included', async t => {
  const s = await setup(t)
  let commits = 0
  const writeDurable = s.store.writeDurable.bind(s.store)
  ;(s.store as { writeDurable: typeof writeDurable }).writeDurable = fn => { commits++; return writeDurable(fn) }
  await s.inbound.receive(overPower, caller, at)
  await new Promise(resolve => setTimeout(resolve, 50))   // past the audit's gathering delay
  t.equal(commits, 1, 'instructions, audit record and flags in one transaction')
})
