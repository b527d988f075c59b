/**
 * GET/HEAD besoins-agreges (placeholder until the outbound exchange lands).
 * @module
 */
import { EpxError } from '../errors.ts'
import { OUTBOUND_PATH, type Route } from './route.ts'

export function outboundRoute (): Route {
  const notYet = () => { throw new EpxError('NOT_IMPLEMENTED', ['GET besoins-agreges']) }
  return { path: OUTBOUND_PATH, door: 'outbound', scope: 'outbound:besoins-agreges', methods: { GET: notYet, HEAD: notYet } }
}
