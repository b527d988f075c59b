/**
 * Who fetched what: for each site published for a day within a company's perimeter,
 * whether the company holds its latest revision (a GET 200 or a 304 since it was
 * emitted), an older one (stale), or never fetched it, from the delivery receipts
 * (`store/deliveries.ts`). Read by `epx deliveries` and the console's "Récupérations".
 * @module
 */
import { inPerimeter } from '../auth/tenancy.ts'
import type { CompanyRecord } from '../store/companies.ts'
import type { DeliveryReceipt } from '../store/deliveries.ts'
import type { RevisionMeta } from '../store/revisions.ts'

export type DeliveryState = 'latest' | 'stale' | 'never'

export interface DeliveryRow {
  readonly companyId: string
  readonly siteId: string
  readonly state: DeliveryState
  /** The site's latest revision of the day. */
  readonly latest: RevisionMeta
  /** What the company last fetched or confirmed; none: never. */
  readonly receipt?: DeliveryReceipt
}

/** One company's rows: each published site in its perimeter, in the order of `published`. */
export function deliveryRows (company: Pick<CompanyRecord, 'id' | 'perimeter'>, published: readonly RevisionMeta[], receipts: readonly DeliveryReceipt[]): DeliveryRow[] {
  const bySite = new Map<string, DeliveryReceipt>()
  for (const r of receipts) if (r.companyId === company.id) bySite.set(r.siteId, r)
  const out: DeliveryRow[] = []
  for (const latest of published) {
    if (!inPerimeter(company, latest.siteId)) continue
    const receipt = bySite.get(latest.siteId)
    const state: DeliveryState = !receipt ? 'never' : receipt.emittedAtMs >= latest.emittedAtMs ? 'latest' : 'stale'
    out.push({ companyId: company.id, siteId: latest.siteId, state, latest, ...(receipt ? { receipt } : {}) })
  }
  return out
}
