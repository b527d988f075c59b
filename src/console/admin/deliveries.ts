/**
 * Admin page "Récupérations" (GET /admin/deliveries): who fetched which Besoins agrégés
 * of a day, as `epx deliveries` counts them, site by site (`deliveries-list.ts`).
 * @module
 */
import type { FastifyInstance } from 'fastify'
import type { DeliveryState } from '../../apply/delivery-status.ts'
import { addDays } from '../../contract/paris-day.ts'
import type { ConsoleDeps } from '../deps.ts'
import { html, type SafeHtml } from '../html.ts'
import { frNumber } from '../numbers.ts'
import { parisHeader, parisText, parisTime, parisTimeOrDash } from '../time.ts'
import { besoinsHref, queryOf } from '../pages/paths.ts'
import { pagesNav } from '../pages/programmes-view.ts'
import { one, refuse } from '../pages/respond.ts'
import { DELIVERY_STATES, loadDeliveries, type DeliveriesModel } from './deliveries-list.ts'

const ADMIN = { config: { access: 'admin' as const } }
export const DELIVERIES_PATH = '/admin/deliveries'

const STATE_LABELS: Readonly<Record<DeliveryState, string>> = {
  latest: 'dernière révision',
  stale: 'révision dépassée',
  never: 'jamais récupéré',
}

/** The counts' words (plural), as the filter links name them. */
const STATE_COUNTS: Readonly<Record<DeliveryState, string>> = {
  latest: 'à jour',
  stale: 'en retard d\'une révision',
  never: 'jamais récupérés',
}

function listHref (m: DeliveriesModel, change: Readonly<Record<string, string | undefined>>): string {
  const f = m.filter
  return `${DELIVERIES_PATH}?${queryOf({ target_date: m.targetDate, company_id: f.companyId, state: f.state, q: f.q, ...change })}`
}

function dayText (targetDate: string): string {
  return parisText(Date.parse(`${targetDate}T12:00:00Z`), 'date')
}

export function renderDeliveries (m: DeliveriesModel): SafeHtml {
  const f = m.filter
  const option = (value: string, label: string, chosen: string | undefined) => html`<option value="${value}"${value === (chosen ?? '') ? html` selected` : ''}>${label}</option>`
  const count = (s: DeliveryState) => s === f.state
    ? html`<strong class="count-${s}">${STATE_COUNTS[s]} : ${frNumber(m.counts[s])}</strong>`
    : html`<a class="count-${s}" href="${listHref(m, { state: s })}">${STATE_COUNTS[s]} : ${frNumber(m.counts[s])}</a>`
  return html`<form method="get" action="${DELIVERIES_PATH}" class="chooser" role="search">
<label for="target_date">Jour</label>
<input id="target_date" name="target_date" type="date" value="${m.targetDate}" required>
<label for="company_id">Entreprise</label>
<select id="company_id" name="company_id">${option('', 'Toutes', f.companyId)}${m.companies.map(c => option(c, c, f.companyId))}</select>
<label for="state">État</label>
<select id="state" name="state">${option('', 'Tous', f.state)}${DELIVERY_STATES.map(s => option(s, STATE_LABELS[s], f.state))}</select>
<label for="q">Site</label>
<input id="q" name="q" type="search" value="${f.q}" placeholder="PRM ou nom, même en partie">
<button type="submit">Afficher</button>
</form>
<nav class="days" aria-label="Jours voisins"><a href="${listHref(m, { target_date: addDays(m.targetDate, -1) })}">&larr; Jour précédent</a> <a href="${listHref(m, { target_date: addDays(m.targetDate, 1) })}">Jour suivant &rarr;</a></nav>
<p class="hint">Les récupérations sont écrites par le service toutes les quelques secondes : la dernière peut manquer encore.</p>
<table class="deliveries-summary"><caption>Besoins agrégés du ${dayText(m.targetDate)} : sites publiés dans le périmètre de chaque entreprise</caption>
<thead><tr><th scope="col">Entreprise</th><th scope="col" class="num">Publiés</th><th scope="col" class="num">À jour</th><th scope="col" class="num">Révision dépassée</th><th scope="col" class="num">Jamais récupérés</th></tr></thead>
<tbody>${m.perCompany.length === 0 ? html`<tr><td colspan="5">Aucun site publié pour ce jour dans ces critères.</td></tr>` : m.perCompany.map(c => html`<tr><td><a href="${listHref(m, { company_id: c.companyId })}">${c.companyId}</a></td><td class="num">${frNumber(c.published)}</td><td class="num">${frNumber(c.latest)}</td><td class="num${c.stale ? ' shortfall' : ''}">${frNumber(c.stale)}</td><td class="num${c.never ? ' shortfall' : ''}">${frNumber(c.never)}</td></tr>`)}</tbody></table>
<p class="counts">${f.state === undefined ? html`<strong>tous : ${frNumber(m.counts.all)}</strong>` : html`<a href="${listHref(m, { state: undefined })}">tous : ${frNumber(m.counts.all)}</a>`}${DELIVERY_STATES.map(s => html` · ${count(s)}`)}</p>
<table class="deliveries"><caption>Récupérations par site : ${frNumber(m.total)} ligne${m.total > 1 ? 's' : ''}${m.total > m.rows.length ? `, ${frNumber(m.rows.length)} sur cette page` : ''}</caption>
<thead><tr><th scope="col">Entreprise</th><th scope="col">Site</th><th scope="col">État</th><th scope="col">${parisHeader('Récupérée le')}</th><th scope="col">${parisHeader('Révision détenue')}</th><th scope="col">${parisHeader('Dernière révision')}</th></tr></thead>
<tbody>${m.rows.length === 0 ? html`<tr><td colspan="6">Aucune ligne ne répond à ces critères.</td></tr>` : m.rows.map(r => html`<tr>
<td>${r.companyId}</td><td><a href="${besoinsHref(r.siteId, m.targetDate)}">${r.siteId}</a>${m.sites.get(r.siteId) ? html`<br><small>${m.sites.get(r.siteId)!.site_name}</small>` : ''}</td>
<td class="delivery-${r.state}">${STATE_LABELS[r.state]}</td>
<td>${r.receipt ? html`${parisTime(r.receipt.atMs, 'slot')}<br><small>${r.receipt.status === 304 ? '304, inchangée' : '200'}</small>` : parisTimeOrDash(undefined)}</td>
<td>${r.receipt ? parisTime(r.receipt.emittedAtMs, 'slot') : parisTimeOrDash(undefined)}</td><td>${parisTime(r.latest.emittedAt, 'slot')}</td></tr>`)}</tbody></table>
${pagesNav(m.previous, m.next, m.paged, k => listHref(m, k))}`
}

export function deliveriesAdmin (app: FastifyInstance, deps: ConsoleDeps): void {
  app.get(DELIVERIES_PATH, ADMIN, async (request, reply) => {
    const q = (name: string) => one(request.query, name)
    const loaded = await loadDeliveries(deps, { target_date: q('target_date'), company_id: q('company_id'), state: q('state'), q: q('q'), after: q('after'), before: q('before') })
    if (loaded.status !== 200) return refuse(reply, loaded)
    return reply.page({ title: 'Récupérations des Besoins agrégés', body: renderDeliveries(loaded.model) })
  })
}
