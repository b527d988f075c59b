/**
 * The prose of the description: what a BSP developer reads next to each status and
 * header. What the API does comes from the door (describe.ts); what to do about each error, from
 * the catalogue (`src/errors.ts` `help`).
 * @module
 */
export const API_DESCRIPTION = [
  'The BSP-facing API of epx: pull the Besoins_Agreges the service publishes (GET), send a Programme_Soutirage (POST).',
  '',
  'Every call needs both a client certificate (mutual TLS) and `Authorization: Bearer <token>` with the endpoint\'s scope.',
  'Every instant is ISO 8601 UTC ending in Z; a target_date is a Europe/Paris day (92, 96 or 100 quarter-hours).',
  '',
  'Polling (outbound): make the day\'s first attempt at about 08:30 Europe/Paris (publication is at 08:00, Fridays also for the weekend);',
  'keep the ETag per (site_id, target_date) and send it as If-None-Match: 304 means nothing new.',
  'After a 404 wait Retry-After (300 s) at least; after a 503 wait Retry-After (5 s), with jitter.',
  '',
  'Request budgets (an extension of the contract): per company, GET and HEAD requests share one token bucket (default 50 a second, bursts of 500),',
  'POST requests have their own (default 5 a second, bursts of 20). Every answer to an authenticated call carries RateLimit-Policy and RateLimit',
  '(draft-ietf-httpapi-ratelimit-headers: r requests left, t seconds until the budget is whole again). Over budget: 429 RATE_LIMITED',
  '(problem rate-limited on the outbound paths) with Retry-After in seconds; a POST is refused before its body is read. Wait Retry-After, then pace by RateLimit.',
  'Storage quota (an extension of the contract): the bytes of programmes your company may have accepted in a Paris day (default 512 MiB).',
  'A programme that would cross it is refused whole: 429 QUOTA_EXCEEDED, whose message says the quota, today\'s use and when it resets, with',
  'Retry-After in seconds until 00:00 in Paris. Do not retry before Retry-After: every programme until then gets the same answer.',
  '',
  'Errors: outbound errors are application/problem+json (RFC 9457); inbound errors are {"error": {code, message, details}}',
  'where details maps RFC 6901 JSON Pointers into your body to what to fix.',
  '',
  'Reading outcomes (an extension of the contract, marked x-epx-extension): GET programme-soutirage?target_date=D[&site_id=S] answers',
  'what became of your company\'s instructions for a day (queued, applied with its cycle, superseded, withdrawn), with its ETag for 304.',
  'GET sites answers your company\'s perimeter (its sites, since when it holds each), with any of its tokens.',
  'GET evenements answers what changed for your company since a cursor; the same events are POSTed to the https endpoints your company registered (`webhooks`).',
  'A problem\'s `type`, {base_url}/errors/<slug>, answers a page saying what the error means and what to do (no credentials needed).',
  '',
  'The JSON Schemas of the two documents are files beside this description (schemas/). The guide for BSP developers is docs/bsp-guide.md.',
].join('\n')

/**
 * POST programme-soutirage: every refusal of DECISIONS.md "Inbound", what the schema
 * alone cannot say (rules between fields, the server's clock and settings, its sites).
 */
