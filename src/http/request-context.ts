/**
 * The context the door hands to a route, built lazily: most requests need neither the
 * parsed URL nor a logger.
 * @module
 */
import type { Logger } from '../host/contract.ts'
import type { Caller, RequestContext } from './route.ts'
import type { RouteMatch } from './router.ts'

/**
 * The context a handler gets. The URL is parsed only when a handler asks for it (most
 * requests do not: the GET profile, bench/README.md#where-the-doors-thread-spends-a-get); the logger is the caller's, made once per caller.
 */
export class Context implements RequestContext {
  constructor (private readonly match: RouteMatch, readonly caller: Caller, readonly receivedAt: Date,
    readonly generation: number, private readonly logOf: (caller: Caller) => Logger) {}

  get url (): URL {
    return this.match.url
  }

  get log (): Logger {
    return this.logOf(this.caller)
  }
}
