/**
 * GET/HEAD realise (docs/http-api.md "Programme against delivery", an extension of the
 * contract under the same base path): a site's day, programmed against delivered, slot by
 * slot (`apply/realisation.ts`). The outbound door's rules: problem+json errors, a site
 * outside the caller's perimeter answers exactly as one with nothing to compare (404), a
 * weak ETag of the body (a new meter value, a new ETag) and 304.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { EpxError } from '../errors.ts'
import { isPrm } from '../contract/ids.ts'
import { isCalendarDate } from '../contract/paris-day.ts'
import { inPerimeter } from '../auth/tenancy.ts'
import { realisation, realiseEtag, type RealisationDeps } from '../apply/realisation.ts'
import { sendRevalidatedJson } from './revalidated-json.ts'
import { REALISE_PATH, type RequestContext, type Route } from './route.ts'

export function realiseRoute (deps: RealisationDeps): Route {
  const serve = (head: boolean) => (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
    const { siteId, targetDate } = readQuery(ctx.url.searchParams)
    // Read before the perimeter check, so a store outage answers 503 for every site alike.
    const found = realisation(deps, targetDate, siteId, ctx.caller.companyId)
    if (!found || !inPerimeter(ctx.caller, siteId)) throw new EpxError('NOTHING_TO_COMPARE', [siteId, targetDate])
    const body = JSON.stringify(found)
    sendRevalidatedJson(req, res, body, realiseEtag(body), head)
  }
  return {
    path: REALISE_PATH,
    door: 'outbound',
    scope: 'outbound:realise',
    methods: { GET: serve(false), HEAD: serve(true) },
  }
}

/** Both parameters required, once each, as for besoins-agreges; every problem reported at once. */
function readQuery (q: URLSearchParams): { siteId: string; targetDate: string } {
  const details: Record<string, string> = {}
  const sites = q.getAll('site_id')
  const dates = q.getAll('target_date')
  if (sites.length !== 1) details.site_id = sites.length === 0 ? 'required' : 'must be given once'
  else if (!isPrm(sites[0]!)) details.site_id = 'must be PRM followed by 14 digits'
  if (dates.length !== 1) details.target_date = dates.length === 0 ? 'required' : 'must be given once'
  else if (!isCalendarDate(dates[0]!)) details.target_date = 'must be a calendar date YYYY-MM-DD'
  if (Object.keys(details).length) throw new EpxError('INVALID_QUERY', [Object.keys(details).join(', ')], { details })
  return { siteId: sites[0]!, targetDate: dates[0]! }
}
