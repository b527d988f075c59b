/**
 * GET/HEAD besoins-agreges (contract §4.1, DECISIONS.md "Outbound"): the latest
 * revision of a (site_id, target_date) pair, with conditional requests. The door has
 * authenticated the caller. The bytes and the ETag were made at publication; a 304 is
 * answered from the small `latest` index without reading the document (bench/README.md#where-the-doors-thread-spends-a-get).
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { EpxError } from '../errors.ts'
import { BoundedCache } from '../bounded-cache.ts'
import { isPrm } from '../contract/ids.ts'
import { isCalendarDate } from '../contract/paris-day.ts'
import { inPerimeter } from '../auth/tenancy.ts'
import { LATEST_CACHED_PAIRS, pairKeyOf, type Revisions } from '../store/revisions.ts'
import type { Deliveries } from '../store/deliveries.ts'
import { isNotModified } from './conditional.ts'
import { NOSNIFF, OUTBOUND_PATH, type RequestContext, type Route } from './route.ts'

export interface OutboundDeps {
  readonly revisions: Revisions
  /** Delivery receipts (store/deliveries.ts): in memory, no store write on this path. */
  readonly receipts?: Pick<Deliveries, 'record'>
}

/** Contract §4.1 and §8: the cache lifetime the operator is told. */
const CACHE_CONTROL = 'private, max-age=60, must-revalidate'

export function outboundRoute (deps: OutboundDeps): Route {
  const { revisions } = deps

  const serve = (head: boolean) => (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
    const { siteId, targetDate, key } = readQuery(req.url ?? '', ctx)
    // Read before the perimeter check, so a store outage answers 503 for every site alike.
    const latest = revisions.latest(siteId, targetDate, ctx.generation, key)
    // DECISIONS.md "Outbound": outside the perimeter answers exactly as "not published".
    if (!latest || !inPerimeter(ctx.caller, siteId)) throw notPublished(siteId, targetDate)

    const conditional = { ifNoneMatch: req.headers['if-none-match'], ifModifiedSince: req.headers['if-modified-since'] }
    if (isNotModified(conditional, { etag: latest.etag, lastModifiedMs: latest.emittedAtMs })) {
      // RFC 9110 §15.4.5: a 304 repeats the validators and Cache-Control, no body.
      deps.receipts?.record(ctx.caller.companyId, siteId, targetDate, latest.emittedAtMs, 304, ctx.receivedAt.getTime(), key)
      res.writeHead(304, { etag: latest.etag, 'last-modified': latest.lastModified, 'cache-control': CACHE_CONTROL, 'x-content-type-options': NOSNIFF })
      res.end()
      return
    }
    const bytes = head ? undefined : revisions.bytesOf(latest)
    // Pruned between the two reads (retention): gone is gone.
    if (!head && !bytes) throw notPublished(siteId, targetDate)
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': latest.size,
      etag: latest.etag,
      'last-modified': latest.lastModified,
      'cache-control': CACHE_CONTROL,
      'x-content-type-options': NOSNIFF,
    })
    res.end(bytes)
    if (!head) deps.receipts?.record(ctx.caller.companyId, siteId, targetDate, latest.emittedAtMs, 200, ctx.receivedAt.getTime(), key)
  }

  return {
    path: OUTBOUND_PATH,
    door: 'outbound',
    scope: 'outbound:besoins-agreges',
    methods: { GET: serve(false), HEAD: serve(true) },
  }
}

/**
 * Both parameters required, once each; `site_id` PRM + 14 digits, `target_date` a
 * real date (DECISIONS.md "Outbound"). Every problem is reported at once, as
 * `invalid_params` by the door.
 */
function readQuery (target: string, ctx: RequestContext): Pair {
  // A BSP polls its sites again and again: a valid target is parsed once (the answer
  // depends on the target string alone), as many as the latest revisions' cache holds.
  return validQueries.getOrCompute(target, parseQuery, ctx)
}

/** A valid query; `key` (`pairKeyOf`) is made once with it, not at each of its requests. */
interface Pair { readonly siteId: string; readonly targetDate: string; readonly key: string }
const validQueries = new BoundedCache<string, Pair>(LATEST_CACHED_PAIRS)

function parseQuery (target: string, ctx: RequestContext): Pair {
  const q = ctx.url.searchParams
  const details: Record<string, string> = {}
  const siteId = readParam(q, details, 'site_id', isPrm, 'PRM followed by 14 digits')
  const targetDate = readParam(q, details, 'target_date', isCalendarDate, 'a calendar date YYYY-MM-DD')
  if (siteId === undefined || targetDate === undefined) {
    throw new EpxError('INVALID_QUERY', [Object.keys(details).join(', ')], { details })
  }
  return { siteId, targetDate, key: pairKeyOf(siteId, targetDate) }
}

// Module-level, not a closure per request: under tsx every nested function costs a
// `__name` call per creation, which showed in the GET profile.
// load-bearing: GET 200 and GET 304; no figure of its own (bench/README.md#where-the-doors-thread-spends-a-get)
function readParam (q: Pick<URLSearchParams, 'getAll'>, details: Record<string, string>, name: string,
  valid: (v: string) => boolean, shape: string): string | undefined {
  const all = q.getAll(name)
  if (all.length === 1 && valid(all[0]!)) return all[0]
  details[name] = all.length === 0 ? 'required' : all.length > 1 ? 'must be given once' : `must be ${shape}`
  return undefined
}

function notPublished (siteId: string, targetDate: string): EpxError {
  return new EpxError('NOT_PUBLISHED', [siteId, targetDate])   // with its Retry-After (errors.ts)
}
