/**
 * Renders the "Programmes" pages: a day's received instructions (sender, emitted_at,
 * received at, status) and one instruction's slots (energy, and the floor or
 * curtailment the solver gets). Pure: model in, HTML out.
 * @module
 */
import { html, type SafeHtml } from '../html.ts'
import { frNumber } from '../numbers.ts'
import { parisHeader, parisText, parisTime } from '../time.ts'
import { addDays } from '../../contract/paris-day.ts'
import { roundKw, type InstructionView, type SlotConstraint } from '../../apply/instruction-view.ts'
import type { ProgrammeModel } from './programmes-model.ts'
import { SORTS, STATUS_FILTERS, type ProgrammesModel, type ProgrammesSort, type StatusFilter } from './programmes-list.ts'
import { besoinsHref, PROGRAMMES_PATH, programmesListHref, realiseHref } from './paths.ts'
import { programmeChart } from './programme-chart.ts'
import type { Site } from '../../host/contract.ts'
import { checkBadge, checkText, feasibilityText } from './feasibility.ts'
import { instructionLink, instructionShort } from './instruction-ref.ts'
import { senderWithName, siteWithNames } from './declared.ts'
import type { Creneau, RealiseBody, Verdict } from '../../contract/realise.ts'
import { LATE_LABEL, VERDICT_LABELS } from '../../apply/realisation-csv.ts'

export { LATE_LABEL, VERDICT_LABELS }

/** "plancher 12 kW", "effacement (0 kW max)", or a dash: no slot, no constraint. */
export function constraintText (c: SlotConstraint | undefined): string {
  if (c === undefined) return '—'
  return c.minKw !== undefined ? `plancher ${frNumber(roundKw(c.minKw))} kW` : 'effacement (0 kW max)'
}

/** What a status is told from: an instruction's status, and its superseder where named. */
type StatusOf = Pick<InstructionView, 'supersededBy'> & { readonly instruction: Pick<InstructionView['instruction'], 'state' | 'siteId'> }

/** The status in French, as `epx instructions` states it: applied with its cycle, superseded by which one. */
export function statusLabel ({ instruction: i, supersededBy }: StatusOf): string {
  switch (i.state.status) {
    case 'received': return 'reçue'
    case 'queued': return 'en attente du prochain cycle'
    case 'applied': return i.state.cycle === undefined ? 'appliquée' : `appliquée au cycle ${i.state.cycle}`
    case 'superseded': return supersededBy ? `remplacée par ${instructionShort(supersededBy.instructionId)}` : 'remplacée par un programme plus récent'
    case 'withdrawn': return i.state.reason === 'site-left-perimeter' ? 'retirée : le site a quitté le périmètre' : 'retirée par l\'opérateur'
  }
}

/** The status and since when; `slot` in a table whose header says the clock. */
function statusCell (v: StatusOf, style: 'slot' | 'datetime' = 'datetime'): SafeHtml {
  const s = v.supersededBy
  const label = s
    ? html`remplacée par ${instructionLink(s.instructionId, v.instruction.siteId)}`
    : statusLabel(v)
  return html`<span class="status status-${v.instruction.state.status}">${label}</span> <small>depuis ${parisTime(v.instruction.state.at, style)}</small>`
}

/** A Paris day as the console writes dates, `22/11/2026` (noon UTC falls inside that Paris day). */
function dayText (targetDate: string): string {
  return parisText(Date.parse(`${targetDate}T12:00:00Z`), 'date')
}

/** A status filter in French, as the counts name it. */
const STATUS_FILTER_LABELS: Readonly<Record<StatusFilter, string>> = {
  received: 'reçues',
  queued: 'en attente',
  applied: 'appliquées',
  superseded: 'remplacées',
  withdrawn: 'retirées',
  infeasible: 'infaisables',
  late: 'reçues trop tard',
}

const SORT_LABELS: Readonly<Record<ProgrammesSort, string>> = {
  emission: 'émission, plus anciennes d\'abord',
  '-emission': 'émission, plus récentes d\'abord',
  site: 'site, croissant',
  '-site': 'site, décroissant',
}

/** The list's URL with `change` over the current filters; a new filter or day starts at the first page. */
function listHref (m: ProgrammesModel, change: Readonly<Record<string, string | undefined>>): string {
  const f = m.filter
  return programmesListHref({
    target_date: m.targetDate, site_id: f.siteId, q: f.q, company_id: f.companyId, status: f.status, sort: f.sort === 'emission' ? undefined : f.sort, ...change,
  })
}

