/**
 * The power chart of a site's day, rendered on the server as SVG (no client script: the
 * console's CSP allows none). One component for the "Besoins agrégés" page and a
 * programme's page, each giving the series it has (`chart-model.ts` decides the scale,
 * the clipped marks and the legend): available power per quarter-hour as a step area,
 * the energy milestones as bands ending at their deadline, an instruction's kW floors
 * (a line at `min_kw`, dashed red where over the available power) and curtailments (a
 * hatched column, `max_kw` 0), the delivered power. Colours are presentation
 * attributes, never `style`, so a strict CSP holds. Every slot carries a `<title>` (a
 * tooltip without script); the page's slot table is the accessible alternative the
 * `<desc>` points to. SVG paints in document order: the milestone deadlines and their
 * labels come after the constraints (a hatched curtailment hid them), with a white halo
 * so they read over any fill; the markers of values off the scale come last.
 * @module
 */
import { html, type SafeHtml } from '../html.ts'
import { frNumber } from '../numbers.ts'
import { parisText } from '../time.ts'
import { hourTicks } from './time-axis.ts'
import { chartModel, SERIES_LABELS, type ChartInput, type ChartModel, type Clipped, type Floor, type Series } from './chart-model.ts'

export type { ChartInput } from './chart-model.ts'

const W = 960
const H = 390
const M = { left: 60, right: 16, top: 58, bottom: 64 }
const PLOT_W = W - M.left - M.right
const PLOT_H = H - M.top - M.bottom
const COLOURS = {
  available: '#1f5fa8', availableFill: '#d4e5f7', floor: '#b35900', over: '#a4161a', curtailment: '#b3261e',
  milestone: '#5b3f96', delivered: '#1b7a3a', milestoneFill: '#ece6f6', grid: '#d0d0d0', text: '#222222', dst: '#fff3c4',
}
const CLIPPED_NAMES: Readonly<Record<Clipped['series'], string>> = { available: 'puissance disponible', floor: 'plancher', delivered: 'réalisé' }

