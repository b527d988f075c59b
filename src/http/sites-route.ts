/**
 * GET/HEAD sites (DECISIONS.md "Authentication and tenancy", an extension of the contract
 * under the same base path): the caller company's own perimeter, each site with since when
 * it holds it (`store/tenure.ts`). Any token of the company may read it (the route's scope
 * is `any`): a BSP learns which sites to pull and program, whatever its token is for. It
 * names nothing outside the perimeter, so a company never learns which other sites exist.
 *
 * The body is made once per company and store generation (a perimeter changes with a write,
 * which moves the generation), then answered as the other reads are: weak ETag, 304,
 * `private, no-cache`.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createHash } from 'node:crypto'
import { BoundedCache } from '../bounded-cache.ts'
import { ANY_SCOPE } from '../auth/authorize.ts'
import type { SitesBody } from '../contract/sites.ts'
import { sendRevalidatedJson } from './revalidated-json.ts'
import { SITES_PATH, type Caller, type RequestContext, type Route } from './route.ts'

export interface SitesDeps {
  /** Since when (epoch ms) `companyId` has held `siteId` without a break; undefined when it does not hold it now. */
  heldSince(companyId: string, siteId: string): number | undefined
}

interface Answer { readonly generation: number; readonly perimeter: Caller['perimeter']; readonly body: string; readonly etag: string }

/** Companies whose answer is kept (a clear-all cache: `bounded-cache.ts`). */
const ANSWERS = 256

export function sitesRoute (deps: SitesDeps): Route {
  const answers = new BoundedCache<string, Answer>(ANSWERS)

  const answerOf = (caller: Caller, generation: number): Answer => {
    const kept = answers.get(caller.companyId)
    if (kept && kept.generation === generation && kept.perimeter === caller.perimeter) return kept
    const body = JSON.stringify(sitesOf(deps, caller))
    const made = { generation, perimeter: caller.perimeter, body, etag: `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }
    answers.set(caller.companyId, made)
    return made
  }

  const serve = (head: boolean) => (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
    const answer = answerOf(ctx.caller, ctx.generation)
    sendRevalidatedJson(req, res, answer.body, answer.etag, head)
  }
  return {
    path: SITES_PATH,
    door: 'outbound',
    scope: ANY_SCOPE,
    methods: { GET: serve(false), HEAD: serve(true) },
  }
}

/** The perimeter as the wire says it: its sites in order, each with its tenure's start when the history knows it. */
export function sitesOf (deps: SitesDeps, caller: Pick<Caller, 'companyId' | 'perimeter'>): SitesBody {
  if (caller.perimeter === 'all') return { perimeter: 'all', sites: [] }
  const sites = [...new Set(caller.perimeter)].sort().map(siteId => {
    const since = deps.heldSince(caller.companyId, siteId)
    return since === undefined ? { site_id: siteId } : { site_id: siteId, held_since: new Date(since).toISOString() }
  })
  return { perimeter: 'sites', sites }
}
