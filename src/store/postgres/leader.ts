/**
 * The leadership of the instances that share one database: a session-level advisory
 * lock (`pg_try_advisory_lock`) held by a session of its own, a client outside the pool,
 * kept open as long as this instance leads. PostgreSQL releases the lock the moment that
 * session ends, whatever ended it (the process killed, the host gone, the connection
 * cut or terminated), so a dead leader never keeps it; the others try for it every
 * `retryMs` and one of them takes over.
 *
 * The leader stops leading as soon as its session is in doubt: an error or end of the
 * connection, or a check query unanswered within `checkTimeoutMs`. It may stop before
 * the server has released the lock (a network partition), never after: the server keeps
 * an unreachable session's lock until its TCP keepalives give up (set below to ~16 s,
 * longer than the check's timeout), so two instances never lead at once.
 * @module
 */
import type pg from 'pg'
import type { Logger } from '../../host/contract.ts'
import type { Leadership } from '../leadership.ts'

/**
 * The lock's key, in the two-integer key space of advisory locks (`classid`, `objid`),
 * which PostgreSQL keeps apart from the one-bigint space: no bigint key any writer takes
 * can collide with it. 0x657078 is "epx" in ASCII.
 */
export const LEADER_LOCK = { classId: 0x657078, objId: 1 } as const

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
}

export interface PgLeadership extends Leadership {
  /** Gives the leadership up (ends the session) and stops trying. */
  close(): Promise<void>
}

const DEFAULTS = { retryMs: 2000, checkMs: 2000, checkTimeoutMs: 4000 }

/**
 * Server-side keepalives of the session (ignored on a Unix socket): an unreachable
 * leader's session, and its lock, go after ~16 s (10 s idle, then 3 probes 2 s apart).
 */
const KEEPALIVES = "SELECT set_config('tcp_keepalives_idle', '10', false), set_config('tcp_keepalives_interval', '2', false), set_config('tcp_keepalives_count', '3', false)"

export function pgLeadership (options: PgLeadershipOptions): PgLeadership {
  const o = { ...DEFAULTS, ...options }
  const log = o.log
  const listeners = new Set<(leading: boolean) => void>()
  let client: pg.Client | undefined
  let leading = false
  let closed = false
  let timer: NodeJS.Timeout | undefined
  /** The attempt or check in progress: close() waits for it. */
  let step: Promise<void> | undefined
  /** One warning per stretch of failed attempts, not one every retryMs. */
  let failing = false

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
    c.end().catch(() => {})
    set(false, err instanceof Error ? err.message : 'the leadership session ended')
  }

  const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => {
    let t: NodeJS.Timeout | undefined
    return Promise.race([p, new Promise<never>((_, reject) => { t = setTimeout(() => reject(new Error(`${what} not answered within ${ms} ms`)), ms) })])
      .finally(() => clearTimeout(t))
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
      }
      if (leading) {
        await withTimeout(c.query('SELECT 1'), o.checkTimeoutMs, 'the leadership check')
      } else {
        const r = await withTimeout(c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [LEADER_LOCK.classId, LEADER_LOCK.objId]),
          o.checkTimeoutMs, 'the leadership attempt')
        if (closed) return
        if (failing) log?.info({}, 'the leadership session is connected again')
        failing = false
        if (r.rows[0]?.ok && client === c) set(true)
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
    isLeader: () => leading,
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
