/**
 * What the door hands to a route once the authentication chain has passed.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Scope } from '../contract/scopes.ts'
import type { Logger } from '../host/contract.ts'
import type { Caller } from '../auth/caller.ts'

export type { Caller }

export interface RequestContext {
  readonly url: URL
  readonly caller: Caller
  readonly receivedAt: Date
  readonly log: Logger
  /**
   * The store generation the door read for this request (`store/generation.ts`): what a
   * route cached under the same value is current.
   */
  readonly generation: number
}

/** Writes the success response; throws an EpxError for anything else (the door renders it). */
export type RouteHandler = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext) => Promise<void> | void

/** Inbound errors are `{error:{code,message,details}}`; outbound ones problem+json. */
export type Door = 'inbound' | 'outbound'

export interface Route {
  readonly path: string
  readonly door: Door
  readonly scope: Scope
  readonly methods: Readonly<Partial<Record<'GET' | 'HEAD' | 'POST', RouteHandler>>>
  /** The door closes: answers still waiting (the events feed's) go now. */
  close?(): void
}

export { EVENTS_PATH, INBOUND_PATH, OUTBOUND_PATH, REALISE_PATH } from '../contract/paths.ts'

/**
 * Every API answer (200, 202, 304, every error of both doors) says its Content-Type is
 * the truth: no browser may sniff a JSON body into something it would run.
 */
export const NOSNIFF = 'nosniff'