export const INBOUND_DESCRIPTION = [
  'Refused as a whole, nothing stored: 400 INVALID_PROGRAMME_SOUTIRAGE_REQUEST, every problem at once in `error.details` (at most 100),',
  'keyed by the RFC 6901 JSON Pointer of the field (`""`: the body as a whole). The rules:',
  '',
  '- the body is not JSON, or not an object (`""`);',
  '- `schema_version` missing or not `v0.2`; `type` not `programme_soutirage`; `emitted_by` empty; `emitted_at` not a UTC instant ending in Z;',
  '  `target_date` not a real calendar date YYYY-MM-DD; `slot_duration_secs` not a positive multiple of 900, or above 90000;',
  '- `sites` missing or empty, or more sites than the service allows (default 5000); a `site_id` not PRM followed by 14 digits, or twice;',
  '  a site outside your company\'s perimeter; a site the service\'s solver does not manage, whatever the perimeter (`/sites/N/site_id`);',
  '- a slot whose `debut_utc`/`fin_utc` is not on a 900 s boundary, whose length is not `slot_duration_secs`, outside the Europe/Paris',
  '  target day, out of order or overlapping ("slots not contiguous"); gaps too where the service requires contiguous slots',
  '  (`inbound.requireContiguous`; by default an absent slot is "no constraint"); `energie_kwh` missing, not a finite number, or negative;',
  '  a slot whose power (energie_kwh x 3600 / slot_duration_secs) exceeds the service\'s bound (`inbound.maxSiteKw`, default 100,000 kW);',
  '- what could never be honoured: `emitted_at` more than `inbound.maxClockSkewSeconds` (default 300 s) ahead of the service\'s clock',
  '  (the message gives the service\'s time: a future emitted_at would outrank every later, correct revision of its sites and day);',
  '  `target_date` before today in Europe/Paris ("the day is over") or after today + `inbound.maxDaysAhead` (default 7 days; the message',
  '  names the last day accepted). Today is accepted (an intraday correction): its periods already over are kept but not fed to the solver.',
  '',
  'Also: 415 UNSUPPORTED_MEDIA_TYPE when Content-Type is not application/json; 413 PAYLOAD_TOO_LARGE over the body limit (default 10 MiB).',
  'Unknown extra fields are ignored. An empty `energie_programmee` is valid: it clears any earlier constraint of that site and day.',
  'Re-sending the same (target_date, emitted_at) gives the same instruction ids and overwrites; the greatest emitted_at of a site and day is in force.',
].join('\n')

export const REALISE_DESCRIPTION = [
  'An extension of the contract (its two operations are unchanged): a site\'s day, every quarter-hour, the energy programmed by your instruction in force',
  'against the energy the site drew as its meter measured it, with a verdict per slot and the day\'s totals. Meter values arrive as quarter-hours close, and late ones or corrections',
  'replace earlier values: send the ETag back as If-None-Match, 304 while nothing changed. Scope outbound:realise.',
  'A site outside your perimeter, or a day with neither your programme nor a meter value, answers 404 NOTHING_TO_COMPARE. Errors are problem+json, as for besoins-agreges.',
].join(' ')

export const SITES_DESCRIPTION = [
  'An extension of the contract (its two operations are unchanged): the sites of your company\'s perimeter, the ones you may pull and program, in site order,',
  'each with `held_since`, since when your company has held it without a break (UTC). Never a site outside your perimeter: it says nothing of which other sites exist.',
  'Any token of your company may read it, whatever its scopes (no scope is needed); the same certificate checks apply.',
  'A perimeter of every site the service manages answers `perimeter: "all"` and an empty list.',
  'Send the ETag back as If-None-Match: 304 while your perimeter is unchanged. Errors are problem+json, as for besoins-agreges.',
].join(' ')

export const PAGE_DESCRIPTION = [
  'A problem\'s `type` is `{base_url}/errors/<slug>`, `{base_url}` being the service\'s public base URL (its `api.publicBaseUrl`): dereferenced, it answers',
  'this page, for a person reading a log or a problem (RFC 9457 §3.1.1). No token and no client certificate are needed: the page is documentation, nobody\'s data.',
  'Branch on the problem\'s `code`, never on this page or on its `type`.',
].join(' ')

export const EVENTS_DESCRIPTION = [
  'An extension of the contract (its two operations are unchanged), so that a BSP need not poll: what changed for your company, as events, oldest first. A Besoins_Agreges',
  'of your perimeter published (`besoins_agreges.publie`), one of your instructions changing status (`instruction.statut`), a quarter-hour you may read in GET realise changed',
  '(`realise.modifie`), your perimeter changed (`perimetre.modifie`). Keep `suivant` and send it as `apres`; with `attente` an answer with nothing to give waits up to that many',
  'seconds and goes as soon as an event is written. Events are kept a few days (events.retentionDays, 7 by default): an older cursor answers 410 CURSOR_EXPIRED, and you read',
  'the state again (besoins-agreges, the status read, realise) before going on from its `suivant`. Scope outbound:evenements. Errors are problem+json, as for besoins-agreges.',
].join(' ')

/** A secret the example deliveries are signed under (docs/bsp-guide.md shows one signed under it too). */
export const EXAMPLE_WEBHOOK_SECRET = 'whsec_Mdt8zQ+Xk0wR3bNcY6fHq2LvJp9sT1aE'

