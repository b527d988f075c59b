/**
 * The "Réalisé" page (docs/http-api.md "Programme against delivery"): every site of the
 * viewer's perimeter on a day, programmed against delivered, with its quarter-hours per
 * verdict and its late slots ("reçus trop tard", counted apart), and the day as CSV (the
 * same rows as `epx realise --csv`). A member is compared with its company's own
 * instructions, as its BSP reads GET realise.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { html, type SafeHtml } from '../html.ts'
import { frNumber } from '../numbers.ts'
import { parisText } from '../time.ts'
import { addDays, parisDateOf } from '../../contract/paris-day.ts'
import { realisation, realisationCsv, type RealiseBody } from '../../apply/realisation.ts'
import type { Site } from '../../host/contract.ts'
import type { ConsoleDeps } from '../deps.ts'
import { ownCompany } from '../perimeter.ts'
import type { Viewer } from '../viewer.ts'
import { resolvePair, type Loaded } from './besoins-model.ts'
import { one, refuse, viewerOr403 } from './respond.ts'
import { instructionLink } from './instruction-ref.ts'
import { REALISE_DOWNLOAD_PATH, REALISE_PATH, realiseDownloadHref, realiseHref } from './paths.ts'

export interface RealiseDayModel {
  readonly targetDate: string
  readonly rows: ReadonlyArray<{ readonly site: Site; readonly body?: RealiseBody }>
}

/** The day (yesterday by default: the day whose meter values are complete) for every site the viewer sees. */
export async function loadRealiseDay (deps: ConsoleDeps, viewer: Viewer, q: { target_date?: string }): Promise<Loaded<RealiseDayModel>> {
  const targetDate = q.target_date || addDays(parisDateOf(deps.clock.now()), -1)
  const pair = await resolvePair(deps, viewer, { target_date: targetDate })
  if (pair.status !== 200) return pair
  const company = ownCompany(viewer)
  const rows = pair.sites.map(site => {
    const body = realisation(deps.realisation, pair.targetDate, site.site_id, company)
    return body ? { site, body } : { site }
  })
  return { status: 200, model: { targetDate: pair.targetDate, rows } }
}

function dayText (targetDate: string): string {
  return parisText(Date.parse(`${targetDate}T12:00:00Z`), 'date')
}

const n = (v: number) => frNumber(v)

