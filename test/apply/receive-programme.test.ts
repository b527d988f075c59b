import t, { type Test } from 'tap'
import pino from 'pino'
import { openStore, type StoreFaults } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openInbound, receiveProgramme, type ReceiveParts } from '../../src/apply/receive-programme.ts'
import { storageQuota } from '../../src/apply/quota.ts'
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

async function setup (t: Test, o: { offThreadBytes?: number; faults?: StoreFaults; reads?: boolean; now?: Date; quotaBytes?: number } = {}) {
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
    store, solver, log, clock: { now: () => o.now ?? at },
    options: { maxSites: 100, requireContiguous: false, offThreadBytes: o.offThreadBytes }, reads: o.reads,
    ...(o.quotaBytes === undefined ? {} : { quota: storageQuota(store, o.quotaBytes) }),
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
  t.equal(older.receipt.message, '2 instruction(s) persisted; none will be applied; 2 are superseded by a later programme')
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

/** Today's programme (the clock's Paris day), whose site 1 has only its first `slots` quarter-hours (default: the whole day for every site). */
function today (targetDate: string, emittedAt: string, o: { sites?: number; firstSiteSlots?: number } = {}): Buffer {
  const body = programme({ targetDate, emittedAt, sites: o.sites ?? 1 })
  if (o.firstSiteSlots !== undefined) body.sites[0]!.energie_programmee.length = o.firstSiteSlots
  return Buffer.from(JSON.stringify(body))
}

t.test('a programme for today whose every period had begun before reception is late: stored, never handed, never said to be applied', async t => {
  const { inbound, queue, instructions } = await setup(t)
  // 12:30Z: the day began at 23:00Z the day before; its first 8 quarter-hours are long over.
  const outcome = await inbound.receive(today('2026-11-21', '2026-11-21T12:00:00Z', { firstSiteSlots: 8 }), caller, at)
  if (!outcome.accepted) return t.fail(String(outcome.error))
  t.same(outcome.receipt.instructions, [{ instruction_id: outcome.instructionId, site_id: siteId(1), periods_count: 8, status: 'late' }])
  t.equal(outcome.receipt.message, '1 instruction(s) persisted; none will be applied; 1 is late: every period had begun before it was received (kept, never applied)')
  t.notMatch(outcome.receipt.message, /will be applied at/)
  t.same(queue, [], 'nothing handed to the solver')
  const stored = instructions.get(outcome.instructionId, siteId(1))!
  t.equal(stored.slots.length, 8, 'kept whole (audit)')
  t.equal(stored.state.status, 'received', 'its status does not say queued: it never was')
})

t.test('a programme for today partly over is queued, its receipt counting the periods over; beside a late site, each says its own', async t => {
  const { inbound, queue, instructions } = await setup(t)
  const outcome = await inbound.receive(today('2026-11-21', '2026-11-21T12:00:00Z', { sites: 2, firstSiteSlots: 54 }), caller, at)
  if (!outcome.accepted) return t.fail(String(outcome.error))
  t.same(outcome.receipt.instructions, [
    { instruction_id: outcome.instructionId, site_id: siteId(1), periods_count: 54, status: 'late' },
    { instruction_id: outcome.instructionId, site_id: siteId(2), periods_count: 96, status: 'queued', periods_over: 54 },
  ])
  t.equal(outcome.receipt.message, '2 instruction(s) persisted; 1 will be applied at the next solver cycle; ' +
    '1 is late: every period had begun before it was received (kept, never applied); 54 period(s) already over are kept but not fed to the solver')
  t.same(queue.map(i => [i.siteId, i.periods.length, i.periods[0]!.startUtc]), [[siteId(2), 42, '2026-11-21T12:30:00Z']], 'only the queued site, its periods not over')
  t.equal(instructions.get(outcome.instructionId, siteId(1))!.state.status, 'received')
  t.equal(instructions.get(outcome.instructionId, siteId(2))!.state.status, 'queued')
})

t.test('late means every period had begun, not ended: a last quarter-hour running at reception is not fed, one starting then is (DST day, 100 quarter-hours)', async t => {
  // 2026-10-25 covers [2026-10-24T22:00Z, 2026-10-25T23:00Z); at 12:05Z its 57th quarter-hour (12:00Z) runs.
  const now = new Date('2026-10-25T12:05:00Z')
  const { inbound, queue } = await setup(t, { now })
  const running = await inbound.receive(today('2026-10-25', '2026-10-25T12:00:00Z', { firstSiteSlots: 57 }), caller, now)
  if (!running.accepted) return t.fail(String(running.error))
  t.same(running.receipt.instructions.map(i => [i.status, i.periods_count, i.periods_over]), [['late', 57, undefined]])
  t.same(queue, [])
  const at1200 = new Date('2026-10-25T12:00:00Z')
  const starting = await inbound.receive(today('2026-10-25', '2026-10-25T12:00:00Z', { firstSiteSlots: 57 }), caller, at1200)
  if (!starting.accepted) return t.fail(String(starting.error))
  t.same(starting.receipt.instructions.map(i => [i.status, i.periods_count, i.periods_over]), [['queued', 57, 56]], 'received as its last quarter-hour starts')
  t.equal(starting.receipt.message, '1 instruction(s) persisted; 1 will be applied at the next solver cycle; 56 period(s) already over are kept but not fed to the solver')
  const whole = await inbound.receive(today('2026-10-25', '2026-10-25T12:01:00Z'), caller, now)
  if (!whole.accepted) return t.fail(String(whole.error))
  t.same(whole.receipt.instructions.map(i => [i.status, i.periods_count, i.periods_over]), [['queued', 100, 56]], 'the whole 100-quarter-hour day: the 56 over are counted')
})

t.test('on the 92-quarter-hour day, a whole-day programme received in its last quarter-hour is late', async t => {
  // 2027-03-28 covers [2027-03-27T23:00Z, 2027-03-28T22:00Z); 21:50Z is 23:50 in Paris, within the last quarter-hour.
  const now = new Date('2027-03-28T21:50:00Z')
  const { inbound, queue } = await setup(t, { now })
  const outcome = await inbound.receive(today('2027-03-28', '2027-03-28T21:45:00Z', { sites: 2 }), caller, now)
  if (!outcome.accepted) return t.fail(String(outcome.error))
  t.same(outcome.receipt.instructions.map(i => [i.status, i.periods_count]), [['late', 92], ['late', 92]])
  t.equal(outcome.receipt.message, '2 instruction(s) persisted; none will be applied; 2 are late: every period had begun before they were received (kept, never applied)')
  t.same(queue, [])
})

t.test('an empty programme for today is never late: it clears the site\'s constraints, and is handed', async t => {
  const { inbound, queue } = await setup(t)
  const outcome = await inbound.receive(today('2026-11-21', '2026-11-21T12:00:00Z', { firstSiteSlots: 0 }), caller, at)
  if (!outcome.accepted) return t.fail(String(outcome.error))
  t.same(outcome.receipt.instructions.map(i => [i.status, i.periods_count]), [['queued', 0]])
  t.same(queue.map(i => [i.siteId, i.periods.length]), [[siteId(1), 0]])
})

t.test('a late programme that a later one outranks is said late: even alone it would govern none of its periods', async t => {
  const { inbound } = await setup(t)
  await inbound.receive(today('2026-11-21', '2026-11-21T12:00:00Z'), caller, at)
  const older = await inbound.receive(today('2026-11-21', '2026-11-21T11:00:00Z', { firstSiteSlots: 4 }), caller, at)
  if (!older.accepted) return t.fail(String(older.error))
  t.same(older.receipt.instructions.map(i => i.status), ['late'])
  t.equal(older.receipt.message, '1 instruction(s) persisted; none will be applied; 1 is late: every period had begun before it was received (kept, never applied)')
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

// DECISIONS.md "Rate limits and quotas": the bytes charged are the body's, wherever it was read.
t.test('a big body read off the thread is charged its whole size to the storage quota', async t => {
  const body = bytes({ sites: 2 })
  const size = body.length
  const { inbound } = await setup(t, { offThreadBytes: 0, quotaBytes: 2 * size - 1 })
  t.equal((await inbound.receive(body, caller, at)).accepted, true)
  const second = await inbound.receive(bytes({ sites: 2, emittedAt: '2026-11-21T12:01:00Z' }), caller, at)
  t.match(second, { accepted: false, error: { code: 'QUOTA_EXCEEDED', message: new RegExp(`: ${size} bytes .*of programmes accepted today`) } }, 'the first counted in full, the second would cross')
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
