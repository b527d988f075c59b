/**
 * A site's published Besoins as the chart's series: its available power per quarter-hour
 * and its milestones, read from the very document the API serves. The "Besoins agrégés"
 * page and a programme's page draw the same document the same way.
 * @module
 */
import type { BesoinsSite } from '../../contract/besoins-agreges.ts'
import { utcInstantMs } from '../../contract/instants.ts'
import type { ChartInput } from './chart-model.ts'

export function besoinsSeries (site: BesoinsSite | undefined): Pick<ChartInput, 'available' | 'milestones'> {
  if (!site) return { available: [], milestones: [] }
  return {
    available: site.puissance_disponible.map(s => ({ startMs: utcInstantMs(s.debut_utc), kw: s.p_max_kw })),
    milestones: site.jalons_besoin.map(j => ({ startMs: utcInstantMs(j.debut_utc), deadlineMs: utcInstantMs(j.deadline_utc), energyKwh: j.valeur_kwh, powerKw: j.puissance_kW })),
  }
}
