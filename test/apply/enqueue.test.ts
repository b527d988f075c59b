import t, { type Test } from 'tap'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import pino from 'pino'
import { openStore } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { createEnqueuer } from '../../src/apply/enqueue.ts'
import { openWithdrawals, withdrawInstructions } from '../../src/store/withdrawals.ts'
import { saveAndQueue } from '../../src/apply/receive-programme.ts'
import type { CycleApplied, Logger, SolverInput, SolverPort } from '../../src/host/contract.ts'
import { toInstructionBatch } from '../../src/apply/to-instructions.ts'
import type { ProgrammeSoutirage } from '../../src/contract/programme-soutirage.ts'
import { instructionBatch, programme, siteId } from '../helpers/programme.ts'
import { recordingLog } from '../helpers/recording-log.ts'

const batch = instructionBatch

function setup (t: Test, solverOverrides: Partial<SolverPort> = {}, o: { log?: Logger; now?: () => Date } = {}) {
  const store = openStore(t.testdir())
  t.teardown(() => store.close())
  const instructions = openInstructions(store)
  const queue: SolverInput[] = []
  const listeners = new Set<(r: CycleApplied) => void>()
  const solver: SolverPort = {
    sites: async () => [],
    needs: async () => { throw new Error('unused') },
    enqueueNextCycle: inputs => { queue.push(...inputs) },
    onCycleApplied: l => { listeners.add(l); return () => listeners.delete(l) },
    ...solverOverrides,
  }
  const log = o.log ?? pino({ level: 'silent' }) as unknown as Logger
  const clock = { now: o.now ?? (() => new Date('2026-11-21T12:30:00Z')) }
  const enqueuer = createEnqueuer({ solver, instructions, clock, log })
  t.teardown(() => enqueuer.close())
  const cycle = (n: number) => { const r = { cycle: n, at: '2026-11-21T12:31:00.000Z', inputs: queue.splice(0).map(i => ({ instructionId: i.instructionId, siteId: i.siteId })) }; for (const l of listeners) l(r); return r }
  const settle = () => store.writeDurable(() => {})   // writes are ordered: this one commits after the status writes
  return { store, instructions, enqueuer, queue, cycle, settle, listeners }
}

t.test('a saved programme reaches the queue with its kW periods, then queued, then applied with the cycle', async t => {
  const { instructions, enqueuer, queue, cycle, settle } = setup(t)
  const receipt = await saveAndQueue(batch({ sites: 2, kwh: () => 1 }), '2026-11-21T12:30:00.000Z', { instructions, enqueuer })
  t.equal(receipt.count, 2)
  t.same(queue.map(i => [i.siteId, i.periods.map(p => p.minKw)]), [[siteId(1), [4, 4]], [siteId(2), [4, 4]]])
  // `queued` is written a few milliseconds later, in one write with its neighbours.
  for (let i = 0; i < 300 && instructions.list()[0]!.state.status !== 'queued'; i++) await new Promise(r => setTimeout(r, 10))
  t.equal(instructions.list()[0]!.state.status, 'queued')
  cycle(12)
  await settle()
  t.same(instructions.list().map(i => [i.state.status, i.state.cycle]), [['applied', 12], ['applied', 12]])
})

t.test('an input\'s periods are built when the solver first reads them, once; a copy of the input carries them', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  await saveAndQueue(batch({ sites: 1, kwh: k => k }), '2026-11-21T12:30:00.000Z', { instructions, enqueuer })
  const [input] = queue
  t.type(Object.getOwnPropertyDescriptor(input, 'periods')?.get, 'function', 'an accessor: nothing built at the hand-over')
  const first = input!.periods
  t.equal(input!.periods, first, 'built once, then the same array')
  t.same(first, [
    { startUtc: '2026-11-21T23:00:00Z', endUtc: '2026-11-21T23:15:00Z', maxKw: 0 },
    { startUtc: '2026-11-21T23:15:00Z', endUtc: '2026-11-21T23:30:00Z', minKw: 4 },
  ])
  t.same(JSON.parse(JSON.stringify(input)).periods, first, 'JSON carries them')
  t.same(structuredClone(input).periods, first, 'so does a structured clone')
  t.same(Object.keys(input!), ['instructionId', 'siteId', 'targetDate', 'periods'], 'its fields, and nothing else, are enumerable')
})

