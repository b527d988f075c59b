/**
 * The chart's time axis over one Paris day: a tick at every whole UTC hour of the
 * coverage, labelled with its Paris wall hour. On a DST day the labels are not
 * 00..23: the spring day skips 02 (92 quarter-hours), the autumn day shows 02 twice
 * (100). Each tick says which, so the chart can mark the skipped and repeated hour.
 * @module
 */
import { DateTime } from 'luxon'
import { PARIS } from '../../contract/paris-day.ts'

const HOUR_MS = 3_600_000

export interface HourTick {
  /** The UTC instant of the tick. */
  readonly ms: number
  /** Paris wall hour, `00`…`24` (the day's end reads `24`). */
  readonly label: string
  /** The hour that starts here is the second of two with the same wall hour (autumn change). */
  readonly repeated: boolean
  /** The wall clock jumped an hour forward just before this tick (spring change): e.g. 01 → 03. */
  readonly afterSkip: boolean
}

/** Ticks from `startMs` to `endMs` inclusive, both on whole hours (a Paris day's coverage). */
export function hourTicks (startMs: number, endMs: number): HourTick[] {
  const ticks: HourTick[] = []
  let previousOffset: number | undefined
  for (let ms = startMs; ms <= endMs; ms += HOUR_MS) {
    const t = DateTime.fromMillis(ms, { zone: PARIS })
    const offset = t.offset
    ticks.push({
      ms,
      label: ms === endMs ? '24' : t.toFormat('HH'),
      repeated: previousOffset !== undefined && offset < previousOffset,
      afterSkip: previousOffset !== undefined && offset > previousOffset,
    })
    previousOffset = offset
  }
  return ticks
}
