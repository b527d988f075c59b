// The PostgreSQL store at the size of a real deployment: a database of more than
// 150,000 records (EPX_LONG=1, `npm run campaign`; 15,000 in `npm test`) whose change
// sequence crosses 99,999 → 100,000 and 999,999 → 1,000,000 at either size (set with
// setval, not a million inserts), with rewrites and removals among them. A
// replica that followed it live, one caught up from far behind (closed before most of
// the writes), one loaded from scratch and the writer's own each end equal to the
// database (store.verify(), postgres/verify.ts), record for record, and hold exactly the
// records the test wrote, counted apart from the check.
import t from 'tap'
import { join } from 'node:path'
import { open } from 'lmdb'
import type { Store } from '../../../src/store/open-store.ts'
import { storesOf } from '../../helpers/store-kinds.ts'
import { sized } from '../../helpers/long.ts'

const { openStore, cluster: clusterOf, databaseOf } = storesOf(t, 'postgres')
const cluster = clusterOf()
// 25–40 s alone; more under the suite's parallel files on 2 cores.
t.setTimeout(360_000)

/** Records per writeDurable job (one statement, one transaction). */
const PER_JOB = 5000
/** The records written, in units: B follows the first 40, the next 30 cross seq 100,000, the next 40 seq 1,000,000, then 42 more. */
const UNIT = sized(100, 1000)
const CROSS_100K = 40 * UNIT
const CROSS_1M = 70 * UNIT
const RECORDS = 152 * UNIT
/** A key the writes across 100,000 removed: the first i ≡ 1 (mod 30) among them, less the offset. */
const REMOVED = (CROSS_100K + (31 - CROSS_100K % 30) % 30) - CROSS_100K + 1000

t.test(`${RECORDS.toLocaleString('en')} records across seq 100,000 and 1,000,000: every replica equals the database, whether it followed, caught up from far behind or loaded from scratch`, async t => {
  // One folder per test (a second t.testdir() would empty it): a replica each in it.
  const root = t.testdir()
  const dirA = join(root, 'dirA')
  const database = await databaseOf(dirA)
  const connect = { pool: { ...cluster.connection(database), max: 4 } }
  const open = (dir: string): Promise<Store> => openStore(dir, { postgres: connect })
  const a = await open(dirA)
  t.teardown(() => a.close())
  const things = a.db<{ n: number; text: string }>('things')
  const meters = a.db<Buffer>('metering', { binary: true })
  const live = new Map<string, number>()   // what the test expects: key → n
  let bytes = 0

  const write = async (from: number, to: number, also: (i: number) => void = () => {}) => {
    for (let lo = from; lo < to; lo += PER_JOB) {
      await a.writeDurable(() => {
        for (let i = lo; i < Math.min(lo + PER_JOB, to); i++) {
          things.putSync(`t${i}`, { n: i, text: `record ${i}` })
          live.set(`t${i}`, i)
          also(i)
        }
      })
    }
  }
  const setSeq = (n: number) => cluster.psql(`SELECT setval('epx_change_seq', ${n})`, database)
  const topSeq = () => Number(cluster.psql('SELECT max(seq) FROM epx_record', database).trim())

  // B follows from the start, then is closed: it comes back far behind.
  const dirB = join(root, 'dirB')
  const b = await open(dirB)
  await write(0, CROSS_100K)
  await b.close()

  setSeq(99_990)
  // Across 100,000: new records, rewrites of old ones, removals of others.
  await write(CROSS_100K, CROSS_1M, i => {
    if (i % 10 === 0) { things.putSync(`t${i - CROSS_100K}`, { n: -i, text: 'rewritten' }); live.set(`t${i - CROSS_100K}`, -i) }
    if (i % 30 === 1) { things.removeSync(`t${i - CROSS_100K + 1000}`); live.delete(`t${i - CROSS_100K + 1000}`) }
  })
  t.ok(topSeq() > 100_000, `the sequence crossed 100,000 (now ${topSeq()})`)

  // D follows live from here on.
  const dirD = join(root, 'dirD')
  const d = await open(dirD)
  t.teardown(() => d.close())

  setSeq(999_990)
  await write(CROSS_1M, 110 * UNIT, i => {
    if (i % 7 === 0) { const v = Buffer.alloc(64, i % 251); meters.putSync(`m${i}`, v); bytes++ }
  })
  t.ok(topSeq() > 1_000_000, `the sequence crossed 1,000,000 (now ${topSeq()})`)
  await write(110 * UNIT, RECORDS)

  const expected = live.size + bytes
  t.ok(expected >= 150 * UNIT, `${expected} live records (at least ${(150 * UNIT).toLocaleString('en')})`)

  const reopenedB = await open(dirB)
  t.teardown(() => reopenedB.close())
  const dirC = join(root, 'dirC')
  const c = await open(dirC)
  t.teardown(() => c.close())

  for (const [name, store] of [['the writer', a], ['B, caught up from far behind', reopenedB], ['C, loaded from scratch', c], ['D, followed live', d]] as const) {
    const v = await store.verify()
    if (v?.kind !== 'compared') { t.fail(`${name}: not at the database's snapshot: ${JSON.stringify(v)}`); continue }
    t.same(v.differ, [], `${name} equals the database (at seq ${v.seq})`)
    const held = v.tables.reduce((n, table) => n + table.replica.records, 0)
    t.equal(held, expected, `${name} holds the ${expected} records written, no more, no fewer`)
    const sample = store.db<{ n: number }>('things')
    t.equal(sample.get('t0')?.n, -CROSS_100K, `${name}: a rewrite made across 100,000 is the value held`)
    t.equal(sample.get(`t${REMOVED}`), undefined, `${name}: a removal made across 100,000 is gone`)
    t.equal(sample.get(`t${RECORDS - 1}`)?.n, RECORDS - 1, `${name}: the last record is there`)
  }
})

t.test('a replica whose load from the database was cut short is loaded again, never served half-loaded', async t => {
  const root = t.testdir()
  const dirA = join(root, 'dirA')
  const database = await databaseOf(dirA)
  const connect = { pool: { ...cluster.connection(database), max: 4 } }
  const a = await openStore(dirA, { postgres: connect })
  t.teardown(() => a.close())
  const things = a.db<number>('things')
  for (let lo = 0; lo < 12_000; lo += PER_JOB) {
    await a.writeDurable(() => { for (let i = lo; i < Math.min(lo + PER_JOB, 12_000); i++) things.putSync(`k${i}`, i) })
  }
  const dirB = join(root, 'dirB')
  const first = await openStore(dirB, { postgres: connect })
  await first.close()
  // What a load cut after its first page leaves: the cursor past that page, the rest
  // missing, and the mark of a load not yet verified.
  const env = open({ path: dirB, noSubdir: false, maxDbs: 32, compression: false })
  const raw = env.openDB({ name: 'things', encoding: 'msgpack', sharedStructuresKey: Symbol.for('structures') })
  const meta = env.openDB({ name: 'epx-replica', encoding: 'msgpack' })
  await env.transaction(() => {
    for (let i = 5000; i < 12_000; i++) raw.removeSync(`k${i}`)
    meta.putSync('loading', true)
  })
  await env.close()

  const b = await openStore(dirB, { postgres: connect })
  t.teardown(() => b.close())
  const v = await b.verify()
  t.equal(v?.kind, 'compared')
  if (v?.kind === 'compared') t.same(v.differ, [], 'the replica, opened again, was loaded whole and equals the database')
  t.equal(b.db<number>('things').get('k11999'), 11_999, 'a record the cut load had not reached is served')
})
