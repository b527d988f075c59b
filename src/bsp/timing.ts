/**
 * When the client waits: jittered exponential backoff that never asks sooner than the
 * server's Retry-After, the contract's polling times, and the injectable clock, sleep
 * and randomness the tests stand on.
 * @module
 */
import { DateTime } from 'luxon'
import { PARIS, parisDayMs } from '../contract/paris-day.ts'

export interface Timing {
  now(): Date
  sleep(ms: number): Promise<void>
  /** In [0, 1). */
  random(): number
}

export const realTiming: Timing = {
  now: () => new Date(),
  sleep: ms => new Promise(resolve => setTimeout(resolve, ms)),
  random: Math.random,
}

/** Longest wait between two tries of one request. */
const MAX_BACKOFF_MS = 60_000

/**
 * The wait before try `attempt + 1` (attempt 0 is the first failure): 1 s, 2 s, 4 s, …
 * up to a minute, never less than Retry-After, plus up to 20 % of jitter so a fleet of
 * clients does not come back in step.
 */
export function backoffMs (attempt: number, retryAfterSecs: number | undefined, random: () => number): number {
  const base = Math.max(Math.min(1000 * 2 ** attempt, MAX_BACKOFF_MS), (retryAfterSecs ?? 0) * 1000)
  return Math.round(base * (1 + 0.2 * random()))
}

/** Contract §1 and §8: the first daily fetch at about 08:30 Paris, after the 08:00 publication. */
const FIRST_FETCH = { hour: 8, minute: 30 }

/**
 * When a watcher of `targetDate` should make its first attempt: 08:30 Paris of the day
 * before (the daily publication of D+1 is at D 08:00), or now if that is past.
 */
export function firstAttemptAt (targetDate: string, now: Date): Date {
  const at = DateTime.fromISO(targetDate, { zone: PARIS }).minus({ days: 1 }).set({ ...FIRST_FETCH, second: 0, millisecond: 0 })
  return at.toMillis() > now.getTime() ? at.toJSDate() : now
}

/** The end of the target day in Paris: past it, no revision can matter to a watcher. */
export function endOfDay (targetDate: string): Date {
  return new Date(parisDayMs(targetDate).endMs)
}
