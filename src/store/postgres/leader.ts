/**
 * The leadership of the instances that share one database: a session-level advisory
 * lock (`pg_try_advisory_lock`) held by a session of its own, a client outside the pool,
 * kept open as long as this instance leads. PostgreSQL releases the lock the moment that
 * session ends, whatever ended it (the process killed, the host gone, the connection
 * cut or terminated), so a dead leader never keeps it; the others try for it every
 * `retryMs` and one of them takes over.
 *
 * A lease bounds the leadership of a leader that is alive but not running (a VM paused,
 * the process stopped, a long GC): its session lives on (the kernel answers TCP), so its
 * lock would too. The leader renews its lease by a check query every `checkMs`; it
 * leads only until `leaseMs` after sending the last one answered (`isLeader()` compares
 * the monotonic clock, so a leader that resumes knows at once, before any timer runs).
 * An instance that finds the lock taken looks at the holder's session: idle for longer
 * than `leaseMs` (PostgreSQL's own clock, since its last query), it is ended
 * (`pg_terminate_backend`), which releases the lock, and the instance takes it. By then
 * the old leader's lease has run out: it sent its last check before that query's end.
 *
 * Writes of leading work are fenced too (leadership.ts `fenced`): the database checks,
 * in the write's transaction, that this session still holds the lock (`LEADER_HOLDER_SQL`).
 * The leader also stops as soon as its session is in doubt: an error or end of the
 * connection, or a check unanswered within `checkTimeoutMs`.
 * @module
 */
import type pg from 'pg'
import type { Logger } from '../../host/contract.ts'
import { runFenced, type Leadership } from '../leadership.ts'

/**
 * The lock's key, in the two-integer key space of advisory locks (`classid`, `objid`),
 * which PostgreSQL keeps apart from the one-bigint space: no bigint key any writer takes
 * can collide with it. 0x657078 is "epx" in ASCII.
 */
export const LEADER_LOCK = { classId: 0x657078, objId: 1 } as const

/**
 * The backend pid holding the leader lock in this database, if any (one row at most):
 * `objsubid` 2 is the two-integer key space; advisory locks are per database, and one
 * cluster may hold several epx databases.
 */
export const LEADER_HOLDER_SQL = 'SELECT l.pid FROM pg_locks l WHERE l.locktype = \'advisory\' AND l.granted ' +
  `AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND l.classid = ${LEADER_LOCK.classId} AND l.objid = ${LEADER_LOCK.objId} AND l.objsubid = 2`

/** The holder and how long its session has been quiet, by the server's clock (null: another role's session, not shown). */
const HOLDER_IDLE_SQL = `SELECT h.pid, (extract(epoch FROM clock_timestamp() - a.state_change) * 1000)::float8 AS idle_ms FROM (${LEADER_HOLDER_SQL}) h LEFT JOIN pg_stat_activity a ON a.pid = h.pid`

export interface PgLeadershipOptions {
  /** How to reach the database (the store's connection settings; one client is made from them). */
  readonly connection: pg.ClientConfig
  readonly log?: Logger
  /** A non-leader tries for the lock this often (default 2 s). */
  readonly retryMs?: number
  /** The leader checks its session this often (default 2 s)… */
  readonly checkMs?: number
  /** …and stops leading when a check is not answered within this (default 4 s). */
  readonly checkTimeoutMs?: number
  /**
   * The lease (default 10 s, longer than `checkMs` + `checkTimeoutMs`): a leader leads
   * until this after sending its last answered check, and the others end the session of
   * a holder quiet for longer. A frozen leader is replaced within `leaseMs` + `retryMs`.
   */
  readonly leaseMs?: number
}

export interface PgLeadership extends Leadership {
  /** The backend pid of the leadership's session while it has one (what a fenced write checks). */
  backendPid(): number | undefined
  /** Gives the leadership up (ends the session) and stops trying. */
  close(): Promise<void>
}

const DEFAULTS = { retryMs: 2000, checkMs: 2000, checkTimeoutMs: 4000, leaseMs: 10_000 }
/** After ending a stale holder's session: tries for the lock this often, this many times, while the server lets it go. */
const RELEASE_POLL_MS = 50
const RELEASE_POLLS = 20

/**
 * Server-side keepalives of the session (ignored on a Unix socket): an unreachable
 * leader's session, and its lock, go after ~16 s (10 s idle, then 3 probes 2 s apart).
 */
const KEEPALIVES = "SELECT set_config('tcp_keepalives_idle', '10', false), set_config('tcp_keepalives_interval', '2', false), set_config('tcp_keepalives_count', '3', false)"

