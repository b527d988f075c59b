/**
 * The paths of the two calls (contract §4, version segment v0.5): the server's routes,
 * the reference BSP client and the console's curl lines all take them from here.
 * @module
 */
export const INBOUND_PATH = '/api/v0.5/energy-programs/programme-soutirage'
export const OUTBOUND_PATH = '/api/v0.5/energy-programs/besoins-agreges'
/** The realisation read (docs/http-api.md "Programme against delivery"): an extension under the same base. */
export const REALISE_PATH = '/api/v0.5/energy-programs/realise'
/** The events feed (DECISIONS.md "Events for BSPs"): an extension under the same base. */
export const EVENTS_PATH = '/api/v0.5/energy-programs/evenements'
/** The caller company's perimeter (DECISIONS.md "Authentication and tenancy"): an extension under the same base. */
export const SITES_PATH = '/api/v0.5/energy-programs/sites'
