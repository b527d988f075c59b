/**
 * When Besoins_Agreges are published (DECISIONS.md "Besoins_Agreges publication"):
 * node-cron in the configured time zone (Europe/Paris), daily 08:00 for D+1, Friday
 * 08:00 also for Saturday and Sunday, and on start a catch-up of a run missed while
 * the service was down. Which dates a run publishes is a pure function of the clock.
 *
 * Instances that share one store publish once for all: only the leader's runs publish
 * (store/leadership.ts), and an instance that takes the leadership over catches up as
 * one that starts does (a leader that died at 07:59 leaves its 08:00 run to the next).
 * @module
 */
import cron, { type ScheduledTask } from 'node-cron'
import { DateTime } from 'luxon'
import type { EpxConfig } from '../config.ts'
import type { Clock, Logger, SolverPort } from '../host/contract.ts'
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
  /** A catch-up that failed is tried again after this, while this instance leads (default 10 s). */
  readonly catchUpRetryMs?: number
}

export interface Schedule {
  /** The latest catch-up, started on start or at a takeover (resolves when it is done, or given up; never rejects). */
  readonly caughtUp: Promise<void>
  /** Destroys every cron task and waits for the catch-up: no timer is left behind. */
  stop(): Promise<void>
}

/**
 * Runs missed today: for each schedule whose time has passed today, the target dates
 * it wants and, for each, the sites with no revision at all yet (DECISIONS.md: "if
 * today's 08:00 has passed and D+1 is not yet published for a site, publish it now").
 */
export async function catchUp (opts: Omit<ScheduleOptions, 'config'> & { config: Pick<EpxConfig['publish'], 'dailyCron' | 'weekendCron' | 'timezone'> }): Promise<void> {
  const now = opts.clock.now()
  const dates = new Set<string>()
  const kinds: Array<[RunKind, string]> = [['daily', opts.config.dailyCron], ['weekend', opts.config.weekendCron]]
  for (const [kind, expression] of kinds) {
    if (firedEarlierToday(expression, opts.config.timezone, now)) for (const d of targetDatesFor(kind, now)) dates.add(d)
  }
  if (!dates.size) return
  const sites = await opts.solver.sites()
  const runs: Array<Promise<unknown>> = []
  for (const targetDate of dates) {
    const missing = sites.filter(s => !opts.revisions.latest(s.site_id, targetDate)).map(s => s.site_id)
    if (!missing.length) continue
    opts.log.info({ targetDate, sites: missing.length }, 'catching up a missed Besoins_Agreges publication')
    runs.push(opts.publisher.publish({ targetDate, siteIds: missing.length === sites.length ? undefined : missing, trigger: 'schedule' }))
  }
  await Promise.all(runs)
}

export function startSchedule (opts: ScheduleOptions): Schedule {
  const { config, log } = opts
  const tasks: ScheduledTask[] = []
  const cronLog = {
    info: (message: string) => log.debug({ source: 'node-cron' }, message),
    warn: (message: string) => log.warn({ source: 'node-cron' }, message),
    error: (message: string | Error) => log.error({ source: 'node-cron', err: message }, 'scheduler error'),
    debug: (message: string | Error) => log.debug({ source: 'node-cron', message: String(message) }, 'scheduler'),
  }
  const leadership = opts.leadership ?? soleInstance
  const fire = (kind: RunKind) => async () => {
    if (!leadership.isLeader()) {
      log.info({ run: kind }, 'scheduled Besoins_Agreges publication left to the leading instance')
      return
    }
    const dates = targetDatesFor(kind, opts.clock.now())
    log.info({ run: kind, targetDates: dates }, 'scheduled Besoins_Agreges publication')
    // All requested at once: the publisher serializes them, and a date that the other
    // schedule is already publishing joins that run.
    const results = await Promise.allSettled(dates.map(targetDate => opts.publisher.publish({ targetDate, trigger: 'schedule' })))
    for (const r of results) if (r.status === 'rejected') log.error({ run: kind, err: r.reason }, 'scheduled publication failed')
  }
  try {
    for (const [kind, expression] of [['daily', config.dailyCron], ['weekend', config.weekendCron]] as const) {
      tasks.push(cron.schedule(expression, fire(kind), {
        name: `epx-publish-${kind}`, timezone: config.timezone, logger: cronLog,
      }))
    }
  } catch (err) {
    for (const t of tasks) void t.destroy()
    throw new EpxError('EPX_CONFIG_INVALID', [`publish schedule: ${(err as Error).message}`], { cause: err })
  }
  let stopped = false
  let retry: { timer: NodeJS.Timeout; resolve: () => void } | undefined
  const pause = (ms: number) => new Promise<void>(resolve => {
    retry = { timer: setTimeout(() => { retry = undefined; resolve() }, ms), resolve }
  })
  /** Catches up, again after a failure (a new leader's store may still be reconnecting), while this instance leads. */
  const catchUpWhileLeading = async (): Promise<void> => {
    for (let attempt = 0; !stopped && leadership.isLeader(); attempt++) {
      try {
        await catchUp(opts)
        if (attempt > 0) log.info({ attempts: attempt + 1 }, 'missed-run catch-up done')
        return
      } catch (err) {
        if (attempt === 0) log.error({ err }, `missed-run catch-up failed; trying again every ${(opts.catchUpRetryMs ?? 10_000) / 1000} s while this instance leads (the next scheduled run publishes anyway)`)
      }
      await pause(opts.catchUpRetryMs ?? 10_000)
    }
  }
  let caughtUp: Promise<void> = Promise.resolve()
  const offTakeover = eachTakeover(leadership, () => {
    caughtUp = caughtUp.then(catchUpWhileLeading)
  })
  return {
    get caughtUp () { return caughtUp },
    async stop () {
      stopped = true
      offTakeover()
      if (retry) { clearTimeout(retry.timer); retry.resolve() }
      await Promise.all(tasks.map(t => t.destroy()))
      tasks.length = 0
      await caughtUp
    },
  }
}
