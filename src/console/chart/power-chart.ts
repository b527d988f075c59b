/**
 * The "Besoins agrégés" chart, rendered on the server as SVG (no client script: the
 * console's CSP allows none): available power per quarter-hour as a step area, the
 * energy milestones as bands ending at their deadline, and an instruction's kW floors
 * (a line at `min_kw`) and curtailments (a hatched column, `max_kw` 0) on the same
 * axis. Colours are presentation attributes, never `style`, so a strict CSP holds.
 * Every slot carries a `<title>` (a tooltip without script); the page's slot table is
 * the accessible alternative the `<desc>` points to. SVG paints in document order: the
 * milestone deadlines and their labels come after the constraints (a hatched curtailment
 * hid them), with a white halo so they read over any fill.
 *
 * The scale follows the available power: a floor far above it (a programme asking
 * 8,000 kW of a site that has 88) would flatten everything else to a line at the bottom,
 * so a floor beyond `OUTLIER_FACTOR` times the highest available power is drawn clipped
 * at the top edge with a marker saying its value. A floor over its slot's available power
 * is drawn in the "over" colour: the solver cannot hold it.
 * @module
 */
import { html, type SafeHtml } from '../html.ts'
import { frNumber } from '../numbers.ts'
import { parisText } from '../time.ts'
import { hourTicks } from './time-axis.ts'

export interface ChartInput {
  /** The Paris day's coverage, UTC ms. */
  readonly startMs: number
  readonly endMs: number
  readonly slotMs: number
  /** One per quarter-hour of the coverage, in order. */
  readonly available: ReadonlyArray<{ readonly startMs: number; readonly kw: number }>
  readonly milestones: ReadonlyArray<{ readonly startMs: number; readonly deadlineMs: number; readonly energyKwh: number; readonly powerKw: number }>
  /** The instruction's constrained slots: a floor (`minKw`) or a curtailment (`maxKw` 0). */
  readonly constraints: ReadonlyArray<{ readonly startMs: number; readonly endMs: number; readonly minKw?: number; readonly maxKw?: number; readonly availableKw?: number }>
  /**
   * The metered energy of each reported quarter-hour as its mean power (kWh × 4): a second
   * series beside the floors, so programmed and delivered read on one axis.
   */
  readonly delivered?: ReadonlyArray<{ readonly startMs: number; readonly kw: number }>
  /** Accessible name, e.g. "Puissance disponible, Depot 1, 28/03/2027". */
  readonly title: string
  /** Caption of the page's table that gives the same values (the accessible alternative). */
  readonly tableName: string
}

const W = 960
const H = 390
const M = { left: 60, right: 16, top: 50, bottom: 64 }
const PLOT_W = W - M.left - M.right
const PLOT_H = H - M.top - M.bottom
/** A floor above this many times the day's highest available power does not set the scale. */
const OUTLIER_FACTOR = 3
const COLOURS = {
  available: '#1f5fa8', availableFill: '#d4e5f7', floor: '#b35900', over: '#a4161a', curtailment: '#b3261e',
  milestone: '#5b3f96', delivered: '#1b7a3a', milestoneFill: '#ece6f6', grid: '#d0d0d0', text: '#222222', dst: '#fff3c4',
}

