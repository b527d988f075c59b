/**
 * E-pg's database (bench/README.md "E-pg: epx on the PostgreSQL store"): a throwaway
 * cluster (scripts/postgres-cluster.ts: initdb and pg_ctl in a temporary folder, a Unix
 * socket only), with PostgreSQL's durable defaults (`fsync` and `synchronous_commit` on:
 * a 202 waits for the WAL's flush as E's waits for LMDB's), one database migrated to the
 * store's schema as `epx store migrate` does; and the CPU time of every process of the
 * cluster, read from /proc, so that what the database spends serving a POST counts in
 * E-pg's cost over the same windows as the server's own.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { startPostgres, type PostgresCluster } from '../scripts/postgres-cluster.ts'
import { migrateSchema } from '../src/store/postgres/migrate.ts'

export const BENCH_DATABASE = 'epx_bench'

export interface BenchPostgres {
  readonly cluster: PostgresCluster
  /** The database E-pg's `store.postgres.connectionString` names. */
  readonly url: string
  /** The cluster's CPU time so far (ns, user + system, every process of it, those that ended too). */
  cpuNs(): number
  /** What the database has done so far: its counters, read outside the CPU's window (the read costs CPU too). */
  counters(): Promise<DbCounters>
  destroy(): Promise<void>
}

/**
 * Monotonic counters of the store's database: `transactions` that wrote (transaction ids
 * assigned: one per write batch that reached COMMIT; this read takes one), `records`
 * written (the change sequence), and WAL bytes. A window's differences per request say how
 * the group commit batched (POSTs per COMMIT, hence per WAL flush).
 */
export interface DbCounters { readonly transactions: number; readonly records: number; readonly walBytes: number }

/** Per request over a window, from two readings. */
export function countersPerRequest (a: DbCounters, b: DbCounters, requests: number) {
  const n = Math.max(1, requests)
  // The later reading's own transaction id is not the store's.
  return { transactions: (b.transactions - a.transactions - 1) / n, records: (b.records - a.records) / n, walBytes: (b.walBytes - a.walBytes) / n }
}

export async function startBenchPostgres (): Promise<BenchPostgres> {
  const cluster = startPostgres()
  try {
    cluster.createDatabase(BENCH_DATABASE)
    const client = new pg.Client(cluster.connection(BENCH_DATABASE))
    await client.connect()
    try {
      await migrateSchema(client, BENCH_DATABASE)
    } finally {
      await client.end()
    }
    const postmaster = Number(readFileSync(join(cluster.socketDir, 'data', 'postmaster.pid'), 'latin1').split('\n')[0])
    if (!Number.isInteger(postmaster) || postmaster <= 0) throw new Error('postmaster.pid holds no process id')
    const nsPerTick = 1e9 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'latin1' }).trim() || 100)
    const reader = new pg.Client(cluster.connection(BENCH_DATABASE))
    await reader.connect()
    reader.on('error', () => {})
    const counters = async (): Promise<DbCounters> => {
      const { rows } = await reader.query<{ xid: string; seq: string; lsn: string }>(
        "SELECT pg_current_xact_id()::text AS xid, (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM epx_change_seq)::text AS seq, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS lsn")
      return { transactions: Number(rows[0]!.xid), records: Number(rows[0]!.seq), walBytes: Number(rows[0]!.lsn) }
    }
    return {
      cluster, url: cluster.url(BENCH_DATABASE), cpuNs: () => clusterCpuNs(postmaster, nsPerTick), counters,
      destroy: async () => { await reader.end().catch(() => {}); cluster.destroy() },
    }
  } catch (err) {
    cluster.destroy()
    throw err
  }
}

/**
 * The postmaster's and every live child's time on the CPU (`schedstat`, ns), plus what its
 * children that ended spent (the postmaster's `cutime` + `cstime`, in clock ticks): a
 * backend or an autovacuum worker that exits in a window keeps its CPU in the sum.
 * Every process of the cluster is a child of the postmaster.
 */
export function clusterCpuNs (postmaster: number, nsPerTick: number): number {
  let ns = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      // Fields after the command name (in parentheses, which may hold spaces): state is field 3.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const pid = Number(entry)
      const ppid = Number(f[1])
      if (pid !== postmaster && ppid !== postmaster) continue
      ns += Number(readFileSync(`/proc/${entry}/schedstat`, 'latin1').split(' ')[0])
      // cutime, cstime: fields 16 and 17 of stat, 13 and 14 after the state.
      if (pid === postmaster) ns += (Number(f[13]) + Number(f[14])) * nsPerTick
    } catch {
      // The process ended while /proc was read: its time is in the postmaster's cutime.
    }
  }
  return ns
}
