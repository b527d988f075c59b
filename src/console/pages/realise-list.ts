/**
 * The "Réalisé" list: every site of the viewer's perimeter on a day, programmed against
 * delivered (`apply/realisation.ts`), with the company that held it, found at scale. The
 * filters, the sort and the page are GET query parameters (a URL can be shared):
 * `company_id` (an admin's: the sites that company held that day), `defaut=1` (sites with
 * a short quarter-hour or a broken curtailment), `q` (a site's id or name, in part),
 * `sort`, and the keyset cursor `after` / `before` (`keyset.ts`). The counts and totals are
 * over the whole filtered set; the CSV download takes the same filters, without the page.
 *
 * A member is compared with its company's own instructions, as its BSP reads GET realise,
 * and sees itself as the holder: never the name of whoever held its site before or after.
 * @module
 */
import { addDays, parisDateOf, parisDayMs } from '../../contract/paris-day.ts'
import { realisationTotals, type RealiseTotals } from '../../apply/realisation.ts'
import type { Site } from '../../host/contract.ts'
import type { ConsoleDeps } from '../deps.ts'
import { ownCompany } from '../perimeter.ts'
import type { Viewer } from '../viewer.ts'
import { resolvePair, type Loaded } from './besoins-model.ts'
import { cursorOf, keysetPage } from './keyset.ts'

/** What the list reads: the sites the viewer sees, and each one's day. */
export type RealiseListDeps = Pick<ConsoleDeps, 'realisation' | 'clock' | 'companies' | 'sites'>

export const REALISE_SORTS = ['site', '-site', '-manque'] as const
export type RealiseSort = typeof REALISE_SORTS[number]

export interface RealiseQuery {
  readonly target_date?: string
  readonly q?: string
  readonly company_id?: string
  readonly defaut?: string
  readonly sort?: string
  readonly after?: string
  readonly before?: string
}

export interface RealiseRow {
  readonly site: Site
  /** The day's totals (its quarter-hours are read for the CSV only). */
  readonly body?: RealiseTotals
  /** The companies that held the site during the day, in time order (a member: itself). */
  readonly holders: readonly string[]
  /** A short quarter-hour or a broken curtailment. */
  readonly defaut: boolean
}

export interface RealiseFilter {
  readonly q: string
  /** An admin's choice. */
  readonly companyId?: string
  readonly defaut: boolean
  readonly sort: RealiseSort
}

export interface RealiseDayModel {
  readonly targetDate: string
  readonly filter: RealiseFilter
  /** An admin's choice of company: the day's holders; undefined for a member. */
  readonly companies?: readonly string[]
  /** Over the filtered set without `defaut`: its sites, those with something to compare, those in default. */
  readonly counts: { readonly sites: number; readonly compared: number; readonly defaut: number }
  /** Every row the filter selects, over every page (the totals, the CSV). */
  readonly selected: readonly RealiseRow[]
  /** This page's rows. */
  readonly rows: readonly RealiseRow[]
  readonly previous?: string
  readonly next?: string
  readonly paged: boolean
}

/** The day (yesterday by default: the day whose meter values are complete) for every site the viewer sees. */
export async function loadRealiseDay (deps: RealiseListDeps, viewer: Viewer, q: RealiseQuery): Promise<Loaded<RealiseDayModel>> {
  const targetDate = q.target_date || addDays(parisDateOf(deps.clock.now()), -1)
  const pair = await resolvePair(deps, viewer, { target_date: targetDate })
  if (pair.status !== 200) return pair
  const sort = (q.sort || 'site') as RealiseSort
  if (!REALISE_SORTS.includes(sort)) return { status: 400, message: `Tri « ${sort} » inconnu : ${REALISE_SORTS.join(', ')}.` }
  if (q.defaut !== undefined && q.defaut !== '' && q.defaut !== '1') return { status: 400, message: `defaut=1 pour les sites en défaut, ou rien pour tous (reçu « ${q.defaut} »).` }
  const cursor = cursorOf(q.after, q.before)
  if ('error' in cursor) return { status: 400, message: cursor.error }
  const own = ownCompany(viewer)
  const filter: RealiseFilter = { q: (q.q ?? '').trim(), ...(own === undefined && q.company_id ? { companyId: q.company_id } : {}), defaut: q.defaut === '1', sort }
  const needle = filter.q.toLowerCase()
  const all = pair.sites
    .filter(site => needle === '' || site.site_id.includes(needle) || site.site_name.toLowerCase().includes(needle))
    .map(site => rowOf(deps, pair.targetDate, site, own))
  const companies = own === undefined ? [...new Set(all.flatMap(r => r.holders))].sort() : undefined
  const held = filter.companyId === undefined ? all : all.filter(r => r.holders.includes(filter.companyId!))
  const counts = { sites: held.length, compared: held.filter(r => r.body).length, defaut: held.filter(r => r.defaut).length }
  const selected = filter.defaut ? held.filter(r => r.defaut) : held
  const page = keysetPage(selected, keyOf(sort), sort === '-site', cursor)
  return {
    status: 200,
    model: {
      targetDate: pair.targetDate, filter, ...(companies ? { companies } : {}), counts, selected, rows: page.rows, previous: page.previous, next: page.next, paged: q.after !== undefined || q.before !== undefined,
    },
  }
}

function rowOf (deps: RealiseListDeps, targetDate: string, site: Site, own: string | undefined): RealiseRow {
  const body = realisationTotals(deps.realisation, targetDate, site.site_id, own)
  const defaut = !!body && (body.totaux.verdicts.short > 0 || body.totaux.verdicts.curtailment_broken > 0)
  return { site, ...(body ? { body } : {}), holders: holdersOf(deps, targetDate, site.site_id, own, body), defaut }
}

/**
 * Who held the site that day: the tenure (DECISIONS.md "Tenure"), or, without it, the
 * companies of the instructions in force (whom `realisation` names then). A member is told only of itself, on the days it held it.
 */
function holdersOf (deps: RealiseListDeps, targetDate: string, siteId: string, own: string | undefined, body: RealiseTotals | undefined): string[] {
  const { startMs, endMs } = parisDayMs(targetDate)
  const named = deps.realisation.holders
    ? deps.realisation.holders(siteId, startMs, endMs).map(h => h.companyId)
    : body ? deps.realisation.instructions.inForce.spansOf(targetDate, siteId).map(span => span.companyId) : []
  const distinct = [...new Set(named)]
  if (own === undefined) return distinct
  return distinct.includes(own) || (!deps.realisation.holders && body) ? [own] : []
}

/** Unique per site; by shortfall, the largest first, then by site. */
function keyOf (sort: RealiseSort): (r: RealiseRow) => string {
  if (sort !== '-manque') return r => r.site.site_id
  return r => `${String(1e14 - Math.round((r.body?.totaux.manque_kwh ?? 0) * 1000)).padStart(15, '0')}|${r.site.site_id}`
}
