import t from 'tap'
import pg from 'pg'
import { countersPerRequest, startBenchPostgres } from '../../bench/postgres.ts'

// bench/README.md "E-pg": E-pg's cost counts the database's CPU, read from /proc over the
// same window, and the database's counters say how its group commit batched.

t.test("the bench's cluster: migrated, its CPU read from /proc grows with the work done in it, its counters count write transactions and records", async t => {
  const db = await startBenchPostgres()
  t.teardown(() => db.destroy())
  const client = new pg.Client(db.url)
  await client.connect()
  t.teardown(() => client.end())
  const { rows } = await client.query<{ version: number }>('SELECT version FROM epx_schema')
  t.same(rows.map(r => r.version), [1], 'the schema is there: epx store migrate has nothing left to do')

  const c0 = await db.counters()
  const cpu0 = db.cpuNs()
  // Work only a backend of the cluster does: its CPU, not this process's.
  await client.query("SELECT count(*) FROM generate_series(1, 3000000) g WHERE md5(g::text) LIKE 'ab%'")
  for (let i = 0; i < 3; i++) await client.query("SELECT nextval('epx_change_seq'), pg_current_xact_id()")
  const cpu1 = db.cpuNs()
  const c1 = await db.counters()
  t.ok(cpu1 - cpu0 > 50e6, `the backend's CPU is counted (${((cpu1 - cpu0) / 1e6).toFixed(0)} ms)`)
  t.same(countersPerRequest(c0, c1, 3), { transactions: 1, records: 1, walBytes: (c1.walBytes - c0.walBytes) / 3 }, 'three write transactions and three records over three requests')
})
