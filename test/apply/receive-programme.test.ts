import t, { type Test } from 'tap'
import pino from 'pino'
import { openStore, type StoreFaults } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openInbound, receiveProgramme, type ReceiveParts } from '../../src/apply/receive-programme.ts'
import { createProgrammeReader } from '../../src/apply/read-programme.ts'
import { tenancyGuard } from '../../src/apply/tenancy-guard.ts'
import { openCompanies } from '../../src/store/companies.ts'
import type { Caller } from '../../src/auth/caller.ts'
import type { Logger, SolverInput, SolverPort } from '../../src/host/contract.ts'
import { programme, siteId, type ProgrammeOptions } from '../helpers/programme.ts'

// The inbound use case without HTTP: a programme's bytes and its caller → one outcome,
// accepted (stored, queued, a receipt) or refused (a catalogue error), never a throw.

const caller: Caller = { companyId: 'acme', tokenId: 'tok', certFingerprint256: 'AB:CD', perimeter: [siteId(1), siteId(2)] }
const at = new Date('2026-11-21T12:30:00Z')
const bytes = (o: ProgrammeOptions = {}) => Buffer.from(JSON.stringify(programme({ slots: 2, ...o })))

async function setup (t: Test, o: { offThreadBytes?: number; faults?: StoreFaults; reads?: boolean } = {}) {
  const dir = t.testdir()
  const faults: StoreFaults = o.faults ?? {}
  const store = openStore(dir, { faults })
  t.teardown(() => store.close())
  const queue: SolverInput[] = []
  const listening = new Set<unknown>()
  const solver: SolverPort = {
    sites: async () => [],
    needs: async () => { throw new Error('unused') },
    enqueueNextCycle: inputs => { queue.push(...inputs) },
    onCycleApplied: l => { listening.add(l); return () => listening.delete(l) },
  }
  const log = pino({ level: 'silent' }) as unknown as Logger
  const open = () => openInbound({
    store, solver, log, clock: { now: () => at },
    options: { maxSites: 100, requireContiguous: false, offThreadBytes: o.offThreadBytes }, reads: o.reads,
  })
  const inbound = await open()
  t.teardown(() => inbound.close())
  return { inbound, open, queue, faults, listening, instructions: openInstructions(store) }
}

