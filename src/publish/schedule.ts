/**
 * When Besoins_Agreges are published (DECISIONS.md "Besoins_Agreges publication"): the
 * configured cron expressions in the configured time zone (Europe/Paris), daily 08:00
 * for D+1, Friday 08:00 also for Saturday and Sunday, and a catch-up of a run missed.
 * Which dates a run publishes is a pure function of the clock.
 *
 * A run is never skipped for firing late. node-cron's own timer runs a job at most
 * ~1 s late and otherwise drops it until the next day, and the solver shares this event
 * loop (a busy cycle of a few seconds at 08:00 is ordinary): so the expressions are
 * only matched here (node-cron's matcher), and a tick every few seconds runs every
 * occurrence whose instant has passed since the last one handled, however late. Each
 * tick also catches up (a site with no revision of a date due today is published now),
 * which reads the replica only.
 *
 * Instances that share one store publish once for all: only the leader's runs publish
 * (store/leadership.ts), fenced (a run of a leader deposed meanwhile commits nothing),
 * and whoever leads catches up at its ticks (a leader that died at 07:59 leaves its
 * 08:00 run to the next).
 * @module
 */
import cron, { type ScheduledTask } from 'node-cron'
import { DateTime } from 'luxon'
import type { EpxConfig } from '../config.ts'
import type { Clock, Logger, Site, SolverPort } from '../host/contract.ts'
import { EpxError } from '../errors.ts'
import { addDays, parisDateOf, weekdayOf } from '../contract/paris-day.ts'
import type { Revisions } from '../store/revisions.ts'
import { eachTakeover, soleInstance, type Leadership } from '../store/leadership.ts'
import type { Publisher } from './publish-run.ts'

export type RunKind = 'daily' | 'weekend'

/**
 * Target dates of a run at `instant`, from its Paris date D (target dates are Paris
 * days by contract, whatever zone the crons run in):
 * - daily: D+1;
 * - weekend: the days of the coming weekend still ahead. On Friday, the contract's
 *   case, that is Saturday and Sunday (D+1, D+2); on Saturday only Sunday; on Sunday
 *   to Thursday the next Saturday and Sunday (for an operator who moves the cron).
 * On Friday the daily run wants Saturday too; the publisher makes the two requests
 * for Saturday one run (an identical request joins the running one).
 */
export function targetDatesFor (kind: RunKind, instant: Date): string[] {
  const today = parisDateOf(instant)
  if (kind === 'daily') return [addDays(today, 1)]
  const weekday = weekdayOf(today)   // 1 = Monday … 7 = Sunday
  if (weekday === 6) return [addDays(today, 1)]
  const toSaturday = weekday === 7 ? 6 : 6 - weekday
  return [addDays(today, toSaturday), addDays(today, toSaturday + 1)]
}

/**
 * True when `expression` had an occurrence earlier today (in `timezone`) at or before
 * `instant`: the run of today is due, so if it did not happen it was missed. Mirrors
 * node-cron's matching (month, day of month and day of week must all match).
 */
export function firedEarlierToday (expression: string, timezone: string, instant: Date): boolean {
  const f = cron.parse(expression)
  const local = DateTime.fromJSDate(instant, { zone: timezone })
  const weekday = local.weekday % 7   // cron: 0 = Sunday (7 also accepted)
  const dayMatches = f.month.includes(local.month) && f.dayOfMonth.includes(local.day) &&
    (f.dayOfWeek.includes(weekday) || (weekday === 0 && f.dayOfWeek.includes(7)))
  if (!dayMatches || !f.hour.length || !f.minute.length) return false
  const first = local.set({
    hour: Math.min(...f.hour), minute: Math.min(...f.minute), second: Math.min(...(f.second.length ? f.second : [0])), millisecond: 0,
  })
  return first.toMillis() <= local.toMillis()
}

export interface ScheduleOptions {
  readonly config: Readonly<EpxConfig['publish']>
  readonly publisher: Publisher
  readonly revisions: Revisions
  readonly solver: SolverPort
  readonly clock: Clock
  readonly log: Logger
  /** Whether this instance's runs publish (default: it is the only one, they do). */
  readonly leadership?: Leadership
  /**
   * A date the catch-up published (or failed to) is not caught up again within this
   * (default 5 min): a site the solver keeps failing is retried at that pace, not at
   * every tick, and a run in progress is not doubled.
   */
  readonly catchUpRetryMs?: number
  /** How often the schedule looks at the clock (default 2 s): a run fires at most this late after its instant, plus what the event loop was blocked. */
  readonly tickMs?: number
}

