// A property of the PostgreSQL store's replicas: whatever happens to two instances on one
// database — writes of every shape, among them a job that throws half-way; their
// connections cut (the change feed's among them); the database restarted; an instance
// closed under its writes, or SIGKILLed in a process of its own while it writes; a
// replica deleted and loaded again — once both are up and caught up, each replica equals
// the database (store.verify()) and serves exactly what the writes that resolved left,
// a write refused with NO_STORE having landed or not, as the database says.
//
// Steps are drawn from a seeded PRNG: the seed is printed (`seed N`); EPX_PROPERTY_SEED=N
// reruns it (the same steps; timings differ) and EPX_PROPERTY_STEPS sets how many: 120 in
// `npm test` (two checks of every replica on the way), 300 with `npm run campaign -- --quick
// --only replica`, 3,000 in the full campaign. A failure shows the last steps.
import t, { type Test } from 'tap'
import pg, { type PoolConfig } from 'pg'
import { spawn } from 'node:child_process'
import { connect, createServer, type Socket } from 'node:net'
import { randomInt } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openStore, type Store } from '../../../src/store/open-store.ts'
import type { StoreDb } from '../../../src/store/guarded-db.ts'
import { decodeKey, decodeValue } from '../../../src/store/postgres/records.ts'
import { fileCluster, migratedDatabase } from '../../helpers/store-kinds.ts'
import { Model, recordId, recordValue, writeOf, type Outcome, type RecordOp } from '../../helpers/replica-model.ts'
import type { PostgresCluster } from '../../../scripts/postgres-cluster.ts'
import { hearUnheard } from '../../helpers/unheard-errors.ts'
import { prng, type Rng } from '../../helpers/prng.ts'

const STEPS = Number(process.env.EPX_PROPERTY_STEPS ?? 120)
const SEED = process.env.EPX_PROPERTY_SEED === undefined ? randomInt(2 ** 31) : Number(process.env.EPX_PROPERTY_SEED)
/** Steps between two checks of every replica against the database (and one at the end). */
const CHECK_EVERY = 60
/** How long an instance may take to be up and caught up again after the worst of the faults. */
const UP_WITHIN_MS = 30_000
const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))


class Instance {
  store: Store | undefined
  things!: StoreDb<unknown>
  metering!: StoreDb<unknown>
  private opening: Promise<boolean> | undefined
  constructor (readonly name: string, readonly dir: string, readonly pool: PoolConfig) {}

  open (): void {
    const store = this.store = openStore(this.dir, { postgres: { pool: this.pool, pollMs: 300 } })
    this.things = store.db('things')
    this.metering = store.db('metering', { binary: true })
    this.opening = store.opened.then(() => true, () => false)
  }

  async close (): Promise<void> {
    const store = this.store
    this.store = undefined
    await store?.close()
  }

  /** Open and answering: a store whose opening failed (its connection cut, the database restarting) is closed and opened again. */
  async up (ms = UP_WITHIN_MS): Promise<void> {
    const deadline = Date.now() + ms
    for (;;) {
      if (!this.store) this.open()
      if (await this.opening) {
        if (this.store!.ready()) return
      } else {
        await this.close()
      }
      if (Date.now() > deadline) throw new Error(`${this.name} is not up within ${ms} ms`)
      await sleep(20)
    }
  }

  /** One writeDurable of `ops` through this instance as it is now; `throwAt`: its fn throws before that op. */
  async write (ops: readonly RecordOp[], throwAt?: number): Promise<Outcome> {
    const { store, things, metering } = this
    if (!store) throw new Error(`${this.name} has no store`)
    try {
      await store.writeDurable(() => {
        for (const [i, op] of ops.entries()) {
          if (i === throwAt) throw new Error('half-way')
          const db = op.db === 'things' ? things : metering
          if (op.w === null) db.removeSync(op.key)
          else db.putSync(op.key, recordValue(op))
        }
      })
    } catch (err) {
      if (throwAt !== undefined) return 'threw'
      if ((err as { code?: string }).code === 'NO_STORE') return 'maybe'
      throw err
    }
    if (throwAt !== undefined) throw new Error(`${this.name}: a job that threw half-way resolved`)
    return 'landed'
  }

  /** What the replica serves: record → the write number its value carries. */
  served (): Map<string, number> {
    const out = new Map<string, number>()
    for (const [name, db] of [['things', this.things], ['metering', this.metering]] as const) {
      for (const { key, value } of db.getRange()) out.set(recordId(name, String(key)), writeOf(name, value))
    }
    return out
  }
}