export const WEBHOOK_DESCRIPTION = [
  'An extension of the contract: the events of GET evenements, each POSTed as it happens to the https endpoints your company registered for its type (web console, or',
  'the operator\'s `epx webhook add COMPANY URL`), following Standard Webhooks 1.0. Verify before trusting: the three headers present, `webhook-timestamp` within 5 minutes',
  'of your clock, and one `v1` signature of `webhook-signature` equal, compared in constant time, to yours; refuse anything else with 401. At least once: a 2xx answer is',
  'a delivery, anything else is sent again, so deduplicate by `webhook-id`. Per endpoint, events come one at a time, in id order. After 24 h of failed attempts the endpoint',
  'is marked failing; read the feed from the last id you handled (`apres`) to catch up.',
].join(' ')

export const WEBHOOK_CHECK_DESCRIPTION = [
  'When an endpoint is registered, the service sends it `GET <url>?echo=<random value>`, with no signature; the endpoint must answer 200 with that value as its whole body.',
  'The endpoint\'s secret (`whsec_` followed by base64) is then shown once.',
].join(' ')

export const STATUS_DESCRIPTION = [
  'An extension of the contract (its two operations are unchanged): your company\'s instructions for target_date, newest first,',
  'each with its status: `received` (stored; a late one, every period begun before it was received, stays so and is never applied), `queued` (handed to the solver for its next cycle), `applied` (with `applied_at` and the solver `cycle`),',
  '`superseded` (a programme with a later emitted_at is in force; `superseded_by` names it when it is yours),',
  'or `withdrawn` (from `withdrawn_at`: the site left your perimeter, or the operator withdrew it, `not_in_force_reason`), `infeasible_slots`, and `in_force` (when it was the instruction in force, UTC) with `not_in_force_reason` when it is not (superseded, withdrawn, site-left-perimeter, late).',
  'Never another company\'s instructions, nor its name; a site you never programmed answers as one with none. Same certificate and token as POST (scope inbound:programme-soutirage).',
  'Send the ETag back as If-None-Match: 304 while nothing changed. Errors are in the inbound format, `error.details` naming each query parameter at fault.',
].join(' ')

export const MTLS_DESCRIPTION = 'A client certificate issued by the service\'s client CA and bound to your company (its subject, and its SHA-256 fingerprint where pinned). Without it, or with another one: 403 MTLS_REQUIRED.'

export const BEARER_DESCRIPTION = [
  'A token from the service (shown once at creation; keep it in a file or a secret store, never on a command line).',
  'Scopes: `outbound:besoins-agreges` for GET/HEAD besoins-agreges, `inbound:programme-soutirage` for POST (and the status read, GET/HEAD) programme-soutirage.',
  'Absent, unknown, expired or revoked: 401 with WWW-Authenticate. Without the scope: 403 SCOPE_DENIED.',
].join(' ')

/**
 * The headers the description documents, by their canonical name. `varies`: depends on
 * the revision, the request or the path, so it is described by its pattern, never as a constant.
 */
export const HEADER_SPECS: Readonly<Record<string, { description: string; pattern: string; varies?: boolean }>> = {
  ETag: { description: 'Weak validator of the revision; send it back as If-None-Match.', pattern: '^W/"[^"]*"$', varies: true },
  'Last-Modified': {
    description: 'emitted_at of the revision as an HTTP date; send it back as If-Modified-Since.',
    pattern: '^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$',
    varies: true,
  },
  'Cache-Control': { description: 'How long the answer may be reused without asking again.', pattern: '^.+$' },
  'Retry-After': { description: 'Seconds to wait at least before asking again.', pattern: '^[0-9]+$' },
  'WWW-Authenticate': { description: 'RFC 6750 Bearer challenge: what was wrong with the token (error=, scope=).', pattern: '^Bearer realm="[^"]*"', varies: true },
  Allow: { description: 'The methods this path serves.', pattern: '^[A-Z]+(, [A-Z]+)*$', varies: true },
  'RateLimit-Policy': { description: 'Your company\'s budget for this kind of request (draft-ietf-httpapi-ratelimit-headers): "get" (GET and HEAD) or "post", q requests at once, w seconds for an empty budget to fill again.', pattern: '^"(get|post)";q=[0-9]+;w=[0-9]+$', varies: true },
  RateLimit: { description: 'What is left of that budget: r requests now, t seconds until it is whole again.', pattern: '^"(get|post)";r=[0-9]+;t=[0-9]+$', varies: true },
  'X-Content-Type-Options': { description: 'The Content-Type is the truth; do not sniff.', pattern: '^nosniff$' },
}