export function renderProgrammes (m: ProgrammesModel): SafeHtml {
  const f = m.filter
  const option = (value: string, label: string, chosen: string | undefined) => html`<option value="${value}"${value === (chosen ?? '') ? html` selected` : ''}>${label}</option>`
  return html`<form method="get" action="${PROGRAMMES_PATH}" class="chooser" role="search">
<label for="target_date">Jour</label>
<input id="target_date" name="target_date" type="date" value="${m.targetDate}" required>
<label for="q">Site</label>
<input id="q" name="q" type="search" value="${f.q}" placeholder="PRM ou nom, même en partie">
${m.companies ? html`<label for="company_id">Entreprise</label>
<select id="company_id" name="company_id">${option('', 'Toutes', f.companyId)}${m.companies.map(c => option(c, c, f.companyId))}</select>` : ''}
<label for="status">Statut</label>
<select id="status" name="status">${option('', 'Tous', f.status)}${STATUS_FILTERS.map(s => option(s, STATUS_FILTER_LABELS[s], f.status))}</select>
<label for="sort">Tri</label>
<select id="sort" name="sort">${SORTS.map(s => option(s, SORT_LABELS[s], f.sort))}</select>
${f.siteId ? html`<input type="hidden" name="site_id" value="${f.siteId}">` : ''}
<button type="submit">Afficher</button>
</form>
${f.siteId ? html`<p class="note">Site ${f.siteId} seulement &mdash; <a href="${listHref(m, { site_id: undefined })}">tous les sites</a></p>` : ''}
<nav class="days" aria-label="Jours voisins"><a href="${listHref(m, { target_date: addDays(m.targetDate, -1) })}">&larr; Jour précédent</a> <a href="${listHref(m, { target_date: addDays(m.targetDate, 1) })}">Jour suivant &rarr;</a></nav>
<p class="counts">${f.status === undefined ? html`<strong>toutes : ${frNumber(m.counts.all)}</strong>` : html`<a href="${listHref(m, { status: undefined })}">toutes : ${frNumber(m.counts.all)}</a>`}${STATUS_FILTERS.map(s => html` · ${s === f.status
    ? html`<strong class="count-${s}">${STATUS_FILTER_LABELS[s]} : ${frNumber(m.counts[s])}</strong>`
    : html`<a class="count-${s}" href="${listHref(m, { status: s })}">${STATUS_FILTER_LABELS[s]} : ${frNumber(m.counts[s])}</a>`}`)}</p>
<table class="programmes"><caption>Instructions reçues pour le ${dayText(m.targetDate)} : ${frNumber(m.total)} sur cette sélection${m.total > m.views.length ? `, ${frNumber(m.views.length)} sur cette page` : ''}</caption>
<thead><tr><th scope="col">${parisHeader('Instruction émise le')}</th><th scope="col">Site</th><th scope="col">Statut et faisabilité</th><th scope="col">Entreprise</th><th scope="col">${parisHeader('Reçue le')}</th><th scope="col" class="num">Créneaux</th></tr></thead>
<tbody>${m.views.length === 0 ? html`<tr><td colspan="6">${m.counts.all === 0 && !f.q && !f.companyId && !f.siteId ? 'Aucune instruction reçue pour ce jour.' : 'Aucune instruction ne répond à ces critères.'}</td></tr>` : m.views.map(v => {
    const i = v.instruction
    return html`<tr><td>${instructionLink(i.instructionId, i.siteId)}</td><td>${siteWithNames(i.siteId, i.siteName, m.sites)}</td><td class="status-cell">${statusCell(v, 'slot')}${v.late ? html` <strong class="flag-late">${LATE_LABEL}</strong>` : ''} ${checkBadge(v.check)}</td><td>${senderWithName(i.emittedBy, { id: i.companyId, name: v.companyName })}</td><td>${parisTime(i.receivedAt, 'slot')}</td><td class="num">${i.periodsCount}</td></tr>`
  })}</tbody></table>
${pagesNav(m.previous, m.next, m.paged, k => listHref(m, k))}`
}