/** The records the database holds: record → the write number its value carries. */
async function databaseState (cluster: PostgresCluster, database: string): Promise<Map<string, number>> {
  const client = new pg.Client(cluster.connection(database))
  await client.connect()
  try {
    const { rows } = await client.query<{ db: 'things' | 'metering'; key: Buffer; value: Buffer }>(
      "SELECT db, key, value FROM epx_record WHERE db IN ('things', 'metering') AND value IS NOT NULL")
    const out = new Map<string, number>()
    for (const r of rows) out.set(recordId(r.db, String(decodeKey(r.key))), writeOf(r.db, decodeValue(r.value, r.db === 'metering')))
    return out
  } finally {
    await client.end()
  }
}

/** Cuts every connection of `name` (its change feed's, its pool's), as a network blip does. */
async function cut (cluster: PostgresCluster, database: string, name: string): Promise<void> {
  const admin = new pg.Client(cluster.connection(database))
  await admin.connect()
  try {
    const { rows } = await admin.query<{ pid: number }>('SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [`epx-prop-${name}`])
    // Gone from the server, so an instance's next step finds them cut, not in the middle of it.
    const pids = rows.map(r => r.pid)
    for (let i = 0; i < 200 && pids.length > 0; i++) {
      if ((await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1)', [pids])).rowCount === 0) break
      await sleep(10)
    }
  } finally {
    await admin.end()
  }
}

/**
 * `jobs` written one after another by a store in a child process on `inst`'s replica, which
 * is SIGKILLed `killAfterMs` after it answers. Each job's outcome: `done` landed, `refused`
 * either; the job after the last reported may have been running, the ones after it never ran.
 */
async function writtenByKilledChild (inst: Instance, jobs: readonly RecordOp[][], killAfterMs: number): Promise<Outcome[]> {
  const child = spawn(process.execPath, ['--import=tsx', join(ROOT, 'test/helpers/replica-writer.ts'), inst.dir, JSON.stringify(inst.pool), JSON.stringify(jobs)],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  const exited = new Promise<void>(resolve => child.on('exit', () => resolve()))
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { err += d })
  const start = Date.now()
  while (!/^(ready|unopened)/m.test(out) && child.exitCode === null && Date.now() - start < 20_000) await sleep(10)
  if (/^ready/m.test(out)) await sleep(killAfterMs)
  child.kill('SIGKILL')
  await exited
  if (!/^(ready|unopened)/m.test(out)) throw new Error(`the writer process never answered: ${err.slice(-2000)}`)
  const outcomes: Outcome[] = jobs.map(() => 'threw')
  let last = -1
  for (const m of out.matchAll(/^(done|refused) (\d+)$/gm)) {
    const i = Number(m[2])
    outcomes[i] = m[1] === 'done' ? 'landed' : 'maybe'
    last = Math.max(last, i)
  }
  if (/^ready/m.test(out) && last + 1 < jobs.length) outcomes[last + 1] = 'maybe'
  return outcomes
}

async function property (t: Test, seed: number, steps: number): Promise<void> {
  t.comment(`seed ${seed}, ${steps} steps`)
  // A pool connection cut as it is handed out emits an error nobody hears (the defect the
  // last test of this file shows): recorded, so that it does not end this property's run.
  const unheard = hearUnheard()
  t.teardown(() => unheard.restore())
  const rng: Rng = prng(seed)
  const cluster = fileCluster(t)
  const database = await migratedDatabase(cluster)
  const root = t.testdir()
  const poolOf = (name: string): PoolConfig => ({ ...cluster.connection(database), max: 3, application_name: `epx-prop-${name}`, statement_timeout: 3000 })
  const instances = ['a', 'b'].map(name => new Instance(name, join(root, name), poolOf(name)))
  t.teardown(async () => { for (const inst of instances) await inst.close() })
  for (const inst of instances) inst.open()
  await Promise.all(instances.map(inst => inst.up()))

  const model = new Model()
  const trace: string[] = []
  const counts: Record<string, number> = {}
  // What led to a failure, on stderr (a failure may end the test before its own comment).
  t.teardown(() => { if (!t.passing()) process.stderr.write(`seed ${seed}, the last steps:\n${trace.slice(-40).join('\n')}\n`) })
  /** A step done: its line in the trace; its kind (the line up to its first ':', names left out) counted. */
  const note = (what: string) => {
    trace.push(what)
    const kind = what.split(':')[0]!.replace(/\b[ab]('s)?\b/g, '').replace(/\d+ ms/, '').replace(/\s+/g, ' ').trim()
    counts[kind] = (counts[kind] ?? 0) + 1
  }
  let w = 0
  const op = (): RecordOp => {
    const db = rng.chance(0.7) ? 'things' : 'metering'
    const key = `${db[0]}${rng.int(12)}`
    const removal = rng.chance(0.2)
    // Mostly small records, some of several kB.
    const pad = rng.chance(0.1) ? 2000 + rng.int(6000) : rng.int(40)
    return { db, key, w: removal ? null : ++w, pad }
  }
  const opsOf = (n: number): RecordOp[] => Array.from({ length: n }, op)
  const show = (ops: readonly RecordOp[]) => ops.map(o => `${o.key}=${o.w ?? '∅'}`).join(',')

  /** 1-4 jobs at once through either instance: one record, several, or several and a throw half-way. */
  const writes = (label: string, during?: () => Promise<void>) => {
    const jobs = Array.from({ length: 1 + rng.int(4) }, () => {
      const inst = instances[rng.int(2)]!
      const shape = rng.int(4)
      const ops = opsOf(shape === 0 ? 1 : 2 + rng.int(5))
      const throwAt = shape === 3 ? 1 + rng.int(ops.length - 1) : undefined
      return { inst, ops, throwAt }
    })
    return async () => {
      const running = jobs.map(j => j.inst.write(j.ops, j.throwAt))
      if (during) await during()
      const outcomes = await Promise.all(running)
      model.settleGroup(jobs.map((j, i) => ({ ops: j.ops, outcome: outcomes[i]! })))
      note(`${label}: ${jobs.map((j, i) => `${j.inst.name}[${show(j.ops)}${j.throwAt === undefined ? '' : ` throws at ${j.throwAt}`}]→${outcomes[i]}`).join(' ')}`)
    }
  }

  const check = async (label: string) => {
    await Promise.all(instances.map(inst => inst.up()))
    const actual = await databaseState(cluster, database)
    const wrong = model.mismatches(actual)
    if (wrong.length) t.comment(`last steps:\n${trace.slice(-40).join('\n')}`)
    t.same(wrong, [], `${label}: the database holds what the writes that resolved left (${model.uncertain()} record(s) refused with NO_STORE, either way)`)
    for (const inst of instances) {
      // A cut's last effects may still be arriving: a replica that stops answering meanwhile is waited for again.
      for (let attempt = 1; ; attempt++) {
        try {
          await inst.up()
          let v = await inst.store!.verify()
          // Writers are quiet: a replica behind is still catching up on the last notification.
          for (let i = 0; i < 50 && v?.kind === 'not-at-snapshot'; i++) { await sleep(100); v = await inst.store!.verify() }
          const served = [...inst.served()].sort()
          const wanted = [...actual].sort()
          if (JSON.stringify(served) !== JSON.stringify(wanted)) t.comment(`last steps:\n${trace.slice(-40).join('\n')}`)
          t.same(v?.kind === 'compared' ? v.differ : v, [], `${label}: ${inst.name}'s replica equals the database`)
          t.same(served, wanted, `${label}: ${inst.name} serves what the database holds`)
          break
        } catch (err) {
          // NO_STORE, or verify()'s connection among those cut.
          if (attempt >= 5) throw err
          await sleep(100)
        }
      }
    }
    model.resolve(actual)
  }

  for (let step = 1; step <= steps; step++) {
    const r = rng.next()
    const inst = instances[rng.int(2)]!
    if (r < 0.45) {
      await writes('write')()
    } else if (r < 0.55) {
      const after = rng.int(20)
      await writes(`write, ${inst.name} cut after ${after} ms`, async () => { await sleep(after); await cut(cluster, database, inst.name) })()
    } else if (r < 0.61) {
      await cut(cluster, database, inst.name)
      note(`${inst.name} cut`)
    } else if (r < 0.64) {
      const under = rng.chance(0.5)
      const restart = async () => { await sleep(rng.int(10)); cluster.restart() }
      if (under) await writes('write, database restarted during', restart)()
      else { await restart(); note('restart') }
      // Half the time the instances are waited for: writes then land, rather than all being refused.
      if (rng.chance(0.5)) { await Promise.all(instances.map(i => i.up())); note('both up') }
    } else if (r < 0.70) {
      // Closed under its writes: what was accepted finishes or fails first (close()'s promise).
      const running = writes(`write, ${inst.name} closed during`, async () => { await sleep(rng.int(5)); await inst.close() })
      await running()
      inst.open()
    } else if (r < 0.72) {
      await inst.close()
      const jobs = Array.from({ length: 30 }, () => opsOf(1 + rng.int(4)))
      const killAfter = rng.int(150)
      const outcomes = await writtenByKilledChild(inst, jobs, killAfter)
      for (const [i, ops] of jobs.entries()) model.settleGroup([{ ops, outcome: outcomes[i]! }])
      note(`${inst.name}'s writer process SIGKILLed ${killAfter} ms after it answered: ${outcomes.filter(o => o === 'landed').length} landed, ${outcomes.filter(o => o === 'maybe').length} either`)
      inst.open()
    } else if (r < 0.76) {
      await inst.close()
      rmSync(inst.dir, { recursive: true, force: true })
      inst.open()
      note(`${inst.name} reloaded from scratch`)
    } else if (r < 0.85) {
      await inst.up()
      note(`${inst.name} up`)
    } else {
      await writes('write')()
    }
    if (step % CHECK_EVERY === 0 || step === steps) await check(`after step ${step}`)
  }
  if (unheard.errors.length) t.comment(`errors on a pool connection nobody heard (the defect below): ${unheard.errors.length}`)
  t.comment(`steps: ${Object.entries(counts).map(([k, n]) => `${k} ×${n}`).join(', ')}`)
}

t.test(`two instances under writes, cuts, restarts, kills and reloads: every replica equals the database and serves what landed (seed ${SEED})`, async t => {
  await property(t, SEED, STEPS)
})

/**
 * A proxy to the cluster's socket that, while `ending`, passes a new connection's startup
 * and then, in the same write as its ReadyForQuery, the FATAL a pg_terminate_backend or a
 * restart sends: the client reads both in one chunk.
 */
async function endingProxy (cluster: PostgresCluster) {
  let ending = false
  const sockets = new Set<Socket>()
  const fatal = (): Buffer => {
    const fields = Buffer.from('SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0')
    const head = Buffer.alloc(5)
    head[0] = 0x45   // 'E'
    head.writeInt32BE(4 + fields.length, 1)
    return Buffer.concat([head, fields])
  }
  const server = createServer(client => {
    const end = ending
    const server = connect(join(cluster.socketDir, `.s.PGSQL.${cluster.port}`))
    for (const s of [client, server]) { sockets.add(s); s.on('error', () => {}); s.on('close', () => sockets.delete(s)) }
    client.pipe(server)
    if (!end) { server.pipe(client); return }
    let seen = Buffer.alloc(0)
    server.on('data', (d: Buffer) => {
      seen = Buffer.concat([seen, d])
      // Messages: a type byte, then a length that counts itself.
      for (let at = 0; seen.length >= at + 5;) {
        const next = at + 1 + seen.readInt32BE(at + 1)
        if (seen.length < next) return
        if (seen[at] === 0x5a) { client.end(Buffer.concat([seen.subarray(0, next), fatal()])); server.destroy(); return }
        at = next
      }
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    set ending (on: boolean) { ending = on },
    close: () => { for (const s of sockets) s.destroy(); server.close() },
  }
}

// node-postgres's pool takes its own error listener off a connection as it hands it out,
// before the borrower's continuation puts one on; a connection whose FATAL (a
// pg_terminate_backend, a database restart) arrives in the same read as its ReadyForQuery
// would emit 'error' with nobody listening, an uncaught exception that ends the process
// (the property above met it about once in ten runs of 200 steps). The store's pool puts
// a listener on every connection for its whole life (postgres/connections.ts).
t.test('a pool connection ended by the server as it is handed out is heard: the write is refused, the process lives', async t => {
  const cluster = fileCluster(t)
  const database = await migratedDatabase(cluster)
  const proxy = await endingProxy(cluster)
  t.teardown(proxy.close)
  const unheard = hearUnheard()
  t.teardown(() => unheard.restore())
  const store = openStore(t.testdir(), { postgres: { pool: { host: '127.0.0.1', port: proxy.port, user: cluster.user, database, max: 2 } } })
  t.teardown(() => store.close())
  await store.opened
  proxy.ending = true
  const things = store.db<number>('things')
  const outcome = await store.writeDurable(() => things.putSync('k', 1)).then(() => 'landed', (err: { code?: string }) => err.code)
  t.equal(outcome, 'NO_STORE', 'the write is refused')
  t.same(unheard.errors, [], 'no error was left unheard on a pool connection (Node would have ended the process)')
})
