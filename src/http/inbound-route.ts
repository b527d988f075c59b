/**
 * POST programme-soutirage (contract §4.2) as HTTP, after the door's authentication
 * chain: the body's bytes (415/413) go to the use case (`apply/receive-programme.ts`);
 * its outcome comes back as a 202 with the contract's receipt, or as the catalogue error
 * it carries, which the door renders (`render-error.ts`). GET and HEAD on the same path
 * read back what became of the caller's programmes (DECISIONS.md "Reading outcomes", an
 * extension of the contract: `apply/programme-status.ts`).
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { serializeReceipt } from '../contract/compiled.ts'
import type { Inbound } from '../apply/receive-programme.ts'
import { programmeStatus, statusEtag, type StatusDeps } from '../apply/programme-status.ts'
import type { StorageQuota } from '../apply/quota.ts'
import { isPrm } from '../contract/ids.ts'
import { isCalendarDate } from '../contract/paris-day.ts'
import { EpxError } from '../errors.ts'
import { readJsonBody } from './body.ts'
import { sendRevalidatedJson } from './revalidated-json.ts'
import { INBOUND_PATH, NOSNIFF, type RequestContext, type Route, type RouteHandler } from './route.ts'

export interface InboundRouteDeps {
  /** `inbound.maxBodyBytes`. */
  readonly maxBodyBytes: number
  readonly inbound: Pick<Inbound, 'receive' | 'refusedAtDoor'>
  /** What the status read needs: the instructions and their feasibility flags. */
  readonly status: StatusDeps
  /** The storage quota: a POST that cannot fit is refused before its body is read (unset: none). */
  readonly quota?: Pick<StorageQuota, 'beforeBody'>
}

export function inboundRoute (deps: InboundRouteDeps): Route {
  const read = (head: boolean): RouteHandler => (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
    const { targetDate, siteId } = readStatusQuery(ctx.url.searchParams)
    const body = JSON.stringify(programmeStatus(deps.status, ctx.caller, targetDate, siteId))
    sendRevalidatedJson(req, res, body, statusEtag(body), head)
  }

  return {
    path: INBOUND_PATH,
    door: 'inbound',
    scope: 'inbound:programme-soutirage',
    methods: {
      GET: read(false),
      HEAD: read(true),
      async POST (req, res, { caller, receivedAt }) {
        // DECISIONS.md "Rate limits and quotas": a day used up, or a body announced too big for
        // what is left of it, is refused unread; the save's transaction decides the rest.
        deps.quota?.beforeBody(caller, declaredLength(req), receivedAt)
        let bytes: Buffer
        try {
          bytes = await readJsonBody(req, res, deps.maxBodyBytes)
        } catch (err) {
          deps.inbound.refusedAtDoor(err, caller, receivedAt)   // 415, 413, a body cut short: a refused programme too
          throw err
        }
        const outcome = await deps.inbound.receive(bytes, caller, receivedAt)
        if (!outcome.accepted) throw outcome.error
        const body = serializeReceipt(outcome.receipt)
        res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-content-type-options': NOSNIFF })
        res.end(body)
      },
    },
  }
}

/** The body's length as its Content-Length announces it; undefined when it does not (chunked). */
function declaredLength (req: IncomingMessage): number | undefined {
  const text = req.headers['content-length']
  return text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : undefined
}

/** `target_date` required, `site_id` optional, each at most once; other parameters are ignored. */
function readStatusQuery (q: URLSearchParams): { targetDate: string; siteId?: string } {
  const details: Record<string, string> = {}
  const dates = q.getAll('target_date')
  const sites = q.getAll('site_id')
  if (dates.length !== 1) details.target_date = dates.length === 0 ? 'required' : 'must be given once'
  else if (!isCalendarDate(dates[0]!)) details.target_date = 'must be a calendar date YYYY-MM-DD'
  if (sites.length > 1) details.site_id = 'must be given once'
  else if (sites.length === 1 && !isPrm(sites[0]!)) details.site_id = 'must be PRM followed by 14 digits'
  if (Object.keys(details).length) throw new EpxError('INVALID_QUERY', [Object.keys(details).join(', ')], { details })
  return { targetDate: dates[0]!, ...(sites.length ? { siteId: sites[0]! } : {}) }
}
