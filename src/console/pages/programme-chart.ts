/**
 * The chart of a programme's page: this instruction's floors and curtailments over the
 * Besoins published for its site and day (available power, milestones, floors over the
 * available power styled as infeasible) and the energy the meter delivered, on the
 * chart component the "Besoins agrégés" page draws (`chart/power-chart.ts`).
 * @module
 */
import { html, type SafeHtml } from '../html.ts'
import { parisText } from '../time.ts'
import { powerChart } from '../chart/power-chart.ts'
import { besoinsSeries } from '../chart/besoins-series.ts'
import { parisDayMs, QUARTER_HOUR_MS } from '../../contract/paris-day.ts'
import type { ProgrammeModel } from './programmes-model.ts'

/** Caption of the page's slot table (`programmes-view.ts`), the chart's accessible alternative. */
export const PROGRAMME_SLOTS_CAPTION = 'Créneaux programmés'

/** The figure, or nothing when the instruction has no slot (its page then has no slot table either). */
export function programmeChart (m: ProgrammeModel): SafeHtml {
  const i = m.view.instruction
  if (m.constraints.length === 0) return html``
  const { startMs, endMs } = parisDayMs(i.targetDate)
  // Each metered quarter-hour's energy as its mean power (kWh × 4), on the kW axis of the floors.
  const delivered = (m.realisation?.creneaux ?? []).filter(c => c.energie_realisee_kwh !== null)
    .map(c => ({ startMs: Date.parse(c.debut_utc), kw: c.energie_realisee_kwh! * 4 }))
  return html`<figure class="chart" tabindex="0" aria-label="Graphique (défile horizontalement sur un petit écran)">${powerChart({
    startMs, endMs, slotMs: QUARTER_HOUR_MS,
    ...besoinsSeries(m.besoins),
    constraints: m.constraints.map(c => ({ startMs: Date.parse(c.startUtc), endMs: Date.parse(c.endUtc), minKw: c.minKw, maxKw: c.maxKw })),
    delivered,
    title: `Programmé, disponible et réalisé, ${i.siteId}, ${parisText(startMs + 12 * 3_600_000, 'date')}`,
    tableName: PROGRAMME_SLOTS_CAPTION,
  })}</figure>`
}
