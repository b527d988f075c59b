/**
 * "Récupérations": who fetched what, the facts `epx deliveries` counts
 * (`apply/delivery-status.ts`): for a Paris day (tomorrow by default, the day being
 * published), each site published within a company's perimeter, whether the company holds
 * its latest revision, an older one, or never fetched it. GET query parameters, so a URL
 * can be shared: `target_date`, `company_id`, `state` (`latest`, `stale`, `never`), `q`
 * (part of a site's PRM or name), by company then site, in pages by key (`after` /
 * `before`, `pages/keyset.ts`). The receipts are those the service has written: it keeps
 * them in memory and writes them every few seconds (`store/deliveries.ts`).
 * @module
 */
import { deliveryRows, type DeliveryRow, type DeliveryState } from '../../apply/delivery-status.ts'
import { isCalendarDate } from '../../contract/paris-day.ts'
import type { Site } from '../../host/contract.ts'
import type { ConsoleDeps } from '../deps.ts'
import { defaultTargetDate, type Loaded } from '../pages/besoins-model.ts'
import { cursorOf, keysetPage } from '../pages/keyset.ts'

export const DELIVERY_STATES: readonly DeliveryState[] = ['latest', 'stale', 'never']

export interface DeliveriesQuery {
  readonly target_date?: string
  readonly company_id?: string
  readonly state?: string
  readonly q?: string
  readonly after?: string
  readonly before?: string
}

export interface DeliveriesFilter {
  readonly companyId?: string
  readonly state?: DeliveryState
  readonly q: string
}

/** Per company, over the filter without `state`: its published sites, and each state's count. */
export type CompanyCounts = { readonly companyId: string; readonly published: number } & Readonly<Record<DeliveryState, number>>

export interface DeliveriesModel {
  readonly targetDate: string
  readonly filter: DeliveriesFilter
  readonly companies: readonly string[]
  readonly perCompany: readonly CompanyCounts[]
  /** Over the filter without `state`. */
  readonly counts: Readonly<Record<DeliveryState | 'all', number>>
  /** Rows the whole filter selects, over every page. */
  readonly total: number
  readonly rows: readonly DeliveryRow[]
  /** The solver's sites of this page's rows (their names). */
  readonly sites: ReadonlyMap<string, Site>
  readonly previous?: string
  readonly next?: string
  readonly paged: boolean
}

export type DeliveriesDeps = Pick<ConsoleDeps, 'companies' | 'revisions' | 'deliveries' | 'sites' | 'clock'>

export async function loadDeliveries (deps: DeliveriesDeps, q: DeliveriesQuery): Promise<Loaded<DeliveriesModel>> {
  const targetDate = q.target_date || defaultTargetDate(deps.clock)
  if (!isCalendarDate(targetDate)) return { status: 400, message: `Le jour « ${targetDate} » n'est pas une date AAAA-MM-JJ valide.` }
  const state = q.state || undefined
  if (state !== undefined && !(DELIVERY_STATES as readonly string[]).includes(state)) return { status: 400, message: `État « ${state} » inconnu : ${DELIVERY_STATES.join(', ')}, ou rien pour tous.` }
  const cursor = cursorOf(q.after, q.before)
  if ('error' in cursor) return { status: 400, message: cursor.error }
  const filter: DeliveriesFilter = { ...(q.company_id ? { companyId: q.company_id } : {}), ...(state ? { state: state as DeliveryState } : {}), q: (q.q ?? '').trim() }
  const all = deps.companies.list()
  const companies = filter.companyId === undefined ? all : all.filter(c => c.id === filter.companyId)
  const published = deps.revisions.latestOfDay(targetDate)
  const receipts = deps.deliveries.list(targetDate, filter.companyId)
  const hostSites = await deps.sites()
  const needle = filter.q.toLowerCase()
  const named = needle === '' ? undefined : new Set(hostSites.filter(s => s.site_name.toLowerCase().includes(needle)).map(s => s.site_id))
  const selected = companies.flatMap(c => deliveryRows(c, published, receipts))
    .filter(r => named === undefined || r.siteId.toLowerCase().includes(needle) || named.has(r.siteId))
  const counts = { all: selected.length, latest: 0, stale: 0, never: 0 }
  const perCompany = new Map<string, { companyId: string; published: number } & Record<DeliveryState, number>>()
  for (const r of selected) {
    counts[r.state]++
    let c = perCompany.get(r.companyId)
    if (!c) perCompany.set(r.companyId, c = { companyId: r.companyId, published: 0, latest: 0, stale: 0, never: 0 })
    c.published++
    c[r.state]++
  }
  const rows = filter.state === undefined ? selected : selected.filter(r => r.state === filter.state)
  const page = keysetPage(rows, r => `${r.companyId}|${r.siteId}`, false, cursor)
  const onPage = new Set(page.rows.map(r => r.siteId))
  return {
    status: 200,
    model: {
      targetDate, filter, companies: all.map(c => c.id), perCompany: [...perCompany.values()], counts, total: rows.length, rows: page.rows,
      sites: new Map(hostSites.filter(s => onPage.has(s.site_id)).map(s => [s.site_id, s])),
      previous: page.previous, next: page.next, paged: q.after !== undefined || q.before !== undefined,
    },
  }
}