export function powerChart (c: ChartInput): SafeHtml {
  const span = c.endMs - c.startMs
  const x = (ms: number) => round(M.left + (ms - c.startMs) / span * PLOT_W)
  const availableMax = Math.max(0, ...c.available.map(s => s.kw))
  const floors = c.constraints.filter(k => k.minKw !== undefined)
  const bound = availableMax > 0 ? availableMax * OUTLIER_FACTOR : Infinity
  const delivered = c.delivered ?? []
  const top = niceMax(Math.max(1, availableMax, ...floors.map(k => k.minKw!).filter(kw => kw <= bound), ...delivered.map(d => d.kw).filter(kw => kw <= bound)))
  const y = (kw: number) => round(M.top + PLOT_H - Math.min(kw, top) / top * PLOT_H)
  const over = (k: ChartInput['constraints'][number]) => k.availableKw !== undefined && k.minKw! > k.availableKw + 1e-6
  const clipped = floors.filter(k => k.minKw! > top)
  const curtailments = c.constraints.filter(k => k.minKw === undefined)
  const ticks = hourTicks(c.startMs, c.endMs)
  const yTicks = [0, 1, 2, 3, 4].map(i => top * i / 4)

  const area = c.available.length === 0 ? '' : [
    `M${x(c.available[0]!.startMs)},${y(0)}`,
    ...c.available.map(s => `V${y(s.kw)}H${x(s.startMs + c.slotMs)}`),
    `V${y(0)}Z`,
  ].join('')

  return html`<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${W} ${H}" width="100%"
 role="img" aria-labelledby="chart-title chart-desc" font-family="sans-serif" font-size="13">
<title id="chart-title">${c.title}</title>
<desc id="chart-desc">${describe(c, floors.length, curtailments.length, ticks.length - 1, floors.filter(over).length)}</desc>
<defs><pattern id="chart-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
<rect width="6" height="6" fill="#fbe9e7"/><line x1="0" y1="0" x2="0" y2="6" stroke="${COLOURS.curtailment}" stroke-width="2"/></pattern></defs>
<g class="dst">${ticks.filter(t => t.repeated).map(t => html`<rect class="repeated-hour" x="${x(t.ms)}" y="${M.top}" width="${round(x(t.ms + 3_600_000) - x(t.ms))}" height="${PLOT_H}" fill="${COLOURS.dst}"><title>Heure répétée : ${t.label} h (passage à l'heure d'hiver)</title></rect>`)}</g>
<g class="grid">${yTicks.map(kw => html`<line x1="${M.left}" x2="${W - M.right}" y1="${y(kw)}" y2="${y(kw)}" stroke="${COLOURS.grid}"/><text x="${M.left - 6}" y="${y(kw) + 4}" text-anchor="end" fill="${COLOURS.text}">${frNumber(round(kw))}</text>`)}
<text x="${M.left - 6}" y="${M.top - 12}" text-anchor="end" fill="${COLOURS.text}">kW</text></g>
<g class="milestones">${c.milestones.map(m => html`<rect class="milestone" x="${x(m.startMs)}" y="${M.top}" width="${Math.max(1, round(x(m.deadlineMs) - x(m.startMs)))}" height="${PLOT_H}" fill="${COLOURS.milestoneFill}" opacity="0.7"><title>Jalon : ${frNumber(m.energyKwh)} kWh à ${frNumber(m.powerKw)} kW, de ${parisText(m.startMs, 'time')} à ${parisText(m.deadlineMs, 'time')}</title></rect>`)}</g>
<path class="available" d="${area}" fill="${COLOURS.availableFill}" stroke="${COLOURS.available}" stroke-width="1.5"/>
<g class="curtailments">${curtailments.map(k => html`<rect class="curtailment" x="${x(k.startMs)}" y="${M.top}" width="${round(x(k.endMs) - x(k.startMs))}" height="${PLOT_H}" fill="url(#chart-hatch)" opacity="0.8"><title>Effacement (0 kW max) de ${parisText(k.startMs, 'time')} à ${parisText(k.endMs, 'time')}</title></rect>`)}</g>
<g class="floors">${floors.map(k => html`<line class="${over(k) ? 'floor over' : 'floor'}" x1="${x(k.startMs)}" x2="${x(k.endMs)}" y1="${y(k.minKw!)}" y2="${y(k.minKw!)}" stroke="${over(k) ? COLOURS.over : COLOURS.floor}" stroke-width="3"${over(k) ? html` stroke-dasharray="5 2"` : ''}><title>${floorTitle(k)}</title></line>`)}</g>
<g class="delivered">${delivered.map(d => html`<line class="delivered" x1="${x(d.startMs)}" x2="${x(d.startMs + c.slotMs)}" y1="${y(d.kw)}" y2="${y(d.kw)}" stroke="${COLOURS.delivered}" stroke-width="2.5"><title>Réalisé ${parisText(d.startMs, 'time')} : ${frNumber(Math.round(d.kw * 250) / 1000)} kWh (${frNumber(round(d.kw))} kW en moyenne)</title></line>`)}</g>
<g class="clipped">${clipped.map(k => html`<path class="clipped-marker" d="M${round((x(k.startMs) + x(k.endMs)) / 2 - 5)},${M.top + 8}L${round((x(k.startMs) + x(k.endMs)) / 2)},${M.top}L${round((x(k.startMs) + x(k.endMs)) / 2 + 5)},${M.top + 8}Z" fill="${COLOURS.over}"><title>Hors échelle : ${floorTitle(k)}</title></path>`)}
${clipped.length ? html`<text class="clipped-label" x="${W - M.right}" y="${M.top - 5}" text-anchor="end" fill="${COLOURS.over}" stroke="#ffffff" stroke-width="3" paint-order="stroke">▲ plancher hors échelle : ${frNumber(Math.max(...clipped.map(k => k.minKw!)))} kW</text>` : ''}</g>
<g class="deadlines">${c.milestones.map(m => html`<line x1="${x(m.deadlineMs)}" x2="${x(m.deadlineMs)}" y1="${M.top}" y2="${M.top + PLOT_H}" stroke="${COLOURS.milestone}" stroke-width="2" stroke-dasharray="6 3"/>
<text x="${x(m.deadlineMs) - 4}" y="${M.top + 14}" text-anchor="end" fill="${COLOURS.milestone}" stroke="#ffffff" stroke-width="3" paint-order="stroke">${frNumber(m.energyKwh)} kWh</text>`)}</g>
<g class="slots">${c.available.map(s => html`<rect class="slot" x="${x(s.startMs)}" y="${M.top}" width="${round(x(s.startMs + c.slotMs) - x(s.startMs))}" height="${PLOT_H}" fill="transparent"><title>${parisText(s.startMs, 'time')} : ${frNumber(s.kw)} kW disponibles</title></rect>`)}</g>
<g class="x-axis"><line x1="${M.left}" x2="${W - M.right}" y1="${M.top + PLOT_H}" y2="${M.top + PLOT_H}" stroke="${COLOURS.text}"/>
${ticks.map(t => html`<line x1="${x(t.ms)}" x2="${x(t.ms)}" y1="${M.top + PLOT_H}" y2="${M.top + PLOT_H + 5}" stroke="${COLOURS.text}"/><text class="${t.repeated ? 'hour repeated' : t.afterSkip ? 'hour after-skip' : 'hour'}" x="${x(t.ms)}" y="${M.top + PLOT_H + 18}" text-anchor="middle" fill="${COLOURS.text}">${t.label}</text>`)}
${ticks.filter(t => t.afterSkip).map(t => html`<line class="skipped-hour" x1="${x(t.ms)}" x2="${x(t.ms)}" y1="${M.top}" y2="${M.top + PLOT_H}" stroke="${COLOURS.text}" stroke-dasharray="2 2"/><text x="${x(t.ms)}" y="${M.top + PLOT_H + 34}" text-anchor="middle" fill="${COLOURS.text}">02 h sautée (heure d'été)</text>`)}
${ticks.filter(t => t.repeated).map(t => html`<text x="${x(t.ms)}" y="${M.top + PLOT_H + 34}" text-anchor="start" fill="${COLOURS.text}">${t.label} h répétée (heure d'hiver)</text>`)}
<text x="${M.left + PLOT_W / 2}" y="${H - 8}" text-anchor="middle" fill="${COLOURS.text}">Heure de Paris</text></g>
${legend(delivered.length > 0)}
</svg>`
}

function floorTitle (k: ChartInput['constraints'][number]): string {
  const base = `Plancher ${frNumber(k.minKw!)} kW de ${parisText(k.startMs, 'time')} à ${parisText(k.endMs, 'time')}`
  return k.availableKw !== undefined && k.minKw! > k.availableKw + 1e-6 ? `${base}, infaisable : ${frNumber(k.availableKw)} kW disponibles` : base
}

function legend (withDelivered: boolean): SafeHtml {
  const items: Array<[string, SafeHtml]> = [
    ['Puissance disponible', html`<rect width="14" height="10" fill="${COLOURS.availableFill}" stroke="${COLOURS.available}"/>`],
    ['Jalon (échéance)', html`<rect width="14" height="10" fill="${COLOURS.milestoneFill}" stroke="${COLOURS.milestone}" stroke-dasharray="3 2"/>`],
    ['Plancher (min kW)', html`<line x1="0" x2="14" y1="5" y2="5" stroke="${COLOURS.floor}" stroke-width="3"/>`],
    ['Effacement (0 kW)', html`<rect width="14" height="10" fill="url(#chart-hatch)"/>`],
    ['Plancher infaisable', html`<line x1="0" x2="14" y1="5" y2="5" stroke="${COLOURS.over}" stroke-width="3" stroke-dasharray="5 2"/>`],
  ]
  if (withDelivered) items.push(['Réalisé (compteur)', html`<line x1="0" x2="14" y1="5" y2="5" stroke="${COLOURS.delivered}" stroke-width="2.5"/>`])
  const step = withDelivered ? 148 : 172
  return html`<g class="legend" transform="translate(${M.left},10)">${items.map(([label, swatch], i) =>
    html`<g transform="translate(${i * step},0)">${swatch}<text x="20" y="10" fill="${COLOURS.text}">${label}</text></g>`)}</g>`
}

function plural (n: number, one: string, many: string): string {
  return `${frNumber(n)} ${n > 1 ? many : one}`
}

function describe (c: ChartInput, floors: number, curtailments: number, hours: number, over: number): string {
  const kws = c.available.map(s => s.kw)
  const range = kws.length ? `de ${frNumber(Math.min(...kws))} à ${frNumber(Math.max(...kws))} kW` : 'aucune valeur'
  return `Puissance disponible par quart d'heure sur ${c.available.length} quarts d'heure (${hours} h, heure de Paris), ${range}. ` +
    `${plural(c.milestones.length, "jalon d'énergie", "jalons d'énergie")}, ${plural(floors, 'plancher', 'planchers')} et ${plural(curtailments, 'effacement', 'effacements')} de la consigne` +
    (over ? `, dont ${plural(over, 'plancher', 'planchers')} au-delà de la puissance disponible (infaisable)` : '') + '. ' +
    (c.delivered?.length ? `L'énergie réalisée de ${plural(c.delivered.length, "quart d'heure relevé", "quarts d'heure relevés")} est tracée en puissance moyenne. ` : '') +
    `Le tableau « ${c.tableName} » donne chaque valeur.`
}

/** A round axis maximum a little above `v`: 1, 2 or 5 times a power of ten, times 4 ticks. */
function niceMax (v: number): number {
  const raw = v * 1.1 / 4
  const p = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 2.5, 5, 10].map(f => f * p).find(s => s >= raw)!
  return step * 4
}

function round (n: number): number {
  return Math.round(n * 10) / 10
}
