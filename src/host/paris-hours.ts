/**
 * Paris wall-clock hour of every quarter-hour of a day, for the simulated load
 * profile; memoized per day because the simulation asks for it once per site.
 * @module
 */
import { DateTime } from 'luxon'
import type { Coverage } from './contract.ts'
import { BoundedCache } from '../bounded-cache.ts'

const cache = new BoundedCache<string, readonly number[]>(400)

export function parisHoursOf (coverage: Coverage): readonly number[] {
  return cache.getOrCompute(coverage.targetDate, hoursOf, coverage)
}

function hoursOf (_targetDate: string, coverage: Coverage): readonly number[] {
  const start = Date.parse(coverage.startUtc)
  return Array.from({ length: coverage.slots }, (_, i) =>
    DateTime.fromMillis(start + i * 900_000, { zone: 'Europe/Paris' }).hour)
}