t.test('a valid programme is accepted: stored with its sender, queued, and its receipt names each instruction', async t => {
  const { inbound, queue, instructions } = await setup(t)
  const outcome = await inbound.receive(bytes({ sites: 2 }), caller, at)
  if (!outcome.accepted) return t.fail(String(outcome.error))
  t.equal(outcome.instructionId, 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z')
  t.same(outcome.receipt.instructions, [
    { instruction_id: outcome.instructionId, site_id: siteId(1), periods_count: 2, status: 'queued' },
    { instruction_id: outcome.instructionId, site_id: siteId(2), periods_count: 2, status: 'queued' },
  ])
  t.equal(outcome.receipt.count, 2)
  t.equal(outcome.receipt.message, '2 instruction(s) persisted; 2 will be applied at the next solver cycle')
  t.same(queue.map(i => i.siteId), [siteId(1), siteId(2)])
  const stored = instructions.get(outcome.instructionId, siteId(1))!
  t.match(stored, { receivedAt: '2026-11-21T12:30:00.000Z', companyId: 'acme', tokenId: 'tok', certFingerprint256: 'AB:CD' })
})

t.test('the receipt says which instructions are superseded, naming the one in force only when it is the caller\'s own', async t => {
  const { inbound, queue } = await setup(t)
  const newer = await inbound.receive(bytes({ sites: 2, emittedAt: '2026-11-21T12:00:00Z' }), caller, at)
  const older = await inbound.receive(bytes({ sites: [siteId(2), siteId(1)], emittedAt: '2026-11-21T11:00:00Z' }), caller, at)
  if (!newer.accepted || !older.accepted) return t.fail('accepted')
  t.same(older.receipt.instructions, [
    { instruction_id: older.instructionId, site_id: siteId(2), periods_count: 2, status: 'superseded', superseded_by: newer.instructionId },
    { instruction_id: older.instructionId, site_id: siteId(1), periods_count: 2, status: 'superseded', superseded_by: newer.instructionId },
  ])
  t.equal(older.receipt.message, '2 instruction(s) persisted; 0 will be applied at the next solver cycle; 2 are superseded by a later programme')
  t.equal(queue.length, 2, 'only the newer one is queued')
  // Data from before one BSP per site: another company's instruction in force, with a later
  // emitted_at. DECISIONS.md "Tenure": it is never eligible against the sender's.
  const other: Caller = { ...caller, companyId: 'other' }
  const third = await inbound.receive(bytes({ sites: 2, emittedAt: '2026-11-21T11:30:00Z' }), other, at)
  if (!third.accepted) return t.fail('accepted')
  t.same(third.receipt.instructions.map(i => i.status), ['queued', 'queued'])
  t.notOk(JSON.stringify(third.receipt).includes(newer.instructionId), 'another company\'s id is never named')
  t.equal(third.receipt.message, '2 instruction(s) persisted; 2 will be applied at the next solver cycle')
  t.equal(queue.length, 4, 'and queued')
})

t.test('opened for another thread\'s door (reads: false), it still reads a programme it is handed', async t => {
  const { inbound, queue } = await setup(t, { reads: false })
  const outcome = await inbound.receive(bytes({ sites: 2 }), caller, at)
  t.ok(outcome.accepted, 'its reader made on first use')
  t.same(queue.map(i => i.siteId), [siteId(1), siteId(2)])
  const refused = await inbound.receive(bytes({ sites: 3 }), caller, at)
  t.notOk(refused.accepted, 'with the same validation')
})

t.test('an invalid programme is refused with the 400 and a JSON Pointer per violation; nothing stored or queued', async t => {
  const { inbound, queue, instructions } = await setup(t)
  const outcome = await inbound.receive(bytes({ sites: 3 }), caller, at)   // site 3 is outside the perimeter
  if (outcome.accepted) return t.fail('accepted')
  t.equal(outcome.error.code, 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST')
  t.equal(outcome.error.status, 400)
  t.same(Object.keys(outcome.error.details ?? {}), ['/sites/2/site_id'])
  t.same(queue, [])
  t.same(instructions.list(), [])
})

t.test('bytes that are not JSON are refused saying where they broke', async t => {
  const { inbound } = await setup(t)
  const outcome = await inbound.receive(Buffer.from('{"sites": [1,'), caller, at)
  if (outcome.accepted) return t.fail('accepted')
  t.match(outcome.error.details?.[''], /not valid JSON at line 1, column 14/)
})

t.test('a store that cannot write refuses with NO_STORE and nothing queued', async t => {
  const { inbound, queue, faults } = await setup(t)
  faults.unavailable = true
  const outcome = await inbound.receive(bytes(), caller, at)
  faults.unavailable = false
  if (outcome.accepted) return t.fail('accepted')
  t.equal(outcome.error.code, 'NO_STORE')
  t.equal(outcome.error.status, 503)
  t.same(queue, [])
})

t.test('a big body read off the thread gives the same outcome as a small one', async t => {
  const inline = await setup(t)
  const worker = await setup(t, { offThreadBytes: 0 })
  const a = await inline.inbound.receive(bytes({ sites: 2 }), caller, at)
  const b = await worker.inbound.receive(bytes({ sites: 2 }), caller, at)
  t.same(b, a)
  const bad = await worker.inbound.receive(bytes({ sites: 3 }), caller, at)
  t.equal(bad.accepted, false)
})

t.test('opening queues again what is effective, so a restart loses nothing', async t => {
  const { inbound, open, queue } = await setup(t)
  await inbound.receive(bytes({ sites: 2 }), caller, at)
  await inbound.close()
  queue.length = 0
  const again = await open()
  t.teardown(() => again.close())
  t.same(queue.map(i => i.siteId), [siteId(1), siteId(2)])
})

t.test('a store that cannot answer at opening fails the opening and leaves nothing listening', async t => {
  const { inbound, open, faults, listening } = await setup(t)
  await inbound.close()
  t.equal(listening.size, 0)
  faults.unavailable = true
  await t.rejects(open(), { code: 'NO_STORE' })
  faults.unavailable = false
  t.equal(listening.size, 0, 'the enqueuer it made no longer hears the solver')
})

// DECISIONS.md "Tenure: who holds a site, and when": the perimeter the door checked may change before the save.
t.test('a site that leaves the perimeter while the programme is read refuses it at the save, nothing stored', async t => {
  const store = openStore(t.testdir())
  t.teardown(() => store.close())
  const companies = openCompanies(store, { now: () => at.getTime() })
  await companies.add({ id: 'acme', name: 'ACME', status: 'active', certSubject: 'CN=acme,O=ACME', perimeter: [siteId(1), siteId(2)], createdAt: '2026-11-01T00:00:00Z' })
  const real = createProgrammeReader({ maxSites: 100, requireContiguous: false })
  t.teardown(() => real.close())
  let narrow = true
  const instructions = openInstructions(store)
  const parts: ReceiveParts = {
    reader: {
      async read (b, ctx) {
        // The operator narrows the perimeter after the door's check, before the save.
        if (narrow) await companies.update('acme', c => ({ ...c, perimeter: [siteId(1)] }))
        return real.read(b, ctx)
      },
      close: async () => {},
    },
    instructions,
    enqueuer: { enqueueBatch: async () => {} },
    tenancy: tenancyGuard(store),
  }
  const refused = await receiveProgramme(bytes({ sites: 2 }), caller, at, parts)
  if (refused.accepted) return t.fail('accepted')
  t.equal(refused.error.code, 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST')
  t.same(Object.keys(refused.error.details ?? {}), ['/sites/1/site_id'], 'the site it no longer holds, at its pointer')
  t.same(instructions.list(), [], 'nothing stored')
  narrow = false
  const accepted = await receiveProgramme(bytes({ sites: [siteId(1)] }), { ...caller, perimeter: [siteId(1)] }, at, parts)
  t.ok(accepted.accepted, 'a programme of the sites it holds is accepted')
})
