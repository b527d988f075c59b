/**
 * The "Réalisé" page (docs/http-api.md "Programme against delivery"): the sites of the
 * viewer's perimeter on a day (`realise-list.ts`: filters, sort, pages), programmed against
 * delivered, with the holder, the quarter-hours per verdict and the late slots ("reçus trop
 * tard", counted apart), and the selection as CSV: the rows of `epx realise --csv` with Paris
 * time and French verdicts after them, as RFC 4180 or for a French spreadsheet
 * (`dialect=tableur-fr`, `apply/realisation-csv.ts`).
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { html, type SafeHtml } from '../html.ts'
import { frNumber } from '../numbers.ts'
import { parisText } from '../time.ts'
import { addDays } from '../../contract/paris-day.ts'
import { realisation, realisationCsv, type RealiseTotals } from '../../apply/realisation.ts'
import { ownCompany } from '../perimeter.ts'
import type { ConsoleDeps } from '../deps.ts'
import { one, refuse, viewerOr403 } from './respond.ts'
import { queryOf, REALISE_DOWNLOAD_PATH, REALISE_PATH } from './paths.ts'
import { loadRealiseDay, REALISE_SORTS, type RealiseDayModel, type RealiseQuery, type RealiseSort } from './realise-list.ts'
import { pagesNav } from './programmes-view.ts'
import { instructionLink } from './instruction-ref.ts'

function dayText (targetDate: string): string {
  return parisText(Date.parse(`${targetDate}T12:00:00Z`), 'date')
}

const n = (v: number) => frNumber(v)

const SORT_LABELS: Readonly<Record<RealiseSort, string>> = {
  site: 'site, croissant',
  '-site': 'site, décroissant',
  '-manque': 'manque, le plus grand d\'abord',
}

/** The list's URL with `change` over the current filters (or the download's, `path`); a new filter or day starts at the first page. */
function listHref (m: RealiseDayModel, change: Readonly<Record<string, string | undefined>>, path = REALISE_PATH): string {
  const f = m.filter
  return `${path}?${queryOf({ target_date: m.targetDate, q: f.q, company_id: f.companyId, defaut: f.defaut ? '1' : undefined, sort: f.sort === 'site' ? undefined : f.sort, ...change })}`
}