t.test('every input shares one getter: no closure is made per input handed to the solver', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  await saveAndQueue(batch({ sites: 3, kwh: k => k }), '2026-11-21T12:30:00.000Z', { instructions, enqueuer })
  const getters = new Set(queue.map(i => Object.getOwnPropertyDescriptor(i, 'periods')?.get))
  t.equal(queue.length, 3)
  t.equal(getters.size, 1, 'an object literal\'s `get periods ()` makes one per input, and its accessor pair in the old generation')
  t.not(queue[0]!.periods, queue[1]!.periods, 'each input builds its own periods all the same')
})

t.test('a received programme is queued in the same write that stores it, before the receipt', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  await saveAndQueue(batch({ sites: 2 }), '2026-11-21T12:30:00.000Z', { instructions, enqueuer })
  t.equal(queue.length, 2)
  t.same(instructions.list().map(i => i.state), [{ status: 'queued', at: '2026-11-21T12:30:00.000Z' }, { status: 'queued', at: '2026-11-21T12:30:00.000Z' }])
})

t.test('a site superseded between the commit and the hand-over is not fed', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  const older = batch({ emittedAt: '2026-11-21T10:00:00Z' })
  const effective = await instructions.save(older, '2026-11-21T12:00:00.000Z', 'queued')
  await instructions.save(batch({ emittedAt: '2026-11-21T11:00:00Z' }), '2026-11-21T12:00:00.000Z', 'queued')
  await enqueuer.enqueueBatch(older, effective, 'queued')
  t.same(queue, [], 'read back: another save ran since')
  t.equal(instructions.get(older.instructionId, siteId(1))!.state.status, 'superseded')
})

t.test('a superseded instruction is not fed, and a cycle cannot make it applied', async t => {
  const { instructions, enqueuer, queue, cycle, settle } = setup(t)
  const newer = batch({ emittedAt: '2026-11-21T11:00:00Z' })
  const older = batch({ emittedAt: '2026-11-21T10:00:00Z' })
  await saveAndQueue(newer, '2026-11-21T12:00:00.000Z', { instructions, enqueuer })
  await saveAndQueue(older, '2026-11-21T12:00:00.000Z', { instructions, enqueuer })
  t.same(queue.map(i => i.instructionId), [newer.instructionId])
  queue.push({ instructionId: older.instructionId, siteId: siteId(1), targetDate: '2026-11-22', periods: [] })
  cycle(3)
  await settle()
  t.equal(instructions.get(older.instructionId, siteId(1))!.state.status, 'superseded')
  t.equal(instructions.get(newer.instructionId, siteId(1))!.state.status, 'applied')
})

t.test('a solver that refuses the inputs does not turn a durable programme into an error', async t => {
  const { instructions, enqueuer, settle } = setup(t, { enqueueNextCycle: () => { throw new Error('queue full') } })
  const receipt = await saveAndQueue(batch({}), '2026-11-21T12:00:00.000Z', { instructions, enqueuer })
  t.equal(receipt.count, 1)
  await settle()
  t.equal(instructions.list()[0]!.state.status, 'received', 'left for the next activation to queue')
})

t.test('a floor handed to the solver is always finite: a slot whose power is not (the rules refuse it; a record from before them) is no constraint', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  // Built past the rules, as a store written before the sanity bound may hold it.
  const body = programme({ slots: 3 })
  const starts = Float64Array.from(body.sites[0]!.energie_programmee, s => Date.parse(s.debut_utc))
  const b = toInstructionBatch(body as unknown as ProgrammeSoutirage, { emittedAt: { ms: Date.parse(body.emitted_at), nanos: 0 }, starts, kwh: Float64Array.of(1, 1e306, 1), slotEnds: Uint32Array.of(3) },
    { receivedAt: '2026-11-21T12:30:00.000Z', companyId: 'acme', tokenId: 'tok', certFingerprint256: 'F' })
  await saveAndQueue(b, '2026-11-21T12:30:00.000Z', { instructions, enqueuer })
  t.same(queue[0]!.periods.map(p => [p.startUtc, p.minKw]), [['2026-11-21T23:00:00Z', 4], ['2026-11-21T23:30:00Z', 4]])
  queue.length = 0
  await enqueuer.requeueEffective()
  t.same(queue[0]!.periods.map(p => [p.startUtc, p.minKw]), [['2026-11-21T23:00:00Z', 4], ['2026-11-21T23:30:00Z', 4]], 'nor when queued again from the store')
})

