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
 * Quarter-hour boundaries (every slot instant, DECISIONS.md "Inbound"), per UTC day: the
 * 96 strings indexed by quarter, and the same characters as five little-endian 32-bit
 * words each for `spellsQuarter` (a word 0: not made yet; no instant starts with a NUL).
 * A Paris day spans two UTC days, hence the one-entry fast path plus a small map. Array
 * reads, no hashing of a double key.
 */
interface QuarterDay {
  readonly texts: Array<string | undefined>
  readonly words: Uint32Array
}
const quarterDays = new BoundedCache<number, QuarterDay>(64)
let lastDay = NaN
let lastQuarters: QuarterDay = { texts: [], words: new Uint32Array(0) }

function quarterDay (day: number): QuarterDay {
  if (day !== lastDay) {
    lastQuarters = quarterDays.getOrCompute(day, () => ({ texts: new Array<string | undefined>(QUARTERS_PER_DAY).fill(undefined), words: new Uint32Array(QUARTERS_PER_DAY * 5) }))
    lastDay = day
  }
  return lastQuarters
}

/** The canonical wire form of an instant (`2026-11-21T23:15:00Z`), from a small cache. */
export function instantText (ms: number): string {
  const q = ms / QUARTER_MS
  if (!Number.isInteger(q)) return otherText(ms)
  const day = Math.floor(q / QUARTERS_PER_DAY)
  return quarterDay(day).texts[q - day * QUARTERS_PER_DAY] ??= formatUtcInstant(ms)
}

/**
 * Whether the 20 bytes of `bytes` at `at` are quarter-hour `ms` as `instantText` writes
 * it, compared four bytes at a time: the programme reader's check of each slot's end
 * (`apply/scan-programme.ts`), with no string made or read. False when `ms` is not on a
 * quarter-hour.
 */
export function spellsQuarter (bytes: DataView, at: number, ms: number): boolean {
  const q = ms / QUARTER_MS
  if (!Number.isInteger(q)) return false
  const day = Math.floor(q / QUARTERS_PER_DAY)
  const words = quarterDay(day).words
  const w = (q - day * QUARTERS_PER_DAY) * 5
  if (words[w] === 0) {
    const text = instantText(ms)
    for (let k = 0; k < 5; k++) {
      words[w + k] = (text.charCodeAt(4 * k) | text.charCodeAt(4 * k + 1) << 8 | text.charCodeAt(4 * k + 2) << 16 | text.charCodeAt(4 * k + 3) << 24) >>> 0
    }
  }
  return bytes.getUint32(at, true) === words[w] && bytes.getUint32(at + 4, true) === words[w + 1] &&
    bytes.getUint32(at + 8, true) === words[w + 2] && bytes.getUint32(at + 12, true) === words[w + 3] &&
    bytes.getUint32(at + 16, true) === words[w + 4]
}

/** Other instants (seconds, milliseconds): rare in practice. */
const others = new BoundedCache<number, string>(4096)

function otherText (ms: number): string {
  return others.getOrCompute(ms, formatUtcInstant)
}
