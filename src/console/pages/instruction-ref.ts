/**
 * An instruction named in a table or a sentence: its id is
 * `ProgrammeSoutirage-<target_date>-rev-<emitted_at>` (`contract/ids.ts`), 51 characters
 * or more that wrapped over three lines of a table cell. The short form is the revision's
 * time in Paris; the full id is the link's `title` and its page's first fact, one click away.
 * @module
 */
import { html, type SafeHtml } from '../html.ts'
import { parisText } from '../time.ts'
import { programmeHref } from './paths.ts'

const REVISION = /-rev-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\.\d+)?Z$/

/** "rév. 21/11/2026 11:00:00" (Paris; the offset only in the repeated autumn hour); an id of another shape as it is. */
export function instructionShort (instructionId: string): string {
  const m = REVISION.exec(instructionId)
  if (!m) return instructionId
  return `rév. ${parisText(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${m[7] ?? ''}Z`, 'slot')}`
}

/** A link to the instruction's page, showing its short form. */
export function instructionLink (instructionId: string, siteId: string): SafeHtml {
  return html`<a class="instruction" href="${programmeHref(instructionId, siteId)}" title="${instructionId}">${instructionShort(instructionId)}</a>`
}