t.test('requeue takes the effective instructions of today and later, not of past days', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  await saveAndQueue(batch({ targetDate: '2026-11-20', emittedAt: '2026-11-19T10:00:00Z' }), '2026-11-19T12:00:00.000Z', { instructions, enqueuer })
  // Received the day before: when the service starts again at 12:30Z, its periods are over, not late.
  await saveAndQueue(batch({ targetDate: '2026-11-21', emittedAt: '2026-11-20T10:00:00Z', sites: 70 }, '2026-11-20T10:00:00.000Z'), '2026-11-20T12:00:00.000Z', { instructions, enqueuer })
  queue.length = 0
  t.equal(await enqueuer.requeueEffective(), 70, 'in several turns')
  t.same(new Set(queue.map(i => i.targetDate)), new Set(['2026-11-21']))
  t.type(Object.getOwnPropertyDescriptor(queue[0], 'periods')?.get, 'function', 'periods built when the solver reads them, not at activation')
  // Today's periods already over (the clock stands at 12:30Z) are kept, not fed to the solver.
  t.same(queue[0]!.periods, [], 'its two slots are over')
  t.equal(instructions.get(queue[0]!.instructionId, queue[0]!.siteId)!.slots.length, 2, 'and kept')
  await saveAndQueue(batch({ targetDate: '2026-11-22', emittedAt: '2026-11-21T10:00:00Z' }), '2026-11-21T12:00:00.000Z', { instructions, enqueuer })
  queue.length = 0
  await enqueuer.requeueEffective()
  const tomorrow = queue.find(i => i.targetDate === '2026-11-22')!
  t.same(tomorrow.periods[0], { startUtc: '2026-11-21T23:00:00Z', endUtc: '2026-11-21T23:15:00Z', minKw: 10 })
  const stored = instructions.get(tomorrow.instructionId, tomorrow.siteId)!
  t.same(tomorrow.periods.map(p => p.startUtc), stored.slots.map(([start]) => start), 'the stored slots, every one')
})

t.test('a late instruction (every period begun when received) is not handed when the service starts again either', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  const late = batch({ targetDate: '2026-11-21', emittedAt: '2026-11-21T12:00:00Z' })   // received at 12:30Z, its two slots from 23:00Z the day before
  const timely = batch({ targetDate: '2026-11-21', emittedAt: '2026-11-21T10:00:00Z', sites: [siteId(2)] }, '2026-11-20T23:10:00.000Z')   // its last slot began after it came
  const receipt = await saveAndQueue(late, '2026-11-21T12:30:00.000Z', { instructions, enqueuer })
  t.same(receipt.instructions.map(i => i.status), ['late'])
  await saveAndQueue(timely, '2026-11-20T23:10:00.000Z', { instructions, enqueuer })
  queue.length = 0
  t.equal(await enqueuer.requeueEffective(), 1)
  t.same(queue.map(i => [i.siteId, i.periods.length]), [[siteId(2), 0]], 'the timely one only (its periods are over by now)')
})

t.test('a cycle acknowledged before the queued statuses are written still ends applied', async t => {
  const { instructions, enqueuer, cycle, settle } = setup(t)
  await saveAndQueue(batch({}), '2026-11-21T12:00:00.000Z', { instructions, enqueuer })
  cycle(5)   // within the delay: the pending `queued` write goes first
  await settle()
  t.same(instructions.list()[0]!.state, { status: 'applied', cycle: 5, at: '2026-11-21T12:31:00.000Z' })
})

t.test('close() stops listening to cycles', async t => {
  const { enqueuer, listeners } = setup(t)
  t.equal(listeners.size, 1)
  await enqueuer.close()
  t.equal(listeners.size, 0)
})