export function renderRealiseDay (m: RealiseDayModel): SafeHtml {
  const f = m.filter
  const bodies = m.selected.flatMap(r => r.body ? [r.body] : [])
  const sum = (get: (b: RealiseTotals) => number) => Math.round(bodies.reduce((a, b) => a + get(b), 0) * 1000) / 1000
  const option = (value: string, label: string, chosen: string | undefined) => html`<option value="${value}"${value === (chosen ?? '') ? html` selected` : ''}>${label}</option>`
  return html`${dayTotals(m, sum)}
<form method="get" action="${REALISE_PATH}" class="chooser" role="search">
<label for="target_date">Jour</label>
<input id="target_date" name="target_date" type="date" value="${m.targetDate}" required>
<label for="q">Site</label>
<input id="q" name="q" type="search" value="${f.q}" placeholder="PRM ou nom, même en partie">
${m.companies ? html`<label for="company_id">Titulaire</label>
<select id="company_id" name="company_id">${option('', 'Tous', f.companyId)}${m.companies.map(c => option(c, c, f.companyId))}</select>` : ''}
<label for="defaut"><input id="defaut" name="defaut" type="checkbox" value="1"${f.defaut ? html` checked` : ''}> Sites en défaut seulement</label>
<label for="sort">Tri</label>
<select id="sort" name="sort">${REALISE_SORTS.map(s => option(s, SORT_LABELS[s], f.sort))}</select>
<button type="submit">Afficher</button>
</form>
<nav class="days" aria-label="Jours voisins"><a href="${listHref(m, { target_date: addDays(m.targetDate, -1) })}">&larr; Jour précédent</a> <a href="${listHref(m, { target_date: addDays(m.targetDate, 1) })}">Jour suivant &rarr;</a></nav>
<p class="counts">${f.defaut ? html`<a href="${listHref(m, { defaut: undefined })}">sites : ${n(m.counts.sites)}</a>` : html`<strong>sites : ${n(m.counts.sites)}</strong>`} · avec un programme ou un relevé : ${n(m.counts.compared)} · ${f.defaut
    ? html`<strong class="count-defaut">en défaut : ${n(m.counts.defaut)}</strong>`
    : html`<a class="count-defaut" href="${listHref(m, { defaut: '1' })}">en défaut : ${n(m.counts.defaut)}</a>`}</p>
<p><a class="download" href="${listHref(m, {}, REALISE_DOWNLOAD_PATH)}" download>Télécharger (CSV)</a> · <a class="download download-fr" href="${listHref(m, { dialect: 'tableur-fr' }, REALISE_DOWNLOAD_PATH)}" download>Télécharger pour un tableur en français (CSV ; et virgules décimales)</a></p>
<table class="realise"><caption>Programmé et réalisé le ${dayText(m.targetDate)} (kWh ; quarts d'heure par verdict) : ${n(m.selected.length)} site${m.selected.length > 1 ? 's' : ''}${m.selected.length > m.rows.length ? `, ${n(m.rows.length)} sur cette page` : ''}</caption>
<thead><tr><th scope="col">Site</th><th scope="col">Titulaire</th><th scope="col">Instruction</th><th scope="col">Programmé</th><th scope="col">Réalisé</th><th scope="col">Manque</th><th scope="col">Atteints</th><th scope="col">Insuffisants</th><th scope="col">Effacements respectés</th><th scope="col">Effacements non respectés</th><th scope="col">Sans relevé</th><th scope="col">Reçus trop tard</th></tr></thead>
<tbody>${m.rows.length === 0 ? html`<tr><td colspan="12">${m.counts.sites === 0 && !f.q && !f.companyId ? 'Aucun site dans votre périmètre.' : 'Aucun site ne répond à ces critères.'}</td></tr>` : m.rows.map(({ site, body: b, holders, defaut }) => {
    const siteCell = html`<td>${site.site_id}<br><small>${site.site_name}</small>${defaut ? html`<br><strong class="flag-defaut">en défaut</strong>` : ''}</td><td class="holder">${holders.length ? holders.join(', ') : '—'}</td>`
    if (!b) return html`<tr>${siteCell}<td colspan="10" class="empty">ni programme en vigueur ni relevé de compteur</td></tr>`
    const v = b.totaux.verdicts
    return html`<tr>${siteCell}<td>${b.instruction_id ? instructionLink(b.instruction_id, b.site_id) : '—'}</td><td class="num">${n(b.totaux.energie_programmee_kwh)}</td><td class="num">${n(b.totaux.energie_realisee_kwh)}</td><td class="num${b.totaux.manque_kwh > 0 ? ' shortfall' : ''}">${n(b.totaux.manque_kwh)}</td><td class="num">${n(v.met)}</td><td class="num${v.short ? ' shortfall' : ''}">${n(v.short)}</td><td class="num">${n(v.curtailment_respected)}</td><td class="num${v.curtailment_broken ? ' shortfall' : ''}">${n(v.curtailment_broken)}</td><td class="num">${n(v.no_data)}</td><td class="num">${n(b.totaux.tardifs)}</td></tr>`
  })}</tbody>
<tfoot><tr><th scope="row" colspan="3">Total de la sélection</th><td class="num">${n(sum(b => b.totaux.energie_programmee_kwh))}</td><td class="num">${n(sum(b => b.totaux.energie_realisee_kwh))}</td><td class="num">${n(sum(b => b.totaux.manque_kwh))}</td><td class="num">${n(sum(b => b.totaux.verdicts.met))}</td><td class="num">${n(sum(b => b.totaux.verdicts.short))}</td><td class="num">${n(sum(b => b.totaux.verdicts.curtailment_respected))}</td><td class="num">${n(sum(b => b.totaux.verdicts.curtailment_broken))}</td><td class="num">${n(sum(b => b.totaux.verdicts.no_data))}</td><td class="num">${n(sum(b => b.totaux.tardifs))}</td></tr></tfoot></table>
${pagesNav(m.previous, m.next, m.paged, k => listHref(m, k))}`
}

