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
  if (viewer.admin) return [...all]
  const company = viewer.companyId === null ? undefined : deps.companies.get(viewer.companyId)
  // A suspended company's sessions are ended; a page load racing the suspension sees nothing.
  if (!company || company.status !== 'active') return []
  return all.filter(s => inPerimeter(company, s.site_id))
}

/** The company whose records `viewer` is limited to; undefined for an admin (every company). */
export function ownCompany (viewer: Viewer): string | undefined {
  // A member without a company (never made by `epx user add`) is limited to no company.
  return viewer.admin ? undefined : viewer.companyId ?? '\u0000none'
}
