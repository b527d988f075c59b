// Instances sharing one PostgreSQL store (scripts/postgres-cluster.ts: a throwaway cluster;
// fails, never skips, without it): each feeds its own solver what the others saved.
import t, { type Test } from 'tap'
import pino from 'pino'
import { join } from 'node:path'
import { openStore, type Store } from '../../src/store/open-store.ts'
import { openInbound, type Inbound } from '../../src/apply/receive-programme.ts'
import type { Logger, SolverInput, SolverPort } from '../../src/host/contract.ts'
import { instructionBatch, siteId } from '../helpers/programme.ts'
import { startPostgres } from '../../scripts/postgres-cluster.ts'
import { migratedDatabase } from '../helpers/store-kinds.ts'
import { recordingLog } from '../helpers/recording-log.ts'
import { until } from '../helpers/eventually.ts'

const cluster = startPostgres({ fsync: 'off', synchronous_commit: 'off' })
t.teardown(() => cluster.destroy())

const batch = instructionBatch
const log = pino({ level: 'silent' }) as unknown as Logger
const clock = { now: () => new Date('2026-11-21T12:30:00Z') }

interface Instance { store: Store; inbound: Inbound; queue: SolverInput[] }

/**
 * An instance as plugin.ts wires it: its replica, its solver, the feed of the others' changes.
 * Its connections are named `epx-<name>` (pg_stat_activity), to cut them.
 */
async function instance (t: Test, database: string, name: string, o: { pollMs?: number; log?: Logger; searchPath?: string } = {}): Promise<Instance> {
  const pool = {
    ...cluster.connection(database), max: 2, application_name: `epx-${name}`,
    ...(o.searchPath ? { options: `-c search_path=${o.searchPath}` } : {}),
  }
  const store = openStore(join(t.testdir(), name), { postgres: { pool, pollMs: o.pollMs ?? 200 } })
  await store.opened
  t.teardown(() => store.close())
  const queue: SolverInput[] = []
  const solver: SolverPort = {
    sites: async () => [], needs: async () => { throw new Error('unused') },
    enqueueNextCycle: inputs => { queue.push(...inputs) }, onCycleApplied: () => () => {},
  }
  const inbound = await openInbound({ store, solver, clock, log: o.log ?? log, options: { maxSites: 5000, requireContiguous: false }, reads: false })
  t.teardown(() => inbound.close())
  t.teardown(store.onApplied(changes => inbound.handChanged(changes)))
  return { store, inbound, queue }
}

t.test('a programme accepted through A reaches B\'s solver, with its periods, and only once', async t => {
  const db = await migratedDatabase(cluster)
  const a = await instance(t, db, 'a')
  const b = await instance(t, db, 'b')
  const p = batch({ sites: 3, kwh: () => 1 })
  await a.inbound.instructions.save(p, '2026-11-21T12:30:00.000Z', 'queued')
  await until('B\'s solver fed', () => b.queue.length === 3, { ms: 5000 })
  t.same(b.queue.map(i => [i.instructionId, i.siteId, i.periods.map(x => x.minKw)]), [1, 2, 3].map(k => [p.instructionId, siteId(k), [4, 4]]))
  // A's own write is not reported back to A.
  await new Promise(resolve => setTimeout(resolve, 300))
  t.same(a.queue, [], 'A\'s feed does not hand A its own writes (its door does)')
  t.equal(b.queue.length, 3, 'B fed once, the poll included')
})

t.test('statuses B writes for its solver feed nothing back to A, and the reverse', async t => {
  const db = await migratedDatabase(cluster)
  const a = await instance(t, db, 'a')
  const b = await instance(t, db, 'b')
  const p = batch({ sites: 1 })
  await a.inbound.instructions.save(p, '2026-11-21T12:00:00.000Z', 'queued')
  await until('B fed', () => b.queue.length === 1, { ms: 5000 })
  await b.inbound.instructions.markApplied([{ instructionId: p.instructionId, siteId: siteId(1) }], 3, '2026-11-21T12:31:00.000Z')
  await a.inbound.instructions.markApplied([{ instructionId: p.instructionId, siteId: siteId(1) }], 9, '2026-11-21T12:31:00.000Z')
  await new Promise(resolve => setTimeout(resolve, 400))
  t.equal(a.queue.length, 0)
  t.equal(b.queue.length, 1, 'no ping-pong of statuses')
})

t.test('a newer programme through B supersedes A\'s on both solvers: the last input of each is the newest', async t => {
  const db = await migratedDatabase(cluster)
  const a = await instance(t, db, 'a')
  const b = await instance(t, db, 'b')
  const older = batch({ sites: 2, emittedAt: '2026-11-21T12:00:00Z', kwh: () => 1 })
  const newer = batch({ sites: 2, emittedAt: '2026-11-21T12:05:00Z', kwh: () => 2 })
  await a.inbound.instructions.save(older, '2026-11-21T12:00:00.000Z', 'queued')
  await b.inbound.instructions.save(newer, '2026-11-21T12:01:00.000Z', 'queued')
  await until('A fed the newer one', () => a.queue.some(i => i.instructionId === newer.instructionId), { ms: 5000 })
  await new Promise(resolve => setTimeout(resolve, 300))
  for (const k of [1, 2]) {
    t.equal(a.queue.filter(i => i.siteId === siteId(k)).at(-1)?.instructionId, newer.instructionId, `A, site ${k}`)
  }
  // What A's door would hand over now (the older one, saved before): read back, not fed.
  const before = a.queue.length
  await new Promise<void>(resolve => a.inbound.handOver([{ ...older, slotEnds: [2, 4] }], resolve))
  t.equal(a.queue.length, before, 'a hand-over another instance has superseded is not fed')
})

