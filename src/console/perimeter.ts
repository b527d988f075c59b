/**
 * What a console viewer may see ("a company member sees its own perimeter
 * only"): the sites of its company's perimeter (an admin: every site the solver
 * manages) and the instructions its company sent. The perimeter rule itself is
 * `auth/tenancy.ts`'s, the one the API applies.
 * @module
 */
import { inPerimeter } from '../auth/tenancy.ts'
import type { Companies } from '../store/companies.ts'
import type { Site } from '../host/contract.ts'
import type { Viewer } from './viewer.ts'

export interface PerimeterDeps {
  readonly companies: Companies
  /** The sites the solver manages (`host.solver.sites`). */
  readonly sites: () => Promise<readonly Site[]>
}

/** The sites `viewer` may look at, in the solver's order; none for a member without an active company. */
export async function visibleSites (viewer: Viewer, deps: PerimeterDeps): Promise<Site[]> {
  const all = await deps.sites()
  return all.filter(s => seesSite(viewer, deps, s.site_id))
}

/** Whether `viewer` may look at the site's data now (a site that left the perimeter is no longer its to read). */
export function seesSite (viewer: Viewer, deps: Pick<PerimeterDeps, 'companies'>, siteId: string): boolean {
  if (viewer.admin) return true
  const company = viewer.companyId === null ? undefined : deps.companies.get(viewer.companyId)
  // A suspended company's sessions are ended; a page load racing the suspension sees nothing.
  return !!company && company.status === 'active' && inPerimeter(company, siteId)
}

/** The company whose records `viewer` is limited to; undefined for an admin (every company). */
export function ownCompany (viewer: Viewer): string | undefined {
  // A member without a company (never made by `epx user add`) is limited to no company.
  return viewer.admin ? undefined : viewer.companyId ?? '\u0000none'
}