export interface Schedule {
  /** The latest tick's work (the runs due and the catch-up): resolves when it is done, never rejects. */
  readonly caughtUp: Promise<void>
  /** Runs a tick now (the timer does every `tickMs`); resolves when its work is done, never rejects. */
  tick(): Promise<void>
  /** Stops the ticks and waits for the work in progress: no timer is left behind. */
  stop(): Promise<void>
}

/** Occurrences further back than this are not run late (the catch-up covers today's). */
const MAX_LATENESS_MS = 86_400_000
const DEFAULT_TICK_MS = 1000
const DEFAULT_CATCH_UP_RETRY_MS = 300_000
/** A run that fires later than this after its instant says so (the event loop was blocked). */
const LATE_MS = 1500

/**
 * The latest instant in (`afterMs`, `nowMs`] whose wall time in the task's time zone
 * the expression matches (node-cron's matcher: DST days included, a wall time that
 * does not exist that day never matches), or undefined. Looks only at the whole
 * seconds the expression allows.
 */
export function latestOccurrence (task: ScheduledTask, seconds: readonly number[], afterMs: number, nowMs: number): number | undefined {
  const from = Math.max(afterMs, nowMs - MAX_LATENESS_MS)
  for (let minute = Math.floor(nowMs / 60_000) * 60_000; minute + 59_000 > from; minute -= 60_000) {
    for (let k = seconds.length - 1; k >= 0; k--) {
      const at = minute + seconds[k]! * 1000
      if (at > nowMs || at <= from) continue
      if (task.match(new Date(at))) return at
    }
  }
  return undefined
}

type CatchUpOptions = Omit<ScheduleOptions, 'config'> & { config: Pick<EpxConfig['publish'], 'dailyCron' | 'weekendCron' | 'timezone'> }

/**
 * Runs missed today: for each schedule whose time has passed today, the target dates
 * it wants and, for each, the sites with no revision at all yet (DECISIONS.md: "if
 * today's 08:00 has passed and D+1 is not yet published for a site, publish it now").
 * `recent` (target date → when it was last published or caught up, ms): dates tried
 * within `catchUpRetryMs` are left alone. `now`: a tick's, the instant its runs were
 * matched at (read again, an 08:00 passed meanwhile would be both caught up and run).
 */
export async function catchUp (opts: CatchUpOptions, recent?: Map<string, number>, now: Date = opts.clock.now()): Promise<void> {
  const dates = new Set<string>()
  const kinds: Array<[RunKind, string]> = [['daily', opts.config.dailyCron], ['weekend', opts.config.weekendCron]]
  for (const [kind, expression] of kinds) {
    if (firedEarlierToday(expression, opts.config.timezone, now)) for (const d of targetDatesFor(kind, now)) dates.add(d)
  }
  const retryMs = opts.catchUpRetryMs ?? DEFAULT_CATCH_UP_RETRY_MS
  for (const d of dates) if (recent && now.getTime() - (recent.get(d) ?? -Infinity) < retryMs) dates.delete(d)
  if (!dates.size) return
  const leadership = opts.leadership ?? soleInstance
  let sites: readonly Site[] | undefined
  const runs: Array<Promise<unknown>> = []
  for (const targetDate of dates) {
    // One range read of the replica per date: this runs at every tick.
    const published = new Set(opts.revisions.latestOfDay(targetDate).map(m => m.siteId))
    sites ??= await opts.solver.sites()
    const missing = sites.filter(s => !published.has(s.site_id)).map(s => s.site_id)
    // Checked: looked at again after retryMs, not at every tick (a range read of every
    // site's latest revision is milliseconds of the solver's thread at 10,000 sites).
    recent?.set(targetDate, now.getTime())
    if (!missing.length) continue
    opts.log.info({ targetDate, sites: missing.length }, 'catching up a missed Besoins_Agreges publication')
    runs.push(leadership.fenced(() => opts.publisher.publish({ targetDate, siteIds: missing.length === sites!.length ? undefined : missing, trigger: 'schedule' })))
  }
  await Promise.all(runs)
}