// With the API door in its worker, the worker saves and checks; this thread hands over (`handOver`).
t.test('hand-overs from the door\'s worker reach the solver in order, a big one over several turns without being overtaken', async t => {
  const { enqueuer, queue } = setup(t)
  const big = batch({ sites: 150, emittedAt: '2026-11-21T12:00:00Z', kwh: () => 1 })
  const newer = batch({ sites: 1, emittedAt: '2026-11-21T12:05:00Z', kwh: () => 2 })
  const order: string[] = []
  enqueuer.handOver([big], () => { order.push('big') })
  t.ok(queue.length < 150, 'the big one is queued over several turns (the solver shares the loop)')
  enqueuer.handOver([newer], () => { order.push('newer') })
  t.same(order, [], 'the small one waits for the big one before it')
  await enqueuer.close()
  t.same(order, ['big', 'newer'], 'each acknowledged once queued, in order')
  t.equal(queue.length, 151)
  const lastForSite1 = queue.filter(i => i.siteId === siteId(1)).at(-1)!
  t.equal(lastForSite1.instructionId, newer.instructionId, 'the newest programme\'s input comes last: it is the one the solver keeps')
  t.same(lastForSite1.periods.map(p => p.minKw), [8, 8])
})

t.test('an input the solver keeps, once its periods are read, no longer keeps the hand-over\'s buffer (every programme of a door\'s flush)', async t => {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const { enqueuer, queue } = setup(t)
  /** A hand-over of two programmes as the door's flush sends them: views of one buffer. */
  const handedInOneBuffer = (second: number): WeakRef<ArrayBuffer> => {
    const emittedAt = `2026-11-21T12:00:0${second}Z`
    const a = batch({ sites: [siteId(1)], emittedAt, kwh: () => 1 })
    const b = batch({ sites: [siteId(2)], emittedAt, kwh: () => 2 })
    const slots = new Float64Array(8)
    slots.set(a.starts, 0); slots.set(a.kwh, 2); slots.set(b.starts, 4); slots.set(b.kwh, 6)
    const view = (x: typeof a, at: number) => ({ ...x, starts: slots.subarray(at, at + 2), kwh: slots.subarray(at + 2, at + 4) })
    enqueuer.handOver([view(a, 0), view(b, 4)], () => {})
    return new WeakRef(slots.buffer)
  }
  const collected = async (ref: WeakRef<ArrayBuffer>) => {
    await new Promise(r => setImmediate(r))   // a WeakRef holds its target until the end of the turn that made it
    gc()
    return ref.deref() === undefined
  }
  const unread = handedInOneBuffer(1)
  t.notOk(await collected(unread), 'while its periods are unread, an input holds its slots (they are built from them)')
  const kept = queue.splice(0)
  const read = handedInOneBuffer(2)
  t.same(queue.map(i => i.periods.map(p => p.minKw)), [[4, 4], [8, 8]], 'the periods, built from the slots')
  t.ok(await collected(read), 'then the buffer goes, the inputs kept')
  t.same(queue.map(i => i.periods.map(p => p.minKw)), [[4, 4], [8, 8]], 'their periods stay')
  t.equal(kept.length, 2)
})

t.test('a small hand-over with nothing before it is queued at once, without a promise', async t => {
  const { enqueuer, queue } = setup(t)
  let done = false
  enqueuer.handOver([batch({ sites: 2 })], () => { done = true })
  t.ok(done, 'acknowledged in the same turn')
  t.equal(queue.length, 2)
})

// Instances sharing one store: what another one saved reaches this one's solver too (`handChanged`).
/** The keys a save of `b` writes, as the store reports another writer's changes once applied here. */
const savedKeys = (b: ReturnType<typeof batch>, withEffective = true) => new Map<string, unknown[]>([
  ['instructions', b.siteIds.flatMap(s => [[b.instructionId, s], [b.instructionId, s, 's']])],
  ...(withEffective ? [['instruction-effective', b.siteIds.map(s => [b.targetDate, s])] as [string, unknown[]]] : []),
])

t.test('a programme another instance saved reaches this solver once its changes are applied here, statuses untouched', async t => {
  const { instructions, enqueuer, queue, settle } = setup(t)
  const b = batch({ sites: 2, kwh: () => 1 })
  await instructions.save(b, '2026-11-21T12:30:00.000Z', 'queued')   // the other instance's write
  enqueuer.handChanged(savedKeys(b))
  await enqueuer.close()
  t.same(queue.map(i => [i.instructionId, i.siteId, i.periods.map(p => p.minKw)]), [[b.instructionId, siteId(1), [4, 4]], [b.instructionId, siteId(2), [4, 4]]])
  await settle()
  t.same(instructions.list().map(i => i.state.status), ['queued', 'queued'], 'no status written here: the writer saved them queued')
})

