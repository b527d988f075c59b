/**
 * GET/HEAD realise (docs/http-api.md "Programme against delivery", an extension of the
 * contract under the same base path): a site's day, programmed against delivered, slot by
 * slot (`apply/realisation.ts`). The outbound door's rules: problem+json errors, a site
 * outside the caller's perimeter answers exactly as one with nothing to compare (404), a
 * weak ETag of the body (a new meter value, a new ETag) and 304.
 *
 * The body and its ETag are made once per (caller's company, site, day) and kept while what
 * they were made from is still what is stored: the effective instruction's record and the
 * day's meter values, compared byte for byte on each request (two reads of one record each,
 * in the same read snapshot as the answer). A repeated GET then costs what a Besoins_Agreges
 * GET does, its bytes made beforehand (bench/README.md#programme-against-delivery).
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { EpxError } from '../errors.ts'
import { isPrm } from '../contract/ids.ts'
import { isCalendarDate, parisDayMs } from '../contract/paris-day.ts'
import { inPerimeter } from '../auth/tenancy.ts'
import { BoundedCache } from '../bounded-cache.ts'
import { realisation, realiseEtag, type RealisationDeps } from '../apply/realisation.ts'
import type { Instructions } from '../store/instructions.ts'
import type { Metering } from '../store/metering.ts'
import { sendRevalidatedJson } from './revalidated-json.ts'
import { REALISE_PATH, type RequestContext, type Route } from './route.ts'

export interface RealiseDeps extends RealisationDeps {
  readonly instructions: RealisationDeps['instructions'] & Pick<Instructions, 'effectiveRecord' | 'effectiveUnchanged'>
  readonly metering: Pick<Metering, 'get' | 'unchanged'>
}

/** An answer as served, and what it was made from. */
interface Answer {
  /** The effective instruction and its record (a copy), undefined without one. */
  readonly instruction: { readonly instructionId: string; readonly bytes: Uint8Array } | undefined
  /** The day's meter values, undefined without any. */
  readonly kwh: Float64Array | undefined
  /** Which quarter-hours the company held (`heldKey`): a change of hands is a new answer. */
  readonly held: string
  /**
   * The store generation `held` was read at: every change of tenure is written with a
   * company's record, which bumps it (store/generation.ts), so while it stands `held` does
   * too, and a repeated GET does not replay the tenure history.
   */
  readonly generation: number
  /** The JSON's bytes; undefined: nothing to compare (404). */
  readonly body: Buffer | undefined
  readonly etag: string
}

/**
 * Answers kept: a clear-all cache (`bounded-cache.ts`), at most ~10 MB of bodies (a day of
 * 96 quarter-hours is ~17 KB); a BSP polls the sites of today and yesterday.
 */
const ANSWERS = 512

export function realiseRoute (deps: RealiseDeps): Route {
  const answers = new BoundedCache<string, Answer>(ANSWERS)

  const answerOf = (targetDate: string, siteId: string, companyId: string, generation: number): Answer => {
    const key = `${companyId} ${siteId} ${targetDate}`
    // Read before the perimeter check, so a store outage answers 503 for every site alike.
    const kept = answers.get(key)
    const held = kept?.generation === generation ? kept.held : heldKey(deps, targetDate, siteId, companyId)
    // Every change of what is in force changes the effective instruction (in-force.ts): that check covers the timeline.
    if (kept && deps.instructions.effectiveUnchanged(targetDate, siteId, kept.instruction) && deps.metering.unchanged(targetDate, siteId, kept.kwh) && kept.held === held) return kept
    const effective = deps.instructions.effectiveRecord(targetDate, siteId)
    const instruction = effective && { instructionId: effective.instructionId, bytes: Uint8Array.prototype.slice.call(effective.bytes) }
    const kwh = deps.metering.get(targetDate, siteId)?.kwh
    const found = realisation(deps, targetDate, siteId, companyId)
    const json = found && JSON.stringify(found)
    const made: Answer = { instruction, kwh, held, generation, body: json === undefined ? undefined : Buffer.from(json), etag: json ? realiseEtag(json) : '' }
    answers.set(key, made)
    return made
  }

  const serve = (head: boolean) => (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
    // A BSP polls the same few targets: a valid one is parsed once (the answer depends on the target alone).
    const { siteId, targetDate } = validQueries.getOrCompute(req.url ?? '', parseQuery, ctx)
    const answer = answerOf(targetDate, siteId, ctx.caller.companyId, ctx.generation)
    // With tenure, the company's day is the quarter-hours it held (DECISIONS.md "In force, quarter-hour by
    // quarter-hour"), whatever its perimeter is now; without, its perimeter decides.
    if (answer.body === undefined || (!deps.holders && !inPerimeter(ctx.caller, siteId))) throw new EpxError('NOTHING_TO_COMPARE', [siteId, targetDate])
    sendRevalidatedJson(req, res, answer.body, answer.etag, head)
  }
  return {
    path: REALISE_PATH,
    door: 'outbound',
    scope: 'outbound:realise',
    methods: { GET: serve(false), HEAD: serve(true) },
  }
}

/** The company's tenure of the site over the day, as a string; empty without tenure (`RealisationDeps.holders`). */
function heldKey (deps: RealiseDeps, targetDate: string, siteId: string, companyId: string): string {
  if (!deps.holders) return ''
  const { startMs, endMs } = parisDayMs(targetDate)
  let key = ''
  for (const h of deps.holders(siteId, startMs, endMs)) if (h.companyId === companyId) key += `${h.fromMs}-${h.untilMs},`
  return key
}

const validQueries = new BoundedCache<string, { siteId: string; targetDate: string }>(1024)

/** Both parameters required, once each, as for besoins-agreges; every problem reported at once. */
function parseQuery (_target: string, ctx: RequestContext): { siteId: string; targetDate: string } {
  const q = ctx.url.searchParams
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