export function renderRealiseDay (m: RealiseDayModel): SafeHtml {
  const bodies = m.rows.flatMap(r => r.body ? [r.body] : [])
  const sum = (f: (b: RealiseBody) => number) => Math.round(bodies.reduce((a, b) => a + f(b), 0) * 1000) / 1000
  return html`${dayTotals(m, sum)}
<form method="get" action="${REALISE_PATH}" class="chooser">
<label for="target_date">Jour</label>
<input id="target_date" name="target_date" type="date" value="${m.targetDate}" required>
<button type="submit">Afficher</button>
</form>
<nav class="days" aria-label="Jours voisins"><a href="${realiseHref(addDays(m.targetDate, -1))}">← Jour précédent</a> <a href="${realiseHref(addDays(m.targetDate, 1))}">Jour suivant →</a></nav>
<p><a class="download" href="${realiseDownloadHref(m.targetDate)}" download>Télécharger le jour (CSV)</a></p>
<table class="realise"><caption>Programmé et réalisé le ${dayText(m.targetDate)} (kWh ; quarts d'heure par verdict)</caption>
<thead><tr><th scope="col">Site</th><th scope="col">Instruction</th><th scope="col">Programmé</th><th scope="col">Réalisé</th><th scope="col">Manque</th><th scope="col">Atteints</th><th scope="col">Insuffisants</th><th scope="col">Effacements respectés</th><th scope="col">Effacements non respectés</th><th scope="col">Sans relevé</th><th scope="col">Reçus trop tard</th></tr></thead>
<tbody>${m.rows.length === 0 ? html`<tr><td colspan="11">Aucun site dans votre périmètre.</td></tr>` : m.rows.map(({ site, body: b }) => {
    if (!b) return html`<tr><td>${site.site_id}<br><small>${site.site_name}</small></td><td colspan="10" class="empty">ni programme en vigueur ni relevé de compteur</td></tr>`
    const v = b.totaux.verdicts
    return html`<tr><td>${site.site_id}<br><small>${site.site_name}</small></td><td>${b.instruction_id ? instructionLink(b.instruction_id, b.site_id) : '—'}</td><td class="num">${n(b.totaux.energie_programmee_kwh)}</td><td class="num">${n(b.totaux.energie_realisee_kwh)}</td><td class="num${b.totaux.manque_kwh > 0 ? ' shortfall' : ''}">${n(b.totaux.manque_kwh)}</td><td class="num">${n(v.met)}</td><td class="num${v.short ? ' shortfall' : ''}">${n(v.short)}</td><td class="num">${n(v.curtailment_respected)}</td><td class="num${v.curtailment_broken ? ' shortfall' : ''}">${n(v.curtailment_broken)}</td><td class="num">${n(v.no_data)}</td><td class="num">${n(b.totaux.tardifs)}</td></tr>`
  })}</tbody>
<tfoot><tr><th scope="row" colspan="2">Total</th><td class="num">${n(sum(b => b.totaux.energie_programmee_kwh))}</td><td class="num">${n(sum(b => b.totaux.energie_realisee_kwh))}</td><td class="num">${n(sum(b => b.totaux.manque_kwh))}</td><td class="num">${n(sum(b => b.totaux.verdicts.met))}</td><td class="num">${n(sum(b => b.totaux.verdicts.short))}</td><td class="num">${n(sum(b => b.totaux.verdicts.curtailment_respected))}</td><td class="num">${n(sum(b => b.totaux.verdicts.curtailment_broken))}</td><td class="num">${n(sum(b => b.totaux.verdicts.no_data))}</td><td class="num">${n(sum(b => b.totaux.tardifs))}</td></tr></tfoot></table>`
}

/**
 * The day's figures before anything else: on a phone the chooser and an eleven-column
 * table filled the first screen, and no figure showed without scrolling.
 */
function dayTotals (m: RealiseDayModel, sum: (f: (b: RealiseBody) => number) => number): SafeHtml {
  const figure = (term: string, value: number, bad = false) => html`<div><dt>${term}</dt><dd class="${bad && value > 0 ? 'shortfall' : ''}">${n(value)}</dd></div>`
  return html`<section class="day-totals" aria-labelledby="totals-h"><h2 id="totals-h">Le ${dayText(m.targetDate)}, tous sites</h2>
<dl class="figures">${figure('Programmé (kWh)', sum(b => b.totaux.energie_programmee_kwh))}${figure('Réalisé (kWh)', sum(b => b.totaux.energie_realisee_kwh))}${figure('Manque (kWh)', sum(b => b.totaux.manque_kwh), true)}${figure('Quarts d\'heure insuffisants', sum(b => b.totaux.verdicts.short), true)}${figure('Effacements non respectés', sum(b => b.totaux.verdicts.curtailment_broken), true)}${figure('Sans relevé', sum(b => b.totaux.verdicts.no_data))}</dl></section>`
}

export async function realisePages (app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  app.get(REALISE_PATH, async (request, reply) => {
    const viewer = viewerOr403(request, reply)
    if (!viewer) return reply
    const loaded = await loadRealiseDay(deps, viewer, { target_date: one(request.query, 'target_date') })
    if (loaded.status !== 200) return refuse(reply, loaded)
    return reply.page({ title: 'Réalisé', body: renderRealiseDay(loaded.model) })
  })

  app.get(REALISE_DOWNLOAD_PATH, async (request, reply) => {
    const viewer = viewerOr403(request, reply)
    if (!viewer) return reply
    const loaded = await loadRealiseDay(deps, viewer, { target_date: one(request.query, 'target_date') })
    if (loaded.status !== 200) return refuse(reply, loaded)
    return reply
      .header('content-type', 'text/csv; charset=utf-8; header=present')
      .header('content-disposition', `attachment; filename="realise-${loaded.model.targetDate}.csv"`)
      .send(realisationCsv(loaded.model.rows.flatMap(r => r.body ? [r.body] : [])))
  })
}