t.test('another instance\'s late programme (every period begun when its change arrives) is not fed here either', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  // The clock stands at 12:30Z: the day's first two quarter-hours began long ago.
  const late = batch({ targetDate: '2026-11-21', emittedAt: '2026-11-21T12:00:00Z', sites: 1 })
  await instructions.save(late, '2026-11-21T12:30:00.000Z', 'queued')
  enqueuer.handChanged(savedKeys(late))
  await enqueuer.close()
  t.same(queue, [])
})

t.test('changes of statuses and flags feed nothing (each instance writes its own solver\'s statuses)', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  const b = batch({ sites: 1 })
  await instructions.save(b, '2026-11-21T12:00:00.000Z', 'queued')
  enqueuer.handChanged(new Map([['instructions', [[b.instructionId, siteId(1), 's'], [b.instructionId, siteId(1), 'f']]], ['audit', [[1, 2]]]]))
  await enqueuer.close()
  t.same(queue, [])
})

t.test('a re-send of the same instruction (its record rewritten, the effective index not) is fed again', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  const b = batch({ sites: 1, kwh: () => 1 })
  await instructions.save(b, '2026-11-21T12:00:00.000Z', 'queued')
  const again = batch({ sites: 1, kwh: () => 2 })
  await instructions.save(again, '2026-11-21T12:01:00.000Z', 'queued')
  enqueuer.handChanged(savedKeys(again, false))
  await enqueuer.close()
  t.same(queue.map(i => i.periods.map(p => p.minKw)), [[8, 8]], 'the rewritten slots')
})

t.test('what another instance saved and a newer save superseded since: the newer one is fed', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  const older = batch({ sites: 1, emittedAt: '2026-11-21T12:00:00Z', kwh: () => 1 })
  const newer = batch({ sites: 1, emittedAt: '2026-11-21T12:05:00Z', kwh: () => 2 })
  await instructions.save(older, '2026-11-21T12:00:00.000Z', 'queued')
  await instructions.save(newer, '2026-11-21T12:01:00.000Z', 'queued')
  enqueuer.handChanged(savedKeys(older))
  await enqueuer.close()
  t.same(queue.map(i => i.instructionId), [newer.instructionId])
})

t.test('another instance\'s programme for a day that is over is not fed; removals (retention) feed nothing', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  const past = batch({ targetDate: '2026-11-20', emittedAt: '2026-11-19T10:00:00Z' })
  await instructions.save(past, '2026-11-21T12:00:00.000Z', 'queued')
  enqueuer.handChanged(savedKeys(past))
  enqueuer.handChanged(new Map([['instruction-effective', [['2026-11-22', siteId(9)]]]]))
  await enqueuer.close()
  t.same(queue, [])
})

t.test('another instance\'s programmes wait for the hand-overs before them, and a big one goes over several turns', async t => {
  const { instructions, enqueuer, queue } = setup(t)
  const mine = batch({ sites: 100, emittedAt: '2026-11-21T12:00:00Z', kwh: () => 1 })
  const theirs = batch({ sites: 100, emittedAt: '2026-11-21T12:05:00Z', kwh: () => 2 })
  await instructions.save(theirs, '2026-11-21T12:00:00.000Z', 'queued')
  enqueuer.handOver([mine], () => {})
  enqueuer.handChanged(savedKeys(theirs))
  t.ok(queue.length < 100, 'not all in one turn')
  await enqueuer.close()
  t.equal(queue.length, 200)
  t.equal(queue.filter(i => i.siteId === siteId(1)).at(-1)!.instructionId, theirs.instructionId, 'the newer one comes last')
})

t.test('a solver that refuses another instance\'s programme: logged, no status written back', async t => {
  const { instructions, enqueuer, settle } = setup(t, { enqueueNextCycle: () => { throw new Error('queue full') } })
  const b = batch({ sites: 1 })
  await instructions.save(b, '2026-11-21T12:00:00.000Z', 'queued')
  enqueuer.handChanged(savedKeys(b))
  await enqueuer.close()
  await settle()
  t.equal(instructions.list()[0]!.state.status, 'queued', 'the writer\'s status stands')
})

