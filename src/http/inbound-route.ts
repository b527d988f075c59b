/**
 * POST programme-soutirage (placeholder until the inbound exchange lands).
 * @module
 */
import { EpxError } from '../errors.ts'
import { INBOUND_PATH, type Route } from './route.ts'

export function inboundRoute (): Route {
  return {
    path: INBOUND_PATH,
    door: 'inbound',
    scope: 'inbound:programme-soutirage',
    methods: { POST: () => { throw new EpxError('NOT_IMPLEMENTED', ['POST programme-soutirage']) } },
  }
}
