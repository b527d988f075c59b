/**
 * How a target is judged: one figure against its limit, or per-round values by the
 * interval of their median (met only when all of it is under the limit).
 * @module
 */
import { judgeInterval, medianInterval, spread, type Spread, type Target } from './report.ts'

/** A target over per-round values: the median, its interval, judged on the whole interval. */
export function roundsTarget (name: string, limit: number, unit: string, values: readonly number[], target: string, note?: string): Target {
  const s = spread(values)
  const interval = medianInterval(values)
  return { name, target, limit, unit, measured: s ? s.median : null, ...judgeInterval(limit, interval), spread: s, interval, note }
}

export function valueTarget (name: string, limit: number, unit: string, measured: number | undefined, note?: string, sp?: Spread): Target {
  return {
    name, target: `≤ ${limit} ${unit}`, limit, unit,
    measured: measured ?? null, met: measured === undefined ? null : measured <= limit, note, spread: sp,
  }
}
