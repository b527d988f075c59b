/**
 * The context the door hands to a route, built lazily: most requests need neither the
 * parsed URL nor a child logger.
 * @module
 */
import type { Logger } from '../host/contract.ts'
import type { Caller, RequestContext } from './route.ts'
import type { RouteMatch } from './router.ts'

/**
 * The context a handler gets. The URL and the child logger are made only when a
 * handler asks for them: most requests need neither (issue 5 GET profile).
 */
export class Context implements RequestContext {
  #log: Logger | undefined
  constructor (private readonly match: RouteMatch, readonly caller: Caller, readonly receivedAt: Date,
    readonly generation: number, private readonly baseLog: Logger) {}

  get url (): URL {
    return this.match.url
  }

  get log (): Logger {
    return this.#log ??= this.baseLog.child({ companyId: this.caller.companyId, tokenId: this.caller.tokenId })
  }
}
