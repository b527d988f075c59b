/**
 * What the door hands to a route once the authentication chain has passed.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Scope } from '../contract/scopes.ts'
import type { Logger } from '../host/contract.ts'
import type { Caller } from '../auth/caller.ts'
import type { ANY_SCOPE } from '../auth/authorize.ts'

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
  /** The token's scope the route needs; `any`: every token of the company (the perimeter read). */
  readonly scope: Scope | typeof ANY_SCOPE
  readonly methods: Readonly<Partial<Record<'GET' | 'HEAD' | 'POST', RouteHandler>>>
  /** The door closes: answers still waiting (the events feed's) go now. */
  close?(): void
}

/** What a route of the API's own documentation asks of a caller: nothing (`error-pages.ts`). */
export const NO_CREDENTIALS = 'none'

/** Writes a page of the API's documentation; it knows no caller. */
export type PageHandler = (req: IncomingMessage, res: ServerResponse) => void

/**
 * A page of the API's documentation (a problem type's page, `{base_url}/errors/<slug>`):
 * answered before and without the authentication chain and any company's budget.
 */
export interface PageRoute {
  readonly path: string
  /** The door whose format its errors take (405, and 404 for a page that does not exist). */
  readonly door: Door
  readonly scope: typeof NO_CREDENTIALS
  /** Its metrics' route label (a label per page would be a label per slug). */
  readonly label: string
  readonly methods: Readonly<Partial<Record<'GET' | 'HEAD', PageHandler>>>
}

/** Every route the door serves. */
export type AnyRoute = Route | PageRoute

export { EVENTS_PATH, INBOUND_PATH, OUTBOUND_PATH, REALISE_PATH, SITES_PATH } from '../contract/paths.ts'

/**
 * Every API answer (200, 202, 304, every error of both doors) says its Content-Type is
 * the truth: no browser may sniff a JSON body into something it would run.
 */
export const NOSNIFF = 'nosniff'
