/** The two endpoints of the contract, where the API serves them and the console's curl lines name them. */
export const INBOUND_PATH = '/api/v0.5/energy-programs/programme-soutirage'
export const OUTBOUND_PATH = '/api/v0.5/energy-programs/besoins-agreges'