t.test('an instance that starts feeds its solver, from the database, every effective instruction whose day is not over', async t => {
  const db = await migratedDatabase(cluster)
  const a = await instance(t, db, 'a')
  await a.inbound.instructions.save(batch({ sites: 2, targetDate: '2026-11-22', emittedAt: '2026-11-21T10:00:00Z' }), '2026-11-21T12:00:00.000Z', 'queued')
  await a.inbound.instructions.save(batch({ sites: 1, targetDate: '2026-11-20', emittedAt: '2026-11-19T10:00:00Z' }), '2026-11-21T12:00:00.000Z', 'queued')
  const b = await instance(t, db, 'b-new')   // a fresh replica: loaded from the database at open
  t.same(b.queue.map(i => [i.targetDate, i.siteId]), [['2026-11-22', siteId(1)], ['2026-11-22', siteId(2)]], 'tomorrow\'s, not the day that is over')
})

t.test('of two PostgreSQL stores on one database, one leads; its store closed, the other leads', async t => {
  const db = await migratedDatabase(cluster)
  const a = await instance(t, db, 'a')
  const b = await instance(t, db, 'b')
  const la = a.store.leadership()
  const lb = b.store.leadership()
  t.equal(la, a.store.leadership(), 'one leadership per store')
  await until('one leads', () => la.isLeader() || lb.isLeader(), { ms: 5000 })
  t.equal(Number(la.isLeader()) + Number(lb.isLeader()), 1)
  const [leader, other] = la.isLeader() ? [a, b] : [b, a]
  await leader.store.close()
  await until('the other leads', () => other.store.leadership().isLeader())
  t.pass('taken over')
})

/** Cuts every connection of instance `name` (its change feed's among them), as a database restart or a network blip does. */
function cut (database: string, name: string): void {
  cluster.psql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'epx-${name}'`, database)
}

t.test('programmes saved through A while B\'s change feed is down reach B\'s solver once it is back, each once', async t => {
  const db = await migratedDatabase(cluster)
  const a = await instance(t, db, 'a')
  const { log: bLog, lines } = recordingLog()
  const b = await instance(t, db, 'b', { log: bLog })
  for (let round = 1; round <= 3; round++) {
    cut(db, 'b')
    await until(`round ${round}: B's feed down`, () => !b.store.ready(), { ms: 5000 })
    const p = batch({ sites: 3, emittedAt: `2026-11-21T12:0${round}:00Z`, kwh: () => round })
    await a.inbound.instructions.save(p, '2026-11-21T12:30:00.000Z', 'queued')
    await until(`round ${round}: B's solver fed`, () => b.queue.length === 3 * round, { ms: 5000 })
    t.same(b.queue.slice(-3).map(i => [i.instructionId, i.siteId]), [1, 2, 3].map(k => [p.instructionId, siteId(k)]), `round ${round}: the programme A saved`)
  }
  await new Promise(resolve => setTimeout(resolve, 400))
  t.equal(b.queue.length, 9, 'each site of each programme once, the poll included')
  // The store logs its outage; a feed that answers again by the first retry needs no line more.
  t.same(lines.filter(l => l.level === 'warn'), [], 'no warn of the hand-overs')
})

t.test('another instance\'s rows a write of B applied before its feed reported them are reported once the feed reconnects', async t => {
  const db = await migratedDatabase(cluster)
  // A's notifications never arrive (a pg_notify of its own that does nothing, found first on its search_path):
  // B learns of A's save only from its own write's catch-up, then from its feed.
  cluster.psql('CREATE SCHEMA quiet; CREATE FUNCTION quiet.pg_notify(text, text) RETURNS void LANGUAGE sql AS $$ SELECT $$', db)
  const a = await instance(t, db, 'a', { searchPath: 'public,quiet,pg_catalog' })
  const b = await instance(t, db, 'b', { pollMs: 60_000 })
  const p = batch({ sites: 2 })
  await a.inbound.instructions.save(p, '2026-11-21T12:30:00.000Z', 'queued')
  await b.store.writeDurable(() => {})   // a write applies the rows past B's cursor first: A's, unreported
  t.equal(b.inbound.instructions.effectiveId(p.targetDate, siteId(1)), p.instructionId, 'in B\'s replica')
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(b.queue, [], 'not reported yet: no notification, the poll is a minute away')
  cut(db, 'b')
  await until('B\'s solver fed after its feed reconnected', () => b.queue.length === 2, { ms: 5000 })
  t.same(b.queue.map(i => i.siteId), [siteId(1), siteId(2)])
})