/** The query of a list or download request. */
function queryFrom (query: unknown): RealiseQuery {
  const q = (name: string) => one(query, name)
  return { target_date: q('target_date'), q: q('q'), company_id: q('company_id'), defaut: q('defaut'), sort: q('sort'), after: q('after'), before: q('before') }
}

/** Whether the list is narrowed: the figures are then the selection's, not every site's. */
function filtered (f: RealiseDayModel['filter']): boolean {
  return f.q !== '' || f.companyId !== undefined || f.defaut
}

/**
 * The day's figures before anything else: on a phone the chooser and an eleven-column
 * table filled the first screen, and no figure showed without scrolling.
 */
function dayTotals (m: RealiseDayModel, sum: (f: (b: RealiseTotals) => number) => number): SafeHtml {
  const figure = (term: string, value: number, bad = false) => html`<div><dt>${term}</dt><dd class="${bad && value > 0 ? 'shortfall' : ''}">${n(value)}</dd></div>`
  return html`<section class="day-totals" aria-labelledby="totals-h"><h2 id="totals-h">Le ${dayText(m.targetDate)}, ${filtered(m.filter) ? 'sites sélectionnés' : 'tous sites'}</h2>
<dl class="figures">${figure('Programmé (kWh)', sum(b => b.totaux.energie_programmee_kwh))}${figure('Réalisé (kWh)', sum(b => b.totaux.energie_realisee_kwh))}${figure('Manque (kWh)', sum(b => b.totaux.manque_kwh), true)}${figure('Quarts d\'heure insuffisants', sum(b => b.totaux.verdicts.short), true)}${figure('Effacements non respectés', sum(b => b.totaux.verdicts.curtailment_broken), true)}${figure('Sans relevé', sum(b => b.totaux.verdicts.no_data))}</dl></section>`
}

export async function realisePages (app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  app.get(REALISE_PATH, async (request, reply) => {
    const viewer = viewerOr403(request, reply)
    if (!viewer) return reply
    const loaded = await loadRealiseDay(deps, viewer, queryFrom(request.query))
    if (loaded.status !== 200) return refuse(reply, loaded)
    return reply.page({ title: 'Réalisé', body: renderRealiseDay(loaded.model) })
  })

  app.get(REALISE_DOWNLOAD_PATH, async (request, reply) => {
    const viewer = viewerOr403(request, reply)
    if (!viewer) return reply
    const dialect = one(request.query, 'dialect') || 'rfc4180'
    if (dialect !== 'rfc4180' && dialect !== 'tableur-fr') return refuse(reply, { status: 400, message: `dialect=tableur-fr pour un tableur en français, ou rien pour le CSV usuel (reçu « ${dialect} »).` })
    // Every page of the selection: the filters, not the cursor.
    const loaded = await loadRealiseDay(deps, viewer, { ...queryFrom(request.query), after: undefined, before: undefined })
    if (loaded.status !== 200) return refuse(reply, loaded)
    // The quarter-hours of the selected sites, read now: the list kept their totals only.
    const bodies = loaded.model.selected.flatMap(r => {
      const body = r.body && realisation(deps.realisation, loaded.model.targetDate, r.site.site_id, ownCompany(viewer))
      return body ? [body] : []
    })
    return reply
      .header('content-type', `text/csv; charset=utf-8; header=present${dialect === 'rfc4180' ? '' : '; delimiter=";"'}`)
      .header('content-disposition', `attachment; filename="realise-${loaded.model.targetDate}${dialect === 'rfc4180' ? '' : '-tableur'}.csv"`)
      .send(realisationCsv(bodies, { dialect, annotated: true }))
  })
}
