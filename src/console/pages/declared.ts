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

/** Letters and digits, lower case: "BSP-Acme" and "bsp acme" are one name. */
const plain = (text: string): string => text.toLowerCase().replace(/[^\p{L}\p{N}]/gu, '')

/**
 * Whether `emitted_by` names the company that sent it: it holds the company's id or name, or
 * is held in it ("bsp-acme", "ACME dispatch" for acme). Free text: anything else is flagged,
 * not refused (docs/http-api.md asks only a non-empty string).
 */
export function sameSender (emittedBy: string, company: { readonly id: string; readonly name?: string }): boolean {
  const said = plain(emittedBy)
  if (said === '') return false
  return [company.id, company.name ?? ''].map(plain).some(own => own !== '' && (said.includes(own) || own.includes(said)))
}

/** The company that sent it (a fact), then what it says it is unless that is its very name, flagged when it names another. */
export function senderWithName (emittedBy: string, company: { readonly id: string; readonly name?: string }): SafeHtml {
  const who = company.name && company.name !== company.id ? html`${company.name} (${company.id})` : company.id
  if ([company.id, company.name ?? ''].some(own => plain(own) === plain(emittedBy))) return html`${who}`
  const flag = sameSender(emittedBy, company) ? '' : html` <span class="badge badge-mismatch" title="emitted_by ne nomme pas l'entreprise authentifiée">autre nom</span>`
  return html`${who}<br><small class="sent">se dit « ${emittedBy} »</small>${flag}`
}
