/**
 * The method + path table of the API door: an unknown path is a 404, a known path
 * with another method a 405 with `Allow`. Both are answered before authentication.
 * @module
 */
import { EpxError } from '../errors.ts'
import type { AnyRoute, PageHandler, RouteHandler } from './route.ts'

export interface RouteMatch {
  readonly route: AnyRoute
  /** A `PageHandler` when the route is a `PageRoute`. */
  readonly handler: RouteHandler | PageHandler
  /** The request target as a URL on `origin` (query string kept for the handler). */
  readonly url: URL
}

export interface Router {
  /** The route for a method and request target; throws UNKNOWN_PATH or METHOD_NOT_ALLOWED. */
  match(method: string, target: string): RouteMatch
  /** The door of a path, if a route serves it (to render errors in its format). */
  routeOf(target: string): AnyRoute | undefined
}

/** Order of the `Allow` header, whatever order a route lists its methods in. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST'] as const

/**
 * A path the WHATWG URL parser leaves as it is: no percent-encoding, no backslash, no
 * dot segment. Most requests take it and skip building a URL (the GET profile, bench/README.md#where-the-doors-thread-spends-a-get).
 */
const SIMPLE_PATH = /^\/[A-Za-z0-9_~.\/-]*$/

/** A match whose URL is parsed only when a handler asks for it. */
class Match implements RouteMatch {
  #url: URL | undefined
  constructor (readonly route: AnyRoute, readonly handler: RouteHandler | PageHandler, url: URL | undefined,
    private readonly target: string, private readonly parse: (target: string) => URL | undefined) {
    this.#url = url
  }

  get url (): URL {
    return this.#url ??= this.parse(this.target)!
  }
}

/** Longest path echoed in a 404 message. */
const MAX_ECHO = 200

export function createRouter (routes: readonly AnyRoute[], origin: string): Router {
  const byPath = new Map<string, { route: AnyRoute; allow: string }>()
  for (const route of routes) {
    if (byPath.has(route.path)) throw new TypeError(`two routes for ${route.path}`)
    // HEAD is allowed only where the route lists it: no implicit GET-for-HEAD.
    const methods: Readonly<Partial<Record<string, unknown>>> = route.methods
    const allow = METHOD_ORDER.filter(m => methods[m]).join(', ')
    byPath.set(route.path, { route, allow })
  }

  const parse = (target: string): URL | undefined => {
    try {
      // Origin-form (`/path?q`) is glued to the origin, so `//host/x` stays a path;
      // absolute-form (`https://host/path`) is parsed as is (RFC 9112 §3.2.2).
      return target.startsWith('/') ? new URL(origin + target) : new URL(target)
    } catch {
      return undefined
    }
  }

  /** The path of a target: read as is when the URL parser could not change it, parsed otherwise. */
  const pathOf = (target: string): { path: string; url?: URL } | undefined => {
    const q = target.indexOf('?')
    const path = q === -1 ? target : target.slice(0, q)
    if (SIMPLE_PATH.test(path) && !path.includes('/.')) return { path }
    const url = parse(target)
    return url && { path: url.pathname, url }
  }

  return {
    match (method, target) {
      const at = pathOf(target)
      const entry = at && byPath.get(at.path)
      if (!at || !entry) {
        const path = (at?.path ?? target).slice(0, MAX_ECHO)
        throw new EpxError('UNKNOWN_PATH', [path])
      }
      const handler = (entry.route.methods as Record<string, RouteHandler | PageHandler | undefined>)[method]
      if (!handler || !Object.hasOwn(entry.route.methods, method)) {
        throw new EpxError('METHOD_NOT_ALLOWED', [method.slice(0, 20), entry.allow])
      }
      return new Match(entry.route, handler, at.url, target, parse)
    },
    routeOf (target) {
      const at = pathOf(target)
      return at && byPath.get(at.path)?.route
    },
  }
}
