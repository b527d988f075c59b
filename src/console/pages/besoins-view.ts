/**
 * Renders the "Besoins agrégés" page from its model: the site and day chooser, the
 * latest revision's facts, the chart, the milestone and slot tables, the revision
 * history with downloads. Pure: model in, HTML out.
 * @module
 */
import { html, type SafeHtml } from '../html.ts'
import { frNumber } from '../numbers.ts'
import { parisHeader, parisText, parisTime } from '../time.ts'
import { powerChart } from '../chart/power-chart.ts'
import { lowestAvailable } from '../chart/chart-model.ts'
import { besoinsSeries } from '../chart/besoins-series.ts'
import { basicUtc, utcInstantMs } from '../../contract/instants.ts'
import type { RevisionMeta } from '../../store/revisions.ts'
import type { BesoinsModel } from './besoins-model.ts'
import { roundKw, type SlotConstraint } from '../../apply/instruction-view.ts'
import { constraintText, statusLabel } from './programmes-view.ts'
import { instructionLink } from './instruction-ref.ts'
import { BESOINS_PATH, downloadHref, programmesHref } from './paths.ts'

const SLOTS_CAPTION = 'Créneaux'

/** `besoins-agreges-PRM…-2026-11-22-20261121T080000Z.json`: names sort by emission. */
export function downloadName (meta: RevisionMeta): string {
  return `besoins-agreges-${meta.siteId}-${meta.targetDate}-${basicUtc(meta.emittedAtMs)}.json`
}

/** What the day is, in a phrase: DST days are the ones a reader must not misread. */
export function dayKind (slots: number): string {
  if (slots === 92) return '92 quarts d\'heure (passage à l\'heure d\'été : 23 h)'
  if (slots === 100) return '100 quarts d\'heure (passage à l\'heure d\'hiver : 25 h)'
  return `${slots} quarts d'heure`
}

export function renderBesoins (m: BesoinsModel): SafeHtml {
  return html`${chooser(m)}
${m.site === undefined ? html`<p class="empty">Aucun site dans votre périmètre.</p>` : m.latest === undefined
    ? html`<p class="empty">Aucune révision publiée pour le site ${m.site.site_id} le ${parisText(Date.parse(m.coverage.startUtc), 'date')}.</p>`
    : latest(m)}
${m.site === undefined ? '' : history(m)}`
}

function chooser (m: BesoinsModel): SafeHtml {
  return html`<form method="get" action="${BESOINS_PATH}" class="chooser">
<label for="site_id">Site</label>
<select id="site_id" name="site_id">${m.sites.map(s => html`<option value="${s.site_id}"${s.site_id === m.site?.site_id ? html` selected` : ''}>${s.site_id} &mdash; ${s.site_name}</option>`)}</select>
<label for="target_date">Jour</label>
<input id="target_date" name="target_date" type="date" value="${m.targetDate}" required>
<button type="submit">Afficher</button>
</form>`
}

function latest (m: BesoinsModel): SafeHtml {
  const { meta, doc, site } = m.latest!
  const constraints = m.instruction?.constraints ?? []
  const byStart = new Map(constraints.map(c => [utcInstantMs(c.startUtc), c]))
  const slots = site.puissance_disponible
  const series = besoinsSeries(site)
  const availableOf = (c: SlotConstraint) => lowestAvailable(series.available, utcInstantMs(c.startUtc), utcInstantMs(c.endUtc))
  const over = constraints.filter(c => isOver(c, availableOf(c)))
  return html`<section aria-labelledby="latest-h">
<h2 id="latest-h">${site.site_name} (${site.site_id}) &mdash; ${parisText(Date.parse(doc.coverage_start_utc), 'date')}</h2>
<dl class="facts">
<dt>Émise le</dt><dd>${parisTime(meta.emittedAt)}</dd>
<dt>Émise par</dt><dd>${doc.emitted_by}</dd>
<dt>ETag</dt><dd><code>${meta.etag}</code></dd>
<dt>Couverture</dt><dd>${parisTime(doc.coverage_start_utc)} &rarr; ${parisTime(doc.coverage_end_utc)}</dd>
<dt>Créneaux</dt><dd>${dayKind(slots.length)}</dd>
<dt>Consigne en vigueur</dt><dd>${m.instruction === undefined ? 'aucune' : html`${instructionLink(m.instruction.view.instruction.instructionId, m.instruction.view.instruction.siteId)} (${statusLabel(m.instruction.view)})`}
 &mdash; <a href="${programmesHref(meta.targetDate, meta.siteId)}">programmes reçus pour ce jour</a></dd>
</dl>
${over.length ? html`<p class="flag-infeasible" role="note"><strong>Infaisable :</strong> ${over.length === 1 ? 'un créneau de la consigne demande' : `${over.length} créneaux de la consigne demandent`} un plancher au-delà de la puissance disponible (jusqu'à ${frNumber(roundKw(Math.max(...over.map(c => c.minKw!))))} kW pour ${frNumber(Math.min(...over.map(c => availableOf(c) ?? Infinity)))} kW disponibles). Le solveur l'applique tout de même et décide.</p>` : ''}
<p><a class="download" href="${downloadHref(meta.siteId, meta.targetDate)}" download="${downloadName(meta)}">Télécharger le JSON (${frNumber(meta.size)} octets)</a></p>
<figure class="chart" tabindex="0" aria-label="Graphique (défile horizontalement sur un petit écran)">${powerChart({
    startMs: Date.parse(doc.coverage_start_utc),
    endMs: Date.parse(doc.coverage_end_utc),
    slotMs: doc.slot_duration_secs * 1000,
    ...series,
    constraints: constraints.map(c => ({ startMs: utcInstantMs(c.startUtc), endMs: utcInstantMs(c.endUtc), minKw: c.minKw, maxKw: c.maxKw })),
    title: `Puissance disponible par quart d'heure, ${site.site_name}, ${parisText(Date.parse(doc.coverage_start_utc), 'date')}`,
    tableName: SLOTS_CAPTION,
  })}</figure>