export function startSchedule (opts: ScheduleOptions): Schedule {
  const { config, log } = opts
  const leadership = opts.leadership ?? soleInstance
  const tickMs = opts.tickMs ?? DEFAULT_TICK_MS
  // Matchers only: created, never started (node-cron's timer is what drops late runs).
  const tasks: Array<{ kind: RunKind; task: ScheduledTask; seconds: number[] }> = []
  try {
    for (const [kind, expression] of [['daily', config.dailyCron], ['weekend', config.weekendCron]] as const) {
      const seconds = cron.parse(expression).second
      tasks.push({
        kind,
        task: cron.createTask(expression, () => {}, { name: `epx-publish-${kind}`, timezone: config.timezone }),
        seconds: (seconds.length ? [...seconds] : [0]).sort((a, b) => a - b),
      })
    }
  } catch (err) {
    for (const t of tasks) void t.task.destroy()
    throw new EpxError('EPX_CONFIG_INVALID', [`publish schedule: ${(err as Error).message}`], { cause: err })
  }

  /** Target date → when it was last published by a run or a catch-up here (the catch-up's pace). */
  const recent = new Map<string, number>()
  const fire = async (kind: RunKind, atMs: number, nowMs: number): Promise<void> => {
    if (!leadership.isLeader()) {
      log.info({ run: kind }, 'scheduled Besoins_Agreges publication left to the leading instance')
      return
    }
    // The dates of the occurrence's instant, not of the moment it runs (a 23:59 run is for its day).
    const dates = targetDatesFor(kind, new Date(atMs))
    const late = nowMs - atMs
    // A tick finds a time up to tickMs after it passed: later than that, the loop was held.
    if (late > tickMs + LATE_MS) log.warn({ run: kind, targetDates: dates, lateMs: late }, `scheduled Besoins_Agreges publication runs ${Math.round(late / 1000)} s late (this event loop was busy at its time)`)
    log.info({ run: kind, targetDates: dates, lateMs: late }, 'scheduled Besoins_Agreges publication')
    for (const d of dates) recent.set(d, nowMs)
    // All requested at once: the publisher serializes them, and a date that the other
    // schedule is already publishing joins that run.
    const results = await Promise.allSettled(dates.map(targetDate =>
      leadership.fenced(() => opts.publisher.publish({ targetDate, trigger: 'schedule' }))))
    for (const r of results) if (r.status === 'rejected') log.error({ run: kind, err: r.reason }, 'scheduled publication failed')
  }

  /** Occurrences before the start are the catch-up's. */
  let handledMs = opts.clock.now().getTime()
  let catchUpFailing = false
  let stopped = false
  const runTick = async (): Promise<void> => {
    const nowMs = opts.clock.now().getTime()
    const due: Array<Promise<void>> = []
    for (const { kind, task, seconds } of tasks) {
      const at = latestOccurrence(task, seconds, handledMs, nowMs)
      if (at !== undefined) due.push(fire(kind, at, nowMs))
    }
    // A clock stepped back does not run an occurrence twice.
    handledMs = Math.max(handledMs, nowMs)
    await Promise.all(due)
    if (stopped || !leadership.isLeader()) return
    try {
      await catchUp(opts, recent, new Date(nowMs))
      if (catchUpFailing) log.info({}, 'missed-run catch-up done')
      catchUpFailing = false
    } catch (err) {
      if (!catchUpFailing) log.error({ err }, 'missed-run catch-up failed; it is tried again at each tick while this instance leads (the next scheduled run publishes anyway)')
      catchUpFailing = true
    }
  }
  let caughtUp: Promise<void> = Promise.resolve()
  let busy = false
  let again: Promise<void> | undefined
  /** One tick at a time: one asked for while the last one works runs after it (once for all asked meanwhile). */
  const tick = (): Promise<void> => {
    if (stopped) return caughtUp
    if (busy) return again ??= caughtUp.then(() => { again = undefined; return tick() })
    busy = true
    caughtUp = runTick().catch(err => { log.error({ err }, 'the publication schedule\'s tick failed') }).finally(() => { busy = false })
    return caughtUp
  }
  const timer = setInterval(() => { void tick() }, tickMs)
  timer.unref()
  // At once on start and at each takeover: what a dead leader or a stopped service left.
  const offTakeover = eachTakeover(leadership, () => { void tick() })
  return {
    get caughtUp () { return caughtUp },
    tick,
    async stop () {
      if (stopped) return
      stopped = true
      clearInterval(timer)
      offTakeover()
      await caughtUp
      await Promise.all(tasks.map(t => t.task.destroy()))
      tasks.length = 0
    },
  }
}
