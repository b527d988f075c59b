/**
 * Times on console pages: shown in Europe/Paris, the UTC instant in `title` and
 * `datetime` (DECISIONS.md "Time": wire instants UTC, people read Paris time).
 * @module
 */
import { PARIS } from '../contract/paris-day.ts'
import { html, type SafeHtml } from './html.ts'

const FORMAT = new Intl.DateTimeFormat('fr-FR', {
  timeZone: PARIS, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
})

/** `<time>` for an ISO instant; a dash for none. */
export function parisTime (iso: string | null | undefined): SafeHtml {
  if (!iso) return html`<span aria-label="aucune">–</span>`
  const ms = Date.parse(iso)
  if (Number.isNaN(ms)) return html`${iso}`
  const utc = new Date(ms).toISOString()
  return html`<time datetime="${utc}" title="${utc} (UTC)">${FORMAT.format(ms)}</time>`
}
