// Needs PostgreSQL (scripts/postgres-cluster.ts: a throwaway cluster; fails, never skips, without it).
import t, { type Test } from 'tap'
import pg from 'pg'
import { LEADER_LOCK, pgLeadership, type PgLeadership } from '../../../src/store/postgres/leader.ts'
import { join } from 'node:path'
import { eachTakeover, soleInstance } from '../../../src/store/leadership.ts'
import { openStore } from '../../../src/store/open-store.ts'
import { WRITE_LOCK_KEY } from '../../../src/store/postgres/schema.ts'
import { startPostgres } from '../../../scripts/postgres-cluster.ts'
import { migratedDatabase } from '../../helpers/store-kinds.ts'
import { recordingLog } from '../../helpers/recording-log.ts'
import { until } from '../../helpers/eventually.ts'

const cluster = startPostgres({ fsync: 'off' })
t.teardown(() => cluster.destroy())

let n = 0
function twoInstances (t: Test, opts: { retryMs?: number; checkMs?: number } = {}) {
  const db = `leader_${++n}`
  cluster.createDatabase(db)
  const make = (): PgLeadership & { log: ReturnType<typeof recordingLog> } => {
    const log = recordingLog()
    const l = pgLeadership({ connection: cluster.connection(db), log: log.log, ...opts })
    t.teardown(() => l.close())
    return Object.assign(l, { log })
  }
  return { db, a: make(), b: make() }
}

/** The backend pid holding the leader lock in `db`, as PostgreSQL sees it. */
function holderPid (db: string): number | undefined {
  const out = cluster.psql(`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ${LEADER_LOCK.classId} AND objid = ${LEADER_LOCK.objId}`, db).trim()
  return out ? Number(out) : undefined
}

