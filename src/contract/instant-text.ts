/**
 * `formatUtcInstant`, remembered: a 1,000-site programme names about 100 distinct
 * quarter-hours 192,000 times, so each is formatted (and its string allocated) once.
 * @module
 */
import { formatUtcInstant } from './instants.ts'

const texts = new Map<number, string>()

/** The canonical wire form of an instant (`2026-11-21T23:15:00Z`), from a small cache. */
export function instantText (ms: number): string {
  let text = texts.get(ms)
  if (text === undefined) {
    if (texts.size >= 4096) texts.clear()
    text = formatUtcInstant(ms)
    texts.set(ms, text)
  }
  return text
}