export function powerChart (c: ChartInput): SafeHtml {
  const m = chartModel(c)
  const span = c.endMs - c.startMs
  const x = (ms: number) => round(M.left + (ms - c.startMs) / span * PLOT_W)
  const y = (kw: number) => round(M.top + PLOT_H - Math.min(kw, m.top) / m.top * PLOT_H)
  const delivered = c.delivered ?? []
  const ticks = hourTicks(c.startMs, c.endMs)
  const yTicks = [0, 1, 2, 3, 4].map(i => m.top * i / 4)
  const highest = m.clipped.reduce<Clipped | undefined>((a, b) => a === undefined || b.kw > a.kw ? b : a, undefined)

  const area = c.available.length === 0 ? '' : [
    `M${x(c.available[0]!.startMs)},${y(0)}`,
    ...c.available.map(s => `V${y(s.kw)}H${x(s.startMs + c.slotMs)}`),
    `V${y(0)}Z`,
  ].join('')

  return html`<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${W} ${H}" width="100%"
 role="img" aria-labelledby="chart-title chart-desc" font-family="sans-serif" font-size="13">
<title id="chart-title">${c.title}</title>
<desc id="chart-desc">${describe(c, m, ticks.length - 1)}</desc>
<defs><pattern id="chart-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
<rect width="6" height="6" fill="#fbe9e7"/><line x1="0" y1="0" x2="0" y2="6" stroke="${COLOURS.curtailment}" stroke-width="2"/></pattern></defs>
<g class="dst">${ticks.filter(t => t.repeated).map(t => html`<rect class="repeated-hour" x="${x(t.ms)}" y="${M.top}" width="${round(x(t.ms + 3_600_000) - x(t.ms))}" height="${PLOT_H}" fill="${COLOURS.dst}"><title>Heure répétée : ${t.label} h (passage à l'heure d'hiver)</title></rect>`)}</g>
<g class="grid">${yTicks.map(kw => html`<line x1="${M.left}" x2="${W - M.right}" y1="${y(kw)}" y2="${y(kw)}" stroke="${COLOURS.grid}"/><text x="${M.left - 6}" y="${y(kw) + 4}" text-anchor="end" fill="${COLOURS.text}">${frNumber(round(kw))}</text>`)}
<text x="${M.left - 6}" y="${M.top - 12}" text-anchor="end" fill="${COLOURS.text}">kW</text></g>
<g class="milestones">${c.milestones.map(j => html`<rect class="milestone" x="${x(j.startMs)}" y="${M.top}" width="${Math.max(1, round(x(j.deadlineMs) - x(j.startMs)))}" height="${PLOT_H}" fill="${COLOURS.milestoneFill}" opacity="0.7"><title>Jalon : ${frNumber(j.energyKwh)} kWh à ${frNumber(j.powerKw)} kW, de ${parisText(j.startMs, 'time')} à ${parisText(j.deadlineMs, 'time')}</title></rect>`)}</g>
${area ? html`<path class="available" d="${area}" fill="${COLOURS.availableFill}" stroke="${COLOURS.available}" stroke-width="1.5"/>` : ''}
<g class="curtailments">${m.curtailments.map(k => html`<rect class="curtailment" x="${x(k.startMs)}" y="${M.top}" width="${round(x(k.endMs) - x(k.startMs))}" height="${PLOT_H}" fill="url(#chart-hatch)" opacity="0.8"><title>Effacement (0 kW max) de ${parisText(k.startMs, 'time')} à ${parisText(k.endMs, 'time')}</title></rect>`)}</g>
<g class="floors">${m.floors.map(f => html`<line class="${f.over ? 'floor over' : 'floor'}" x1="${x(f.startMs)}" x2="${x(f.endMs)}" y1="${y(f.kw)}" y2="${y(f.kw)}" stroke="${f.over ? COLOURS.over : COLOURS.floor}" stroke-width="3"${f.over ? html` stroke-dasharray="5 2"` : ''}><title>${floorTitle(f)}</title></line>`)}</g>
<g class="delivered">${delivered.map(d => html`<line class="delivered" x1="${x(d.startMs)}" x2="${x(d.startMs + c.slotMs)}" y1="${y(d.kw)}" y2="${y(d.kw)}" stroke="${COLOURS.delivered}" stroke-width="2.5"><title>${deliveredTitle(d)}</title></line>`)}</g>
<g class="deadlines">${c.milestones.map(j => html`<line x1="${x(j.deadlineMs)}" x2="${x(j.deadlineMs)}" y1="${M.top}" y2="${M.top + PLOT_H}" stroke="${COLOURS.milestone}" stroke-width="2" stroke-dasharray="6 3"/>
<text x="${x(j.deadlineMs) - 4}" y="${M.top + 14}" text-anchor="end" fill="${COLOURS.milestone}" stroke="#ffffff" stroke-width="3" paint-order="stroke">${frNumber(j.energyKwh)} kWh</text>`)}</g>
<g class="slots">${c.available.map(s => html`<rect class="slot" x="${x(s.startMs)}" y="${M.top}" width="${round(x(s.startMs + c.slotMs) - x(s.startMs))}" height="${PLOT_H}" fill="transparent"><title>${parisText(s.startMs, 'time')} : ${frNumber(s.kw)} kW disponibles</title></rect>`)}</g>
<g class="clipped">${m.clipped.map(k => {
    const mid = round((x(k.startMs) + x(k.endMs)) / 2)
    return html`<path class="clipped-marker clipped-${k.series}" d="M${round(mid - 5)},${M.top + 8}L${mid},${M.top}L${round(mid + 5)},${M.top + 8}Z" fill="${COLOURS.over}" stroke="#ffffff" stroke-width="1"><title>Hors échelle : ${clippedTitle(k, m)}</title></path>`
  })}
${highest ? html`<text class="clipped-label" x="${W - M.right}" y="${M.top - 5}" text-anchor="end" fill="${COLOURS.over}" stroke="#ffffff" stroke-width="3" paint-order="stroke">&#x25B2; ${CLIPPED_NAMES[highest.series]} hors échelle : ${frNumber(round(highest.kw))} kW</text>` : ''}</g>
<g class="x-axis"><line x1="${M.left}" x2="${W - M.right}" y1="${M.top + PLOT_H}" y2="${M.top + PLOT_H}" stroke="${COLOURS.text}"/>
${ticks.map(t => html`<line x1="${x(t.ms)}" x2="${x(t.ms)}" y1="${M.top + PLOT_H}" y2="${M.top + PLOT_H + 5}" stroke="${COLOURS.text}"/><text class="${t.repeated ? 'hour repeated' : t.afterSkip ? 'hour after-skip' : 'hour'}" x="${x(t.ms)}" y="${M.top + PLOT_H + 18}" text-anchor="middle" fill="${COLOURS.text}">${t.label}</text>`)}
${ticks.filter(t => t.afterSkip).map(t => html`<line class="skipped-hour" x1="${x(t.ms)}" x2="${x(t.ms)}" y1="${M.top}" y2="${M.top + PLOT_H}" stroke="${COLOURS.text}" stroke-dasharray="2 2"/><text x="${x(t.ms)}" y="${M.top + PLOT_H + 34}" text-anchor="middle" fill="${COLOURS.text}">02 h sautée (heure d'été)</text>`)}
${ticks.filter(t => t.repeated).map(t => html`<text x="${x(t.ms)}" y="${M.top + PLOT_H + 34}" text-anchor="start" fill="${COLOURS.text}">${t.label} h répétée (heure d'hiver)</text>`)}
<text x="${M.left + PLOT_W / 2}" y="${H - 8}" text-anchor="middle" fill="${COLOURS.text}">Heure de Paris</text></g>
${legend(m.legend)}
</svg>`
}

function floorTitle (f: Floor): string {
  const base = `Plancher ${frNumber(f.kw)} kW de ${parisText(f.startMs, 'time')} à ${parisText(f.endMs, 'time')}`
  return f.over ? `${base}, infaisable : ${frNumber(f.availableKw!)} kW disponibles` : base
}

function deliveredTitle (d: { readonly startMs: number; readonly kw: number }): string {
  return `Réalisé ${parisText(d.startMs, 'time')} : ${frNumber(Math.round(d.kw * 250) / 1000)} kWh (${frNumber(round(d.kw))} kW en moyenne)`
}

function clippedTitle (k: Clipped, m: ChartModel): string {
  if (k.series === 'floor') return floorTitle(m.floors.find(f => f.startMs === k.startMs && f.kw === k.kw)!)
  if (k.series === 'delivered') return deliveredTitle(k)
  return `${parisText(k.startMs, 'time')} : ${frNumber(k.kw)} kW disponibles`
}

const SWATCHES: Readonly<Record<Series, SafeHtml>> = {
  available: html`<rect width="14" height="10" fill="${COLOURS.availableFill}" stroke="${COLOURS.available}"/>`,
  milestone: html`<rect width="14" height="10" fill="${COLOURS.milestoneFill}" stroke="${COLOURS.milestone}" stroke-dasharray="3 2"/>`,
  floor: html`<line x1="0" x2="14" y1="5" y2="5" stroke="${COLOURS.floor}" stroke-width="3"/>`,
  infeasible: html`<line x1="0" x2="14" y1="5" y2="5" stroke="${COLOURS.over}" stroke-width="3" stroke-dasharray="5 2"/>`,
  curtailment: html`<rect width="14" height="10" fill="url(#chart-hatch)"/>`,
  delivered: html`<line x1="0" x2="14" y1="5" y2="5" stroke="${COLOURS.delivered}" stroke-width="2.5"/>`,
  clipped: html`<path d="M2,10L7,2L12,10Z" fill="${COLOURS.over}"/>`,
}

/** One entry per series drawn, wrapped to a second row when the first is full. */
function legend (series: readonly Series[]): SafeHtml {
  // About 7 px a character at 13 px sans-serif, plus the swatch and a gap.
  const widths = series.map(s => 20 + SERIES_LABELS[s].length * 7 + 20)
  const perRow = widths.reduce((n, _, i) => widths.slice(0, i + 1).reduce((a, b) => a + b, 0) <= PLOT_W ? i + 1 : n, 0)
  return html`<g class="legend" transform="translate(${M.left},8)">${series.map((s, i) => {
    const row = i < perRow ? 0 : 1
    const dx = widths.slice(row ? perRow : 0, i).reduce((a, b) => a + b, 0)
    return html`<g class="legend-item legend-${s}" transform="translate(${dx},${row * 18})">${SWATCHES[s]}<text x="20" y="10" fill="${COLOURS.text}">${SERIES_LABELS[s]}</text></g>`
  })}</g>`
}

function plural (n: number, one: string, many: string): string {
  return `${frNumber(n)} ${n > 1 ? many : one}`
}

function describe (c: ChartInput, m: ChartModel, hours: number): string {
  const kws = c.available.map(s => s.kw)
  const floors = m.floors.length
  const over = m.floors.filter(f => f.over).length
  const available = kws.length
    ? `Puissance disponible par quart d'heure sur ${c.available.length} quarts d'heure (${hours} h, heure de Paris), de ${frNumber(Math.min(...kws))} à ${frNumber(Math.max(...kws))} kW. `
    : `Aucune puissance disponible publiée pour ce jour (${hours} h, heure de Paris). `
  return available +
    `${plural(c.milestones.length, "jalon d'énergie", "jalons d'énergie")}, ${plural(floors, 'plancher', 'planchers')} et ${plural(m.curtailments.length, 'effacement', 'effacements')} de la consigne` +
    (over ? `, dont ${plural(over, 'plancher', 'planchers')} au-delà de la puissance disponible (infaisable)` : '') + '. ' +
    (c.delivered?.length ? `L'énergie réalisée de ${plural(c.delivered.length, "quart d'heure relevé", "quarts d'heure relevés")} est tracée en puissance moyenne. ` : '') +
    (m.clipped.length ? `Échelle jusqu'à ${frNumber(m.top)} kW : ${plural(m.clipped.length, 'valeur', 'valeurs')} au-delà, marquée${m.clipped.length > 1 ? 's' : ''} d'un triangle en haut du graphique. ` : '') +
    `Le tableau « ${c.tableName} » donne chaque valeur.`
}

function round (n: number): number {
  return Math.round(n * 10) / 10
}