/** Previous and next pages by their cursor, and the first page once away from it. */
export function pagesNav (previous: string | undefined, next: string | undefined, paged: boolean, href: (change: Record<string, string | undefined>) => string): SafeHtml {
  if (!previous && !next && !paged) return html``
  return html`<nav class="pages" aria-label="Pages">${paged ? html`<a href="${href({})}">&#x21E4; Première page</a> ` : ''}${previous ? html`<a rel="prev" href="${href({ before: previous })}">&larr; Page précédente</a> ` : ''}${next ? html`<a rel="next" href="${href({ after: next })}">Page suivante &rarr;</a>` : ''}</nav>`
}

/** The instruction in force at a quarter-hour's start (DECISIONS.md "In force, quarter-hour by quarter-hour"). */
function governingOf (r: RealiseBody, c: Creneau): string | null {
  return c.instruction_id === undefined ? r.instruction_id : c.instruction_id
}

/** Whether a day's realisation judged any slot of `instructionId`: a quarter-hour it governed, or one of its slots that came late. */
function judges (r: RealiseBody | undefined, instructionId: string): boolean {
  return !!r && r.creneaux.some(c => governingOf(r, c) === instructionId || c.tardif?.instruction_id === instructionId)
}

/** When the instruction was in force, in Paris time: "de 07:19 à 09:00 (remplacée)". */
function inForceText (spans: ProgrammeModel['inForce']): string {
  if (!spans?.length) return 'jamais en vigueur'
  const end = (s: NonNullable<ProgrammeModel['inForce']>[number]) => s.untilMs === undefined
    ? ' à ce jour'
    : ` au ${parisText(s.untilMs)} (${s.endedBy === 'superseded' ? 'remplacée' : s.endedBy === 'site-left-perimeter' ? 'site sorti du périmètre' : 'retirée'})`
  return spans.map(s => `du ${parisText(s.fromMs)}${end(s)}`).join(' ; ')
}

/** One instruction; `hostSites`: the solver's sites, whose names are the ones shown. */
export function renderProgramme (m: ProgrammeModel, hostSites?: readonly Site[]): SafeHtml {
  const i = m.view.instruction
  // Each quarter-hour belongs to the instruction in force at its start: this one's verdicts are those of the hours it governed.
  const r = m.realisation
  const compared = r && judges(r, i.instructionId) ? new Map(r.creneaux.map(c => [Date.parse(c.debut_utc), c])) : undefined
  const overAt = new Map((m.view.feasibility?.infeasibleSlots ?? []).map(s => [Date.parse(s.startUtc), s.availableKw]))
  return html`<dl class="facts">
<dt>Instruction</dt><dd><code>${i.instructionId}</code></dd>
<dt>Site</dt><dd>${siteWithNames(i.siteId, i.siteName, hostSites)}</dd>
<dt>Jour</dt><dd>${dayText(i.targetDate)}</dd>
<dt>Entreprise</dt><dd>${senderWithName(i.emittedBy, { id: i.companyId, name: m.view.companyName })} <small>(jeton ${i.tokenId})</small></dd>
<dt>Émise le</dt><dd>${parisTime(i.emittedAt)}</dd>
<dt>Reçue le</dt><dd>${parisTime(i.receivedAt)}</dd>
<dt>Statut</dt><dd>${statusCell(m.view)}</dd>
<dt>En vigueur</dt><dd class="in-force">${inForceText(m.inForce)}</dd>
<dt>Créneaux</dt><dd>${slotsText(i.slots.length, i.slotDurationSecs)}</dd>
<dt>Faisabilité</dt><dd>${m.view.feasibility ? html`<strong class="flag-infeasible">infaisable</strong> (ci-dessous)` : html`${checkBadge(m.view.check)} ${checkText(m.view.check)}`}</dd>
</dl>
${m.view.feasibility ? html`<p class="flag-infeasible" role="note"><strong>Infaisable :</strong> ${feasibilityText(m.view.feasibility)}</p>` : ''}
<p><a href="${besoinsHref(i.siteId, i.targetDate)}">Voir sur le graphique des besoins agrégés</a> · <a href="${realiseHref(i.targetDate)}">Réalisé de tous les sites ce jour</a></p>
${realisedSummary(m)}
${i.slots.length === 0
    ? html`<p class="empty">Aucun créneau : cette instruction lève toute contrainte du site pour ce jour.</p>`
    : html`<table class="slots"><caption>Créneaux programmés</caption>
<thead><tr><th scope="col">${parisHeader('Début')}</th><th scope="col">${parisHeader('Fin')}</th><th scope="col" class="num">Énergie (kWh)</th><th scope="col">Contrainte</th><th scope="col">Faisabilité</th>${compared ? html`<th scope="col" class="num">Réalisé (kWh)</th><th scope="col">Verdict</th>` : ''}</tr></thead>
<tbody>${m.constraints.map(c => {
    const available = overAt.get(Date.parse(c.startUtc))
    const q = compared?.get(Date.parse(c.startUtc))
    return html`<tr><td>${parisTime(c.startUtc, 'slot')}</td><td>${parisTime(c.endUtc, 'slot')}</td><td class="num">${frNumber(c.energyKwh)}</td><td class="${c.minKw !== undefined ? 'floor' : 'curtailment'}">${constraintText(c)}</td>${available === undefined
      ? html`<td></td>`
      : html`<td class="over"><strong class="flag-infeasible">infaisable</strong> : ${frNumber(roundKw(available))} kW disponibles</td>`}${compared ? html`<td class="num">${q?.energie_realisee_kwh === null || q === undefined ? '—' : frNumber(q.energie_realisee_kwh)}</td>${slotVerdict(r!, q, i.instructionId, Date.parse(c.startUtc), m.inForce?.[0]?.fromMs)}` : ''}</tr>`
  })}</tbody></table>`}`
}

