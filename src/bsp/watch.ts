/**
 * `--watch`: polling as the contract asks (§1, §4.1, §8). The first round at about 08:30
 * Paris the day before the target day (publication is at 08:00), then a round every
 * `intervalSecs` (jittered; never sooner than a 404's Retry-After), with If-None-Match,
 * so a republication is picked up on the next round and an unchanged revision costs a
 * 304. It stops once the target day is over in Paris, or after `rounds` rounds.
 * @module
 */
import { pullRound, type PullOptions, type RoundReport } from './pull.ts'
import { endOfDay, firstAttemptAt } from './timing.ts'

export interface WatchOptions extends PullOptions {
  /** Between two rounds (default 300 s, the contract's pace after a 404; at least 60 s, the cache lifetime). */
  readonly intervalSecs?: number
  /** Stop after this many rounds (default: when the target day is over). */
  readonly rounds?: number
  /** Called after each round, e.g. to print its summary. */
  readonly onRound?: (report: RoundReport) => void
  /** Stops the watch between rounds (Ctrl+C). */
  readonly signal?: AbortSignal
  /**
   * Called before each wait with when the next round is due and why then, so a watcher
   * started at dawn says it waits for 08:30 Paris instead of seeming to hang.
   */
  readonly onWait?: (until: Date, why: string) => void
}

export const DEFAULT_INTERVAL_SECS = 300
const MIN_INTERVAL_SECS = 60

export async function watch (o: WatchOptions): Promise<RoundReport[]> {
  const { timing } = o
  const reports: RoundReport[] = []
  const interval = Math.max(o.intervalSecs ?? DEFAULT_INTERVAL_SECS, MIN_INTERVAL_SECS)
  const end = endOfDay(o.targetDate).getTime()
  const first = firstAttemptAt(o.targetDate, timing.now())
  const untilFirst = first.getTime() - timing.now().getTime()
  if (untilFirst > 0 && first.getTime() < end) o.onWait?.(first, `the first round of ${o.targetDate}: 08:30 Europe/Paris the day before, after the 08:00 publication`)
  await timing.sleep(untilFirst)
  while (!o.signal?.aborted && timing.now().getTime() < end) {
    const report = await pullRound(o)
    reports.push(report)
    o.onRound?.(report)
    if (o.rounds !== undefined && reports.length >= o.rounds) break
    const notBefore = Math.max(interval, ...report.outcomes.map(x => x.result === 'missing' ? x.retryAfterSecs : 0))
    const wait = Math.round(notBefore * 1000 * (1 + 0.1 * timing.random()))
    const next = new Date(timing.now().getTime() + wait)
    if (next.getTime() < end) o.onWait?.(next, notBefore > interval ? 'the next round, no sooner than the Retry-After of a site not published yet' : 'the next round')
    await timing.sleep(wait)
  }
  return reports
}