t.test('of two instances on one database, exactly one leads, and it holds the lock in PostgreSQL', async t => {
  const { db, a, b } = twoInstances(t, { retryMs: 100 })
  await until('one leads', () => a.isLeader() || b.isLeader(), { ms: 5000, everyMs: 20 })
  // A few rounds of retries: the other never takes it while the leader lives.
  for (let k = 0; k < 10; k++) {
    t.equal(Number(a.isLeader()) + Number(b.isLeader()), 1, `round ${k}: exactly one leader`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  t.ok(holderPid(db), 'the lock is held by a live session')
  const leader = a.isLeader() ? a : b
  t.ok(leader.log.lines.some(l => l.level === 'info' && /this instance leads/.test(l.msg ?? '')), 'the leader says so once')
})

t.test("the leader's session terminated (pg_terminate_backend): it stops leading at once, the other leads within 10 s", async t => {
  const { db, a, b } = twoInstances(t)   // the default 2 s retry
  await until('one leads', () => a.isLeader() || b.isLeader(), { ms: 5000, everyMs: 20 })
  const [leader, other] = a.isLeader() ? [a, b] : [b, a]
  const seen: boolean[] = []
  leader.onChange(l => seen.push(l))
  const pid = holderPid(db)
  t.ok(pid, 'the lock has a holder')
  const terminatedAt = Date.now()
  cluster.psql(`SELECT pg_terminate_backend(${pid!})`)
  await until('the old leader stops leading', () => !leader.isLeader(), { ms: 5000, everyMs: 20 })
  t.same(seen, [false], 'its listeners were told it lost')
  await until('a leader again', () => other.isLeader() || leader.isLeader(), { everyMs: 20 })
  t.ok(Date.now() - terminatedAt < 10_000, `a new leader within 10 s (${Date.now() - terminatedAt} ms)`)
  // Whichever took it, never both, and the one that lost tries again.
  for (let k = 0; k < 5; k++) {
    t.equal(Number(a.isLeader()) + Number(b.isLeader()), 1, 'exactly one leader')
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  t.ok(leader.log.lines.some(l => l.level === 'warn' && /no longer leads/.test(l.msg ?? '')), 'the loss is a warn line')
})

t.test("the leader's client closed: the other leads within 10 s", async t => {
  const { a, b } = twoInstances(t)
  await until('one leads', () => a.isLeader() || b.isLeader(), { ms: 5000, everyMs: 20 })
  const [leader, other] = a.isLeader() ? [a, b] : [b, a]
  await leader.close()
  t.notOk(leader.isLeader(), 'closed: no longer leads')
  const ms = await until('the other leads', () => other.isLeader(), { everyMs: 20 })
  t.ok(ms < 10_000, `the other leads after ${ms} ms`)
  await leader.close()   // idempotent
})

t.test('a database restart: leadership is lost by all, then exactly one leads again by itself', async t => {
  const { a, b } = twoInstances(t, { retryMs: 200, checkMs: 200 })
  await until('one leads', () => a.isLeader() || b.isLeader(), { ms: 5000, everyMs: 20 })
  const lostBy: string[] = []
  a.onChange(l => { if (!l) lostBy.push('a') })
  b.onChange(l => { if (!l) lostBy.push('b') })
  cluster.stop()
  try {
    await until('nobody leads while the database is down', () => !a.isLeader() && !b.isLeader(), { ms: 5000, everyMs: 20 })
    await new Promise(resolve => setTimeout(resolve, 500))
    t.notOk(a.isLeader() || b.isLeader(), 'still nobody')
  } finally {
    cluster.start()
  }
  await until('a leader again', () => a.isLeader() || b.isLeader(), { everyMs: 20 })
  await new Promise(resolve => setTimeout(resolve, 500))
  t.equal(Number(a.isLeader()) + Number(b.isLeader()), 1, 'exactly one')
  t.equal(lostBy.length, 1, 'the old leader was told it lost')
  const warned = [...a.log.lines, ...b.log.lines].filter(l => /cannot try for the leadership/.test(l.msg ?? ''))
  t.ok(warned.length <= 2, `one warning per instance for the outage, not one per retry (${warned.length})`)
})

t.test('an unreachable database: no leadership, no crash, and close() stops the retries', async t => {
  const l = pgLeadership({ connection: { host: cluster.socketDir, port: 1, user: 'postgres', database: 'postgres' }, retryMs: 50 })
  await new Promise(resolve => setTimeout(resolve, 300))
  t.notOk(l.isLeader())
  await l.close()
})

t.test('an LMDB store has one instance: always the leader; eachTakeover runs at once', async t => {
  t.ok(soleInstance.isLeader())
  let runs = 0
  const off = eachTakeover(soleInstance, () => { runs++ })
  t.equal(runs, 1)
  off()
})

t.test('eachTakeover runs again at each takeover, not at a loss', async t => {
  const { a, b } = twoInstances(t, { retryMs: 100 })
  await until('one leads', () => a.isLeader() || b.isLeader(), { ms: 5000, everyMs: 20 })
  const [leader, other] = a.isLeader() ? [a, b] : [b, a]
  let runs = 0
  eachTakeover(other, () => { runs++ })
  t.equal(runs, 0, 'not leading: not run')
  await leader.close()
  await until('run at the takeover', () => runs === 1, { ms: 5000, everyMs: 20 })
  t.ok(other.isLeader())
})

t.test('the lock is a plain advisory lock: a session that holds it keeps every instance from leading', async t => {
  const db = `leader_${++n}`
  cluster.createDatabase(db)
  const squatter = new pg.Client(cluster.connection(db))
  await squatter.connect()
  t.teardown(() => squatter.end())
  t.equal((await squatter.query('SELECT pg_try_advisory_lock($1, $2) AS ok', [LEADER_LOCK.classId, LEADER_LOCK.objId])).rows[0].ok, true)
  const l = pgLeadership({ connection: cluster.connection(db), retryMs: 50 })
  t.teardown(() => l.close())
  await new Promise(resolve => setTimeout(resolve, 300))
  t.notOk(l.isLeader(), 'held elsewhere: not the leader')
  await squatter.query('SELECT pg_advisory_unlock($1, $2)', [LEADER_LOCK.classId, LEADER_LOCK.objId])
  await until('released: leads', () => l.isLeader(), { ms: 5000, everyMs: 20 })
})

/** A session that takes the leader lock and then says nothing: a leader frozen (SIGSTOP, a VM paused), as the server sees it. */
async function frozenLeader (t: Test, db: string): Promise<pg.Client> {
  const c = new pg.Client(cluster.connection(db))
  c.on('error', () => {})   // its session is ended under it
  await c.connect()
  t.teardown(() => c.end().catch(() => {}))
  t.equal((await c.query('SELECT pg_try_advisory_lock($1, $2) AS ok', [LEADER_LOCK.classId, LEADER_LOCK.objId])).rows[0].ok, true, 'the frozen one led')
  return c
}

const lease = { leaseMs: 1000, checkMs: 200, checkTimeoutMs: 500, retryMs: 100 }

t.test('a leader silent past its lease (frozen) is replaced within leaseMs + retryMs, and the log says why', async t => {
  const db = `leader_${++n}`
  cluster.createDatabase(db)
  const frozen = await frozenLeader(t, db)
  // Silent from its lock on: holderPid's psql takes its own time.
  const frozenAt = Date.now()
  const frozenPid = holderPid(db)
  const log = recordingLog()
  const l = pgLeadership({ connection: cluster.connection(db), log: log.log, ...lease })
  t.teardown(() => l.close())
  await new Promise(resolve => setTimeout(resolve, 500))
  t.notOk(l.isLeader(), 'within the lease the holder keeps it')
  await until('the other leads', () => l.isLeader(), { ms: 5000, everyMs: 20 })
  const ms = Date.now() - frozenAt
  // The upper bound leaves a loaded machine (CI runs three Node lines on 2 cores) 1.5 s of
  // scheduling slack; quiet, the take-over lands within 200 ms of the lease.
  t.ok(ms >= lease.leaseMs && ms <= lease.leaseMs + lease.retryMs + 1500, `replaced after ${ms} ms (lease ${lease.leaseMs} ms + retry ${lease.retryMs} ms)`)
  t.not(holderPid(db), frozenPid, 'PostgreSQL shows the new holder')
  t.ok(log.lines.some(line => line.level === 'warn' && /did not renew its leadership for 1 s: its session was ended, this instance takes over/.test(line.msg ?? '')), 'a warn line says why')
  await t.rejects(frozen.query('SELECT 1'), 'the frozen session, resumed, finds itself ended')
})

t.test('a live leader is not deposed: its checks renew the lease', async t => {
  const { a, b } = twoInstances(t, lease)
  await until('one leads', () => a.isLeader() || b.isLeader(), { ms: 5000, everyMs: 20 })
  const leader = a.isLeader() ? a : b
  await new Promise(resolve => setTimeout(resolve, 3 * lease.leaseMs))
  t.ok(leader.isLeader(), 'still the same leader after three leases')
  t.equal(Number(a.isLeader()) + Number(b.isLeader()), 1)
})

t.test('a leader whose process was frozen past its lease knows it does not lead the moment it resumes, before any timer runs', async t => {
  const { a, b } = twoInstances(t, lease)
  await until('one leads', () => a.isLeader() || b.isLeader(), { ms: 5000, everyMs: 20 })
  const [leader, other] = a.isLeader() ? [a, b] : [b, a]
  // This whole process stops for 1.3 s: no timer, no socket read, in either instance.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, lease.leaseMs + 300)
  t.notOk(leader.isLeader(), 'past its lease: not leading, at once')
  await until('a leader again', () => other.isLeader() || leader.isLeader(), { ms: 5000, everyMs: 20 })
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(Number(a.isLeader()) + Number(b.isLeader()), 1, 'exactly one')
})

t.test('a fenced write of a deposed leader commits nothing; an unfenced write beside it lands', async t => {
  const db = await migratedDatabase(cluster, `fence_${++n}`)
  const store = openStore(join(t.testdir(), 'replica'), { postgres: { pool: { ...cluster.connection(db), max: 4 } } })
  t.teardown(() => store.close())
  await store.opened
  const leadership = store.leadership() as PgLeadership
  await until('the store\'s instance leads', () => leadership.isLeader(), { ms: 5000, everyMs: 20 })
  const d = store.db<number>('audit')
  const rows = () => Number(cluster.psql("SELECT count(*) FROM epx_record WHERE db = 'audit'", db).trim())

  await leadership.fenced(() => store.writeDurable(() => { d.putSync('leading', 1) }))
  t.equal(d.get('leading'), 1, 'leading: a fenced write lands')
  t.equal(rows(), 1)

  // A batch waits for the write lock (another writer's long transaction)…
  const writer = new pg.Client(cluster.connection(db))
  await writer.connect()
  t.teardown(() => writer.end().catch(() => {}))
  await writer.query(`BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY})`)
  const fenced = leadership.fenced(() => store.writeDurable(() => { d.putSync('deposed', 2) }))
  fenced.catch(() => {})
  await new Promise(resolve => setTimeout(resolve, 100))
  // …while another instance ends this one's leadership session and takes the lock. It asks
  // first and waits in the lock's queue: PostgreSQL grants it as the ended session lets go,
  // before this instance's next try from a new session (asked after the end, it could lose).
  const usurper = new pg.Client(cluster.connection(db))
  usurper.on('error', () => {})
  await usurper.connect()
  t.teardown(() => usurper.end().catch(() => {}))
  const taken = usurper.query('SELECT pg_advisory_lock($1, $2)', [LEADER_LOCK.classId, LEADER_LOCK.objId])
  const waiting = `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = ${LEADER_LOCK.classId} AND objid = ${LEADER_LOCK.objId}`
  await until('the usurper waits for the lock', () => Number(cluster.psql(waiting, db).trim()) === 1, { ms: 5000, everyMs: 20 })
  cluster.psql(`SELECT pg_terminate_backend(${leadership.backendPid()!})`, db)
  await taken
  t.equal(holderPid(db), (usurper as unknown as { processID: number }).processID, 'the other instance holds the lock')
  await until('this instance knows it no longer leads', () => !leadership.isLeader(), { ms: 5000, everyMs: 20 })
  const plain = store.writeDurable(() => { d.putSync('plain', 3) })
  await writer.query('COMMIT')
  await t.rejects(fenced, { code: 'NO_STORE' }, 'the deposed leader\'s fenced write is refused')
  await plain
  t.equal(d.get('plain'), 3, 'the unfenced write landed')
  t.equal(d.get('deposed'), undefined, 'nothing of the fenced one in the replica')
  t.equal(rows(), 2, 'nor in the database')
  await t.rejects(leadership.fenced(() => store.writeDurable(() => { d.putSync('later', 4) })), { code: 'NO_STORE' }, 'a fenced write asked now is refused at once')
  t.equal(d.get('later'), undefined)
})

t.test('an LMDB store: a fenced write is a plain write (one instance, always the leader)', async t => {
  const store = openStore(join(t.testdir(), 'lmdb'))
  t.teardown(() => store.close())
  const d = store.db<number>('audit')
  await store.leadership().fenced(() => store.writeDurable(() => { d.putSync('x', 1) }))
  t.equal(d.get('x'), 1)
})
