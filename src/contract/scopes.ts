/**
 * The scopes a Bearer token grants, one per call of the API (`outbound:realise`, the
 * realisation read's, and `outbound:evenements`, the events feed's, are extensions): the door checks them, the store keeps them with
 * the token, the CLI and the console offer them.
 * @module
 */
export const SCOPES = ['outbound:besoins-agreges', 'inbound:programme-soutirage', 'outbound:realise', 'outbound:evenements'] as const
export type Scope = typeof SCOPES[number]

export function isScope (s: unknown): s is Scope {
  return (SCOPES as readonly unknown[]).includes(s)
}