/** "96 créneaux de 15 min". */
function slotsText (n: number, secs: number): string {
  const length = secs % 3600 === 0 ? `${secs / 3600} h` : secs % 60 === 0 ? `${secs / 60} min` : `${secs} s`
  return `${frNumber(n)} créneau${n > 1 ? 'x' : ''} de ${length}`
}

/**
 * This instruction's verdict for one of its slots: its own where it governed the quarter-hour,
 * `late` where it came into force after the quarter-hour began (`sinceMs`), none where another governed.
 */
function slotVerdict (r: RealiseBody, q: Creneau | undefined, instructionId: string, startMs: number, sinceMs: number | undefined): SafeHtml {
  const governed = !q || governingOf(r, q) === instructionId
  if (!governed && (q.tardif?.instruction_id === instructionId || (sinceMs !== undefined && sinceMs > startMs))) return html`<td class="verdict verdict-late">${LATE_LABEL}</td>`
  if (!governed) return html`<td class="verdict verdict-other">une autre instruction était en vigueur</td>`
  return html`<td class="verdict verdict-${q?.verdict ?? 'no_data'}">${verdictText(q)}</td>`
}

function verdictText (c: Creneau | undefined): string {
  if (!c) return VERDICT_LABELS.no_data
  return c.verdict === 'short' && c.manque_kwh !== undefined ? `${VERDICT_LABELS.short} (−${frNumber(c.manque_kwh)} kWh)` : VERDICT_LABELS[c.verdict]
}

/** Programmed against delivered over the day: the chart's two series and the day's totals. */
function realisedSummary (m: ProgrammeModel): SafeHtml {
  const i = m.view.instruction
  const r = m.realisation
  if (!r) return html`<p class="empty">Réalisé : aucun relevé de compteur pour ce site et ce jour (les relevés arrivent à la clôture de chaque quart d'heure).</p>${programmeChart(m)}`
  if (!judges(r, i.instructionId)) {
    return html`<p class="note">Réalisé : comparé à l'instruction en vigueur${r.instruction_id ? html` ${instructionLink(r.instruction_id, i.siteId)}` : ''}, pas à celle-ci.</p>${programmeChart(m)}`
  }
  const t = r.totaux
  return html`<section class="realise" aria-labelledby="realise-title"><h2 id="realise-title">Programmé et réalisé</h2>
<p class="totals">Programmé <strong>${frNumber(t.energie_programmee_kwh)} kWh</strong>, réalisé <strong>${frNumber(t.energie_realisee_kwh)} kWh</strong>, manque <strong class="${t.manque_kwh > 0 ? 'shortfall' : ''}">${frNumber(t.manque_kwh)} kWh</strong> &mdash;
${(Object.keys(VERDICT_LABELS) as Verdict[]).filter(v => v !== 'unconstrained' && t.verdicts[v] > 0).map(v => `${frNumber(t.verdicts[v])} ${VERDICT_LABELS[v]}`).join(', ') || 'aucun créneau programmé relevé'}${t.tardifs > 0 ? ` ; ${frNumber(t.tardifs)} ${LATE_LABEL}, comptés à part` : ''}.</p>
${programmeChart(m)}</section>`
}