export function pgLeadership (options: PgLeadershipOptions): PgLeadership {
  const o = { ...DEFAULTS, ...options }
  if (o.leaseMs <= o.checkMs + o.checkTimeoutMs) throw new Error(`leadership lease (${o.leaseMs} ms) must be longer than a check's period and timeout (${o.checkMs} + ${o.checkTimeoutMs} ms)`)
  const log = o.log
  const listeners = new Set<(leading: boolean) => void>()
  let client: pg.Client | undefined
  let leading = false
  /** Monotonic time the last answered check (or the winning attempt) was sent: the lease runs from it. */
  let renewedAt = -Infinity
  let pid: number | undefined
  let closed = false
  let timer: NodeJS.Timeout | undefined
  /** The attempt or check in progress: close() waits for it. */
  let step: Promise<void> | undefined
  /** One warning per stretch of failed attempts, not one every retryMs. */
  let failing = false
  let cannotDepose = false

  const set = (now: boolean, why?: string): void => {
    if (leading === now) return
    leading = now
    if (now) log?.info({}, 'this instance leads: it runs the publication schedule and retention')
    else if (closed) log?.info({}, 'this instance gave up the leadership (closing)')
    else log?.warn({ reason: why }, 'this instance no longer leads: publication schedule and retention stopped here until it leads again')
    for (const l of listeners) {
      try { l(now) } catch (err) { log?.error({ err }, 'a leadership listener failed') }
    }
  }

  /** The session `c` is gone or in doubt: drop it, and the leadership with it, at once. */
  const lost = (c: pg.Client | undefined, err?: unknown): void => {
    if (!c || c !== client) return
    client = undefined
    pid = undefined
    c.end().catch(() => {})
    set(false, err instanceof Error ? err.message : 'the leadership session ended')
  }

  const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => {
    let t: NodeJS.Timeout | undefined
    return Promise.race([p, new Promise<never>((_, reject) => { t = setTimeout(() => reject(new Error(`${what} not answered within ${ms} ms`)), ms) })])
      .finally(() => clearTimeout(t))
  }

  const leases = (): boolean => leading && performance.now() - renewedAt < o.leaseMs

  /** Tries for the lock; true when this session holds it now. */
  const tryLock = async (c: pg.Client): Promise<boolean> => {
    const r = await withTimeout(c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [LEADER_LOCK.classId, LEADER_LOCK.objId]),
      o.checkTimeoutMs, 'the leadership attempt')
    return r.rows[0]?.ok === true
  }

  /**
   * The lock is held: if its holder has been quiet past the lease (a frozen leader), ends
   * its session, which releases the lock, and tries for it while the server lets it go.
   */
  const deposeStale = async (c: pg.Client): Promise<boolean> => {
    const r = await withTimeout(c.query<{ pid: number; idle_ms: number | null }>(HOLDER_IDLE_SQL), o.checkTimeoutMs, 'the look at the leader')
    const holder = r.rows[0]
    if (!holder || holder.idle_ms === null || holder.idle_ms <= o.leaseMs || holder.pid === pid) return false
    try {
      await withTimeout(c.query('SELECT pg_terminate_backend($1)', [holder.pid]), o.checkTimeoutMs, 'ending the stale leader\'s session')
    } catch (err) {
      // Another role's session (not ours to end): nobody leads until it goes.
      if (!cannotDepose) log?.error({ pid: holder.pid, reason: (err as Error).message }, 'the leader did not renew its leadership, and this instance cannot end its session: connect every instance as the same role')
      cannotDepose = true
      if (client !== c) throw err
      return false
    }
    cannotDepose = false
    log?.warn({ pid: holder.pid, idleMs: Math.round(holder.idle_ms), leaseMs: o.leaseMs },
      `the leader did not renew its leadership for ${Math.round(holder.idle_ms / 1000)} s: its session was ended, this instance takes over`)
    for (let k = 0; k < RELEASE_POLLS && !closed; k++) {
      const sent = performance.now()
      if (await tryLock(c)) { renewedAt = sent; return true }
      await new Promise(resolve => setTimeout(resolve, RELEASE_POLL_MS))
    }
    return false
  }

  const attempt = async (): Promise<void> => {
    let c = client
    try {
      if (!c) {
        // pg on first use, as the store loads it: an LMDB store's process never loads it.
        const { default: pgModule } = await import('pg')
        const fresh = new ((o.connection as pg.PoolConfig).Client as typeof pg.Client | undefined ?? pgModule.Client)({ ...o.connection, application_name: 'epx leadership' })
        // Before connect: an error event with no listener would end the host.
        fresh.on('error', err => lost(fresh, err))
        fresh.on('end', () => lost(fresh))
        client = c = fresh
        await withTimeout(fresh.connect(), o.checkTimeoutMs, 'connecting')
        await fresh.query(KEEPALIVES)
        const r = await fresh.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
        if (client === fresh) pid = r.rows[0]!.pid
      }
      const sent = performance.now()
      if (leading) {
        await withTimeout(c.query('SELECT 1'), o.checkTimeoutMs, 'the leadership check')
        if (client === c) renewedAt = sent
      } else {
        let won = await tryLock(c)
        if (closed) return
        if (failing) log?.info({}, 'the leadership session is connected again')
        failing = false
        if (won) renewedAt = sent
        else won = await deposeStale(c)
        if (won && client === c && !closed) set(true)
      }
    } catch (err) {
      if (!failing && !closed && !leading) log?.warn({ reason: (err as Error).message }, `cannot try for the leadership; trying again every ${o.retryMs / 1000} s`)
      if (!closed) failing = true
      lost(c, err)
    }
  }

  const next = (): void => {
    if (closed) return
    timer = setTimeout(() => {
      timer = undefined
      const s: Promise<void> = step = attempt().finally(() => { if (step === s) step = undefined; next() })
    }, leading ? o.checkMs : o.retryMs)
    timer.unref()
  }

  const first: Promise<void> = step = attempt().finally(() => { if (step === first) step = undefined; next() })

  return {
    isLeader: leases,
    backendPid: () => pid,
    fenced: run => runFenced({ token: () => leases() ? pid : undefined }, run),
    onChange (listener) {
      listeners.add(listener)
      return () => { listeners.delete(listener) }
    },
    async close () {
      if (closed) return
      closed = true
      if (timer) clearTimeout(timer)
      timer = undefined
      await step?.catch(() => {})
      const c = client
      client = undefined
      // Ending the session releases the lock: the others take over at their next try.
      set(false)
      await c?.end().catch(() => {})
    },
  }
}