<table class="milestones"><caption>Jalons d'énergie</caption>
<thead><tr><th scope="col">${parisHeader('Début')}</th><th scope="col">${parisHeader('Échéance')}</th><th scope="col" class="num">Énergie (kWh)</th><th scope="col" class="num">Puissance (kW)</th></tr></thead>
<tbody>${site.jalons_besoin.length === 0 ? html`<tr><td colspan="4">Aucun jalon.</td></tr>` : site.jalons_besoin.map(j => html`<tr><td>${parisTime(j.debut_utc, 'slot')}</td><td>${parisTime(j.deadline_utc, 'slot')}</td><td class="num">${frNumber(j.valeur_kwh)}</td><td class="num">${frNumber(j.puissance_kW)}</td></tr>`)}</tbody></table>
<table class="slots"><caption>${SLOTS_CAPTION}</caption>
<thead><tr><th scope="col" class="num">N°</th><th scope="col">${parisHeader('Début')}</th><th scope="col">${parisHeader('Fin')}</th><th scope="col" class="num">Puissance disponible (kW)</th><th scope="col">Consigne</th></tr></thead>
<tbody>${slots.map((s, k) => html`<tr><td class="num">${k + 1}</td><td>${parisTime(s.debut_utc, 'time')}</td><td>${parisTime(s.fin_utc, 'time')}</td><td class="num">${frNumber(s.p_max_kw)}</td>${constraintCell(byStart.get(utcInstantMs(s.debut_utc)), s.p_max_kw)}</tr>`)}</tbody></table>
</section>`
}

/** A floor the site cannot hold (the rule `epx instructions show` applies, apply/feasibility.ts). */
function isOver (c: SlotConstraint, availableKw: number | undefined): boolean {
  return c.minKw !== undefined && availableKw !== undefined && c.minKw > availableKw + 1e-6
}

function constraintCell (c: SlotConstraint | undefined, availableKw: number): SafeHtml {
  return c && isOver(c, availableKw)
    ? html`<td class="over">${constraintText(c)} <strong class="flag-infeasible">infaisable</strong></td>`
    : html`<td>${constraintText(c)}</td>`
}

function history (m: BesoinsModel): SafeHtml {
  return html`<section aria-labelledby="history-h"><h2 id="history-h">Historique des révisions</h2>
<table class="history"><caption>Révisions conservées, la plus récente d'abord</caption>
<thead><tr><th scope="col">${parisHeader('Émise le')}</th><th scope="col">ETag</th><th scope="col" class="num">Taille (octets)</th><th scope="col">JSON</th></tr></thead>
<tbody>${m.history.length === 0 ? html`<tr><td colspan="4">Aucune révision.</td></tr>` : m.history.map(r => html`<tr><td>${parisTime(r.emittedAt, 'slot')}</td><td><code>${r.etag}</code></td><td class="num">${frNumber(r.size)}</td><td><a href="${downloadHref(r.siteId, r.targetDate, r)}" download="${downloadName(r)}">Télécharger</a></td></tr>`)}</tbody></table>
</section>`
}
