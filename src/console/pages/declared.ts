/**
 * What a programme's sender typed, told apart from what the console knows. `site_name` and
 * `emitted_by` are free text of the BSP (docs/http-api.md): the site's name is the solver's
 * (the host's `sites()`), the sender is the company its certificate and token prove. The
 * typed text is shown only as what was sent, and flagged where it disagrees.
 * @module
 */
import { html, type SafeHtml } from '../html.ts'
import type { Site } from '../../host/contract.ts'

/** The site id and the solver's name of it; the name sent beside it only when it differs. */
export function siteWithNames (siteId: string, sentName: string, hostSites: readonly Site[] | undefined): SafeHtml {
  const own = hostSites?.find(s => s.site_id === siteId)?.site_name
  const sent = sentName.trim() !== '' && sentName !== own
    ? html`<br><small class="sent">nom envoyé : « ${sentName} »</small>`
    : ''
  return html`${siteId}${own ? html`<br><small>${own}</small>` : ''}${sent}`
}

/** Whether `emitted_by` names the company that sent it (its id or its name, case aside). */
export function sameSender (emittedBy: string, company: { readonly id: string; readonly name?: string }): boolean {
  const said = emittedBy.trim().toLowerCase()
  return said === company.id.toLowerCase() || (company.name !== undefined && said === company.name.trim().toLowerCase())
}

/** The company that sent it (a fact), then what it says it is, flagged when that is another name. */
export function senderWithName (emittedBy: string, company: { readonly id: string; readonly name?: string }): SafeHtml {
  const who = company.name && company.name !== company.id ? html`${company.name} (${company.id})` : company.id
  return sameSender(emittedBy, company)
    ? html`${who}`
    : html`${who}<br><small class="sent">se dit « ${emittedBy} »</small> <span class="badge badge-mismatch" title="emitted_by ne nomme pas l'entreprise authentifiée">autre nom</span>`
}