t.test('another instance\'s programme the store cannot read yet is read again, with backoff, until it can; one warn, one info', async t => {
  const { log, lines } = recordingLog()
  const { store, instructions, enqueuer, queue } = setup(t, {}, { log })
  const b = batch({ sites: 2, kwh: () => 1 })
  await instructions.save(b, '2026-11-21T12:00:00.000Z', 'queued')
  store.faults.unavailable = true   // what a reconnecting change feed answers
  enqueuer.handChanged(savedKeys(b))
  await new Promise(resolve => setTimeout(resolve, 800))   // read at 0, 100, 300, 700 ms
  t.same(queue, [], 'nothing read, nothing fed')
  t.same(lines.filter(l => l.level === 'warn').map(l => [l.obj.code, l.msg]), [['NO_STORE', 'could not read the instructions another instance saved (the store does not answer): retried until it does']], 'one warn for the retries')
  store.faults.unavailable = false
  for (let i = 0; i < 200 && queue.length < 2; i++) await new Promise(resolve => setTimeout(resolve, 10))
  t.same(queue.map(i => [i.instructionId, i.siteId]), [[b.instructionId, siteId(1)], [b.instructionId, siteId(2)]], 'fed once the store answers')
  t.equal(lines.filter(l => l.level === 'info').length, 1, 'said once')
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(queue.length, 2, 'and no more')
})

t.test('what is owed and superseded meanwhile: the newer programme is fed, once; for a day over by then: nothing', async t => {
  let now = new Date('2026-11-21T12:30:00Z')
  const { store, instructions, enqueuer, queue } = setup(t, {}, { now: () => now })
  const older = batch({ sites: 1, emittedAt: '2026-11-21T12:00:00Z', kwh: () => 1 })
  const newer = batch({ sites: 1, emittedAt: '2026-11-21T12:05:00Z', kwh: () => 2 })
  const today = batch({ sites: 1, targetDate: '2026-11-21', emittedAt: '2026-11-20T12:00:00Z' })
  await instructions.save(older, '2026-11-21T12:00:00.000Z', 'queued')
  await instructions.save(today, '2026-11-21T12:00:00.000Z', 'queued')
  store.faults.unavailable = true
  enqueuer.handChanged(savedKeys(older))
  enqueuer.handChanged(savedKeys(today))
  await new Promise(resolve => setTimeout(resolve, 50))
  store.faults.unavailable = false
  await instructions.save(newer, '2026-11-21T12:01:00.000Z', 'queued')
  enqueuer.handChanged(savedKeys(newer))
  now = new Date('2026-11-21T23:30:00Z')   // 00:30 in Paris: the 21st is over
  await new Promise(resolve => setTimeout(resolve, 400))
  t.same(queue.map(i => i.instructionId), [newer.instructionId], 'the newer one, once: the retry finds it handed')
})

// DECISIONS.md "Tenure: who holds a site, and when": the withdrawal log is read every second, whoever wrote it.
t.test('a withdrawal reaches the solver within a second, told by nothing but the store\'s log: its site and day cleared (no periods)', async t => {
  const store = openStore(t.testdir())
  t.teardown(() => store.close())
  const instructions = openInstructions(store)
  const queue: SolverInput[] = []
  const solver: SolverPort = {
    sites: async () => [], needs: async () => { throw new Error('unused') },
    enqueueNextCycle: inputs => { queue.push(...inputs) }, onCycleApplied: () => () => {},
  }
  const enqueuer = createEnqueuer({
    solver, instructions, clock: { now: () => new Date('2026-11-21T12:30:00Z') }, log: pino({ level: 'silent' }) as unknown as Logger, withdrawals: openWithdrawals(store),
  })
  t.teardown(() => enqueuer.close())
  await saveAndQueue(batch({ sites: 2 }), '2026-11-21T12:30:00.000Z', { instructions, enqueuer })
  const id = queue[0]!.instructionId
  queue.length = 0
  // What the CLI does (test/cli/site-transfer.test.ts does it from another process): nothing tells this enqueuer but the log.
  await withdrawInstructions(store, { companyId: 'acme', siteIds: [siteId(2)], actor: { kind: 'cli', user: 'op' }, atMs: Date.parse('2026-11-21T12:31:00Z') })
  for (let i = 0; i < 300 && queue.length === 0; i++) await new Promise(r => setTimeout(r, 10))
  t.same(queue.map(i => [i.instructionId, i.siteId, i.targetDate, i.periods]), [[id, siteId(2), '2026-11-22', []]], 'the withdrawn one is cleared, the other site untouched')
  await new Promise(r => setTimeout(r, 1200))
  t.equal(queue.length, 1, 'once')
})
