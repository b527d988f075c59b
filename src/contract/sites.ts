/**
 * The body of the perimeter read, GET sites (DECISIONS.md "Authentication and tenancy",
 * an extension of the contract): what the door answers (`http/sites-route.ts`) and the
 * BSP client reads (`bsp/client.ts`). Its JSON Schema is in `published-schemas.ts`.
 * @module
 */
export interface SitesBody {
  /**
   * `sites`: the perimeter is the list below; `all`: the company's perimeter is every site
   * the service manages (an operator's choice), and the list is empty.
   */
  readonly perimeter: 'sites' | 'all'
  /** The company's sites, in site order. */
  readonly sites: readonly SiteEntry[]
}

export interface SiteEntry {
  readonly site_id: string
  /**
   * Since when the company has held the site without a break (UTC, DECISIONS.md "Tenure:
   * who holds a site, and when"); absent when the history does not say (another company
   * holds it by the rules of tenure, a perimeter shared before one BSP per site).
   */
  readonly held_since?: string
}
