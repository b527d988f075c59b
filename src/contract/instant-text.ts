/**
 * `formatUtcInstant`, remembered: a 1,000-site programme names about 100 distinct
 * quarter-hours 192,000 times, so each is formatted (and its string allocated) once.
 * @module
 */
import { formatUtcInstant } from './instants.ts'
import { BoundedCache } from '../bounded-cache.ts'

const QUARTER_MS = 900_000
const QUARTERS_PER_DAY = 96

/**
 * Quarter-hour boundaries (every slot instant, DECISIONS.md "Inbound"): one array of
 * 96 strings per UTC day, indexed by quarter; a Paris day spans two UTC days, hence
 * the one-entry fast path plus a small map. Array reads, no hashing of a double key.
 */
const quarterDays = new BoundedCache<number, Array<string | undefined>>(64)
let lastDay = NaN
let lastQuarters: Array<string | undefined> = []

/** Other instants (seconds, milliseconds): rare in practice. */
const others = new BoundedCache<number, string>(4096)

/** The canonical wire form of an instant (`2026-11-21T23:15:00Z`), from a small cache. */
export function instantText (ms: number): string {
  const q = ms / QUARTER_MS
  if (!Number.isInteger(q)) return otherText(ms)
  const day = Math.floor(q / QUARTERS_PER_DAY)
  if (day !== lastDay) {
    let quarters = quarterDays.get(day)
    if (quarters === undefined) {
      quarters = new Array<string | undefined>(QUARTERS_PER_DAY).fill(undefined)
      quarterDays.set(day, quarters)
    }
    lastDay = day
    lastQuarters = quarters
  }
  const k = q - day * QUARTERS_PER_DAY
  return lastQuarters[k] ??= formatUtcInstant(ms)
}

function otherText (ms: number): string {
  return others.getOrCompute(ms, formatUtcInstant)
}
