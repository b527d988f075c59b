/**
 * Instants as the console shows them: Europe/Paris wall time, with the UTC instant in
 * the `title` and `datetime` (DECISIONS.md "Time": wire instants are UTC, people read
 * Paris time). On the autumn DST day 02:00-03:00 happens twice; the offset
 * (`+02:00`/`+01:00`) tells the two apart, so it is shown whenever the hour repeats.
 * A full date and time carries its offset where nothing else says which clock it is; in a
 * table, the column header says it once (`PARIS_HOURS`) and each cell (`slot`) shows the
 * offset only where the hour repeats: "(UTC+01:00)" in every cell was noise.
 * @module
 */
import { DateTime } from 'luxon'
import { PARIS } from '../contract/paris-day.ts'
import { formatUtcInstant, readUtcInstant } from '../contract/instants.ts'
import { html, type SafeHtml } from './html.ts'

/** What a column header of Paris times says, once for all its cells. */
export const PARIS_HOURS = 'heure de Paris'

/** How much of the Paris wall time to show. */
export type TimeStyle = 'datetime' | 'slot' | 'minute' | 'time' | 'date'

const FORMATS: Record<TimeStyle, string> = {
  datetime: 'dd/MM/yyyy HH:mm:ss',
  /** A table cell whose column header says `PARIS_HOURS`: the offset only where the hour repeats. */
  slot: 'dd/MM/yyyy HH:mm:ss',
  /** `slot` to the minute, where seconds tell nothing (when a token was made or last used). */
  minute: 'dd/MM/yyyy HH:mm',
  time: 'HH:mm',
  date: 'dd/MM/yyyy',
}

/** An instant given as epoch ms or a UTC wire instant (kept at the precision sent). */
export type InstantInput = number | string

/** `HH:mm` (or another style) in Paris, plus the offset when the wall time is ambiguous. */
export function parisText (at: InstantInput, style: TimeStyle = 'datetime'): string {
  const ms = msOf(at)
  const t = DateTime.fromMillis(ms, { zone: PARIS })
  const text = t.toFormat(FORMATS[style])
  return style === 'datetime' || (style !== 'date' && isRepeatedHour(ms)) ? `${text} (UTC${t.toFormat('ZZ')})` : text
}

/** True when the Paris wall time of `ms` also names another instant (the repeated autumn hour). */
export function isRepeatedHour (ms: number): boolean {
  const t = DateTime.fromMillis(ms, { zone: PARIS })
  const hourMs = 3_600_000
  const twin = (o: number) => DateTime.fromMillis(ms + o, { zone: PARIS })
  return [hourMs, -hourMs].some(o => twin(o).toFormat('yyyy-MM-dd HH:mm') === t.toFormat('yyyy-MM-dd HH:mm'))
}

/** Epoch ms of an instant; a wire instant's sub-millisecond digits do not change the wall time shown. */
function msOf (at: InstantInput): number {
  if (typeof at === 'number') return at
  const i = readUtcInstant(at)
  return typeof i === 'string' ? NaN : i.ms
}

/** `<time>` showing Paris time, with the UTC instant in `datetime` and `title`. */
export function parisTime (at: InstantInput, style: TimeStyle = 'datetime'): SafeHtml {
  const utc = typeof at === 'number' ? formatUtcInstant(at) : at
  return html`<time datetime="${utc}" title="${utc} (UTC)">${parisText(at, style)}</time>`
}

/** `parisTime`, a dash for an instant that is not there (never used, no expiry), and text that is not an instant shown as (escaped) text. */
export function parisTimeOrDash (at: InstantInput | null | undefined, style: TimeStyle = 'datetime'): SafeHtml {
  if (at === null || at === undefined || at === '') return html`<span aria-label="aucune">&ndash;</span>`
  return Number.isNaN(msOf(at)) ? html`${at}` : parisTime(at, style)
}

/** A column header of Paris times: its label, and once for the column which clock it is. */
export function parisHeader (label: string): SafeHtml {
  return html`${label} <span class="clock">(${PARIS_HOURS})</span>`
}

/** A Paris wall time as a `datetime-local` field holds it: `2026-11-21T13:29`. */
export function parisFieldValue (ms: number): string {
  return DateTime.fromMillis(ms, { zone: PARIS }).toFormat("yyyy-MM-dd'T'HH:mm")
}

/**
 * What a form's time field means: a Paris wall time (`2026-11-21T13:29`, the value of a
 * `datetime-local` field) or a Paris day (`2026-11-21`): its first instant, or with `end`
 * its last (a bound given to the minute includes that minute); undefined when it is
 * neither. In the repeated autumn hour a start is the first of its two instants and an end
 * the last (the bounds hold both); in the skipped spring hour, the instant after the jump.
 */
export function parisFieldMs (text: string, end = false): number | undefined {
  const day = /^\d{4}-\d{2}-\d{2}$/.test(text)
  if (!day && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(text)) return undefined
  const t = DateTime.fromISO(text, { zone: PARIS })
  if (!t.isValid) return undefined
  if (end) return t.plus(day ? { days: 1 } : { minutes: 1 }).toMillis() - 1
  // Luxon reads a repeated wall time as its later instant: a start is the earlier one.
  const earlier = t.minus({ hours: 1 })
  return earlier.toFormat('yyyy-MM-dd HH:mm') === t.toFormat('yyyy-MM-dd HH:mm') ? earlier.toMillis() : t.toMillis()
}
