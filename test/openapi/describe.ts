/**
 * The OpenAPI 3.1 description of the API, built from what the door uses: the schemas of
 * src/contract/ (published-schemas.ts), the statuses of the error catalogue, and the
 * headers and bodies of real runs (record.ts). Which headers a response carries, and
 * the values that never vary (Cache-Control, Retry-After, nosniff), are read from the
 * recorded responses, so the description says what the door really sends.
 * @module
 */
import { catalogue, DOOR_CODES, EpxError, problemCodeOf, type ErrorCode, type ErrorSpec } from '../../src/errors.ts'
import { renderError } from '../../src/http/render-error.ts'
import { EVENTS_PATH, INBOUND_PATH, OUTBOUND_PATH, REALISE_PATH, SITES_PATH, type Door } from '../../src/http/route.ts'
import {
  besoinsAgregesJsonSchema, inboundErrorJsonSchema, JSON_SCHEMA_DIALECT, problemJsonSchema, programmeSoutirageJsonSchema,
  programmeStatusJsonSchema, realiseJsonSchema, receiptJsonSchema, sitesJsonSchema, type JsonSchema,
} from '../../src/contract/published-schemas.ts'
import { ERRORS_PATH, problemSlugs } from '../../src/http/error-pages.ts'
import { EXAMPLE_BASE_URL, type Recorded } from './record.ts'
import { describeWebhooks } from './webhooks.ts'
import { API_DESCRIPTION, EVENTS_DESCRIPTION, HEADER_SPECS, INBOUND_DESCRIPTION, MTLS_DESCRIPTION, BEARER_DESCRIPTION, PAGE_DESCRIPTION, REALISE_DESCRIPTION, SITES_DESCRIPTION, STATUS_DESCRIPTION } from './texts.ts'

export const SCHEMA_FILES = { besoins: 'schemas/besoins-agreges.json', programme: 'schemas/programme-soutirage.json' } as const

/** An operation's kind: the two of the contract, and the status read (an extension, rendered by the inbound door). */
type Kind = keyof typeof DOOR_CODES
const doorOf = (kind: Kind): Door => kind === 'outbound' || kind === 'realise' || kind === 'sites' || kind === 'evenements' ? 'outbound' : 'inbound'
/** The scope each kind's token needs; none for the perimeter read (any token of the company). */
const SCOPE_OF: Record<Kind, string | undefined> = { outbound: 'outbound:besoins-agreges', inbound: 'inbound:programme-soutirage', status: 'inbound:programme-soutirage', realise: 'outbound:realise', evenements: 'outbound:evenements', sites: undefined }
const statusOf = (code: ErrorCode): number => (catalogue[code] as { status: number }).status

/** The service's terms are its operator's (package.json: UNLICENSED): no open licence is granted. */
const LICENSE = { name: 'Proprietary: used under the agreement between the service operator and your company', identifier: 'LicenseRef-Proprietary' }

export interface Described {
  readonly document: JsonSchema
  readonly schemas: Readonly<Record<string, JsonSchema>>
}

export function describeApi (recorded: readonly Recorded[], opts: { version: string; maxSites: number }): Described {
  const of = (op: Recorded['operation']) => recorded.filter(r => r.operation === op)
  const get = operation('outbound', of('GET'), { head: false })
  const webhooks = describeWebhooks(of('GET evenements'))
  const document = {
    openapi: '3.1.0',
    jsonSchemaDialect: JSON_SCHEMA_DIALECT,
    info: { title: 'epx, the Energy Programs eXchange API', version: opts.version, description: API_DESCRIPTION, license: LICENSE },
    servers: [{ url: 'https://{host}', description: 'The service\'s API listener (mutual TLS)', variables: { host: { default: 'epx.example.com:8443' } } }],
    tags: [
      { name: 'outbound', description: 'Besoins_Agreges, published by the service, pulled by the BSP' },
      { name: 'inbound', description: 'Programme_Soutirage, sent by the BSP' },
      webhooks.tag,
    ],
    paths: {
      [OUTBOUND_PATH]: {
        get: { operationId: 'getBesoinsAgreges', summary: 'The latest Besoins_Agreges of a site and day', ...get },
        head: { operationId: 'headBesoinsAgreges', summary: 'The headers GET would send (validators), without the body', ...operation('outbound', [...of('HEAD'), ...of('GET').filter(r => r.status !== 200)], { head: true }) },
      },
      [INBOUND_PATH]: {
        post: { operationId: 'postProgrammeSoutirage', summary: 'Send a Programme_Soutirage (one instruction per site)', description: INBOUND_DESCRIPTION, ...operation('inbound', of('POST'), { head: false }) },
        get: {
          operationId: 'getProgrammeSoutirageStatus',
          summary: 'What became of your programmes for a day (extension of the contract)',
          description: STATUS_DESCRIPTION,
          'x-epx-extension': true,
          ...operation('status', of('GET status'), { head: false }),
        },
        head: {
          operationId: 'headProgrammeSoutirageStatus',
          summary: 'The headers the status read would send, without the body (extension of the contract)',
          'x-epx-extension': true,
          ...operation('status', [...of('HEAD status'), ...of('GET status').filter(r => r.status !== 200)], { head: true }),
        },
      },
      [REALISE_PATH]: {
        get: {
          operationId: 'getRealise',
          summary: 'Programmed against delivered, slot by slot, for a site and day (extension of the contract)',
          description: REALISE_DESCRIPTION,
          'x-epx-extension': true,
          ...operation('realise', of('GET realise'), { head: false }),
        },
        head: {
          operationId: 'headRealise',
          summary: 'The headers the realise read would send, without the body (extension of the contract)',
          'x-epx-extension': true,
          ...operation('realise', [...of('HEAD realise'), ...of('GET realise').filter(r => r.status !== 200)], { head: true }),
        },
      },
      [EVENTS_PATH]: {
        get: {
          operationId: 'getEvenements',
          summary: 'What changed for your company since a cursor, waiting for it if asked (extension of the contract)',
          description: EVENTS_DESCRIPTION,
          'x-epx-extension': true,
          ...operation('evenements', of('GET evenements'), { head: false }),
        },
      },
      [SITES_PATH]: {
        get: {
          operationId: 'getSites',
          summary: 'Your company\'s perimeter: its sites, and since when it holds each (extension of the contract)',
          description: SITES_DESCRIPTION,
          'x-epx-extension': true,
          ...operation('sites', of('GET sites'), { head: false }),
        },
        head: {
          operationId: 'headSites',
          summary: 'The headers the perimeter read would send, without the body (extension of the contract)',
          'x-epx-extension': true,
          ...operation('sites', [...of('HEAD sites'), ...of('GET sites').filter(r => r.status !== 200)], { head: true }),
        },
      },
      [`${ERRORS_PATH}{slug}`]: {
        get: { operationId: 'getProblemType', summary: 'The page of a problem type: what it means and what to do, in English and in French', description: PAGE_DESCRIPTION, ...page(of('GET page'), false) },
        head: { operationId: 'headProblemType', summary: 'The headers of a problem type\'s page, without the body', ...page(of('HEAD page'), true) },
      },
    },
    webhooks: webhooks.webhooks,
    components: {
      schemas: {
        Receipt: receiptJsonSchema(),
        ProgrammeStatus: programmeStatusJsonSchema(),
        Realise: realiseJsonSchema(),
        Sites: sitesJsonSchema(),
        ...webhooks.schemas,
        InboundError: inboundErrorJsonSchema([...DOOR_CODES.inbound, 'INVALID_QUERY', 'METHOD_NOT_ALLOWED']),
        Problem: problemJsonSchema(),
      },
      responses: {
        UnknownPath: otherResponse('outbound', of('other'), 404, 'UNKNOWN_PATH'),
        MethodNotAllowedOutbound: otherResponse('outbound', of('other').filter(r => r.request.path.startsWith(OUTBOUND_PATH)), 405, 'METHOD_NOT_ALLOWED'),
        MethodNotAllowedInbound: otherResponse('inbound', of('other').filter(r => r.request.path.startsWith(INBOUND_PATH)), 405, 'METHOD_NOT_ALLOWED'),
        MethodNotAllowedRealise: otherResponse('outbound', of('other').filter(r => r.request.path.startsWith(REALISE_PATH)), 405, 'METHOD_NOT_ALLOWED'),
        MethodNotAllowedSites: otherResponse('outbound', of('other').filter(r => r.request.path.startsWith(SITES_PATH)), 405, 'METHOD_NOT_ALLOWED'),
        MethodNotAllowedPage: otherResponse('outbound', of('other').filter(r => r.request.path.startsWith(ERRORS_PATH)), 405, 'METHOD_NOT_ALLOWED'),
        MethodNotAllowedEvenements: otherResponse('outbound', of('other').filter(r => r.request.path.startsWith(EVENTS_PATH)), 405, 'METHOD_NOT_ALLOWED'),
      },
      securitySchemes: {
        mutualTLS: { type: 'mutualTLS', description: MTLS_DESCRIPTION },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'epx_ followed by 43 base64url characters', description: BEARER_DESCRIPTION },
      },
    },
  }
  return {
    document: document as unknown as JsonSchema,
    schemas: {
      [SCHEMA_FILES.besoins]: besoinsAgregesJsonSchema(),
      [SCHEMA_FILES.programme]: programmeSoutirageJsonSchema({ maxSites: opts.maxSites }),
    },
  }
}

function operation (kind: Kind, recorded: readonly Recorded[], o: { head: boolean }) {
  const door = doorOf(kind)
  const scope = SCOPE_OF[kind]
  const responses: Record<string, unknown> = {}
  // Every operation can meet the door's answers to a method its path does not serve (405)
  // and, where the operation has no 404 of its own, to a wrong path (a base URL or version
  // segment mistyped: 404 UNKNOWN_PATH): they are responses of the operation, so a generated
  // client knows their body. (GET besoins-agreges' 404 is NOT_PUBLISHED, with its Retry-After.)
  const kindCodes: readonly ErrorCode[] = DOOR_CODES[kind]
  const statuses = new Set([...recorded.map(r => r.status), ...kindCodes.map(statusOf), statusOf('UNKNOWN_PATH'), statusOf('METHOD_NOT_ALLOWED')])
  for (const status of [...statuses].sort()) {
    const codes = kindCodes.filter(c => statusOf(c) === status)
    const seen = recorded.filter(r => r.status === status)
    responses[String(status)] = status === statusOf('METHOD_NOT_ALLOWED') && codes.length === 0
      ? { $ref: `#/components/responses/MethodNotAllowed${kind === 'realise' ? 'Realise' : kind === 'sites' ? 'Sites' : kind === 'evenements' ? 'Evenements' : door === 'outbound' ? 'Outbound' : 'Inbound'}` }
      : status === statusOf('UNKNOWN_PATH') && codes.length === 0 && seen.length === 0
        ? { $ref: '#/components/responses/UnknownPath' }
        : response(kind, status, codes, seen.length ? seen : rendered(door, codes), o.head)
  }
  const parameters = kind === 'status'
    ? [
        { name: 'target_date', in: 'query', required: true, description: 'The Europe/Paris day, YYYY-MM-DD', schema: { type: 'string', format: 'date' }, example: '2026-11-22' },
        { name: 'site_id', in: 'query', required: false, description: 'Only this site (PRM followed by 14 digits); a site outside your perimeter answers as one with no instruction', schema: { type: 'string', pattern: '^PRM[0-9]{14}$' }, example: 'PRM30000000000001' },
        { name: 'If-None-Match', in: 'header', required: false, description: 'The ETag last received for this query: 304 when no status changed.', schema: { type: 'string' } },
      ]
    : kind === 'evenements'
    ? [
        { name: 'apres', in: 'query', required: false, description: 'The cursor: an event id (`id`, or `suivant` of the last answer). Absent: from the oldest event kept.', schema: { type: 'string', pattern: '^[0-9]{1,15}$' }, example: '000000000000042' },
        { name: 'limite', in: 'query', required: false, description: 'At most this many events (1 to 1000, default 100).', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
        { name: 'attente', in: 'query', required: false, description: 'With nothing to give, wait up to this many seconds (0 to 30, default 0) for an event: the answer goes as soon as one is written.', schema: { type: 'integer', minimum: 0, maximum: 30, default: 0 } },
      ]
    : kind === 'realise'
    ? [
        { name: 'site_id', in: 'query', required: true, description: 'The site, PRM followed by 14 digits', schema: { type: 'string', pattern: '^PRM[0-9]{14}$' }, example: 'PRM30000000000001' },
        { name: 'target_date', in: 'query', required: true, description: 'The Europe/Paris day, YYYY-MM-DD', schema: { type: 'string', format: 'date' }, example: '2026-11-22' },
        { name: 'If-None-Match', in: 'header', required: false, description: 'The ETag last received for this site and day: 304 when no programme and no meter value changed.', schema: { type: 'string' } },
      ]
    : kind === 'sites'
    ? [
        { name: 'If-None-Match', in: 'header', required: false, description: 'The ETag last received: 304 while your perimeter is unchanged.', schema: { type: 'string' } },
      ]
    : door === 'outbound'
    ? [
        { name: 'site_id', in: 'query', required: true, description: 'The site, PRM followed by 14 digits', schema: { type: 'string', pattern: '^PRM[0-9]{14}$' }, example: 'PRM30000000000001' },
        { name: 'target_date', in: 'query', required: true, description: 'The Europe/Paris day, YYYY-MM-DD', schema: { type: 'string', format: 'date' }, example: '2026-11-22' },
        { name: 'If-None-Match', in: 'header', required: false, description: 'The ETag last received for this site and day: 304 when nothing changed. Wins over If-Modified-Since.', schema: { type: 'string' } },
        { name: 'If-Modified-Since', in: 'header', required: false, description: 'The Last-Modified last received (HTTP date, one-second resolution): 304 when nothing changed. Ignored when unparsable.', schema: { type: 'string' } },
      ]
    : []
  // The request's examples are the bodies the service accepted (the refused ones are in the responses' examples).
  const requestBody = kind === 'inbound'
    ? {
        required: true,
        description: 'Sent as `Content-Type: application/json` (parameters such as charset=utf-8 allowed); any other media type is refused with 415.',
        content: { 'application/json': { schema: { $ref: SCHEMA_FILES.programme }, examples: requestExamplesOf(recorded.filter(r => r.status === 202)) } },
      }
    : undefined
  return {
    tags: [door],
    security: [{ mutualTLS: [], bearer: scope === undefined ? [] : [scope] }],
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  }
}

/**
 * A problem type's page (`src/http/error-pages.ts`): no credentials (`security: []`), HTML,
 * one per slug of the catalogue; an unknown slug is an unknown path.
 */
function page (recorded: readonly Recorded[], head: boolean) {
  const ok = recorded.filter(r => r.status === 200)
  return {
    tags: ['outbound'],
    security: [],
    'x-epx-extension': true,
    parameters: [{ name: 'slug', in: 'path', required: true, description: 'The last segment of a problem\'s `type`', schema: { type: 'string', enum: [...problemSlugs().keys()] }, example: 'rate-limited' }],
    responses: {
      200: {
        description: 'The page: the status and title of the problem type, then each code that carries it, what it means and what to do, in English and in French.',
        headers: headersOf(ok, 200),
        ...(head ? {} : { content: { 'text/html': { schema: { type: 'string' } } } }),
      },
      404: { $ref: '#/components/responses/UnknownPath' },
      405: { $ref: '#/components/responses/MethodNotAllowedPage' },
    },
  }
}

/** A response of a status: its headers (from the runs), its body schema, its examples. */
function response (kind: Kind, status: number, codes: readonly ErrorCode[], seen: readonly Recorded[], head: boolean) {
  const door = doorOf(kind)
  const lines = codes.map(c => `- \`${door === 'outbound' ? problemCodeOf(c) : c}\`: ${(catalogue[c] as ErrorSpec).help?.en ?? ''}`)
  const description = status === 200 ? (kind === 'status'
    ? 'Your company\'s instructions for the day, newest first. Keep the ETag and send it as If-None-Match on the next read.'
    : kind === 'realise' ? 'The day, every quarter-hour, programmed against delivered. Keep the ETag and send it as If-None-Match on the next read.'
    : kind === 'sites' ? 'Your company\'s sites, in site order. Keep the ETag and send it as If-None-Match on the next read.'
    : kind === 'evenements' ? 'Your events after the cursor, oldest first. Keep `suivant` and send it as `apres` on the next read.'
    : 'The latest revision. Keep ETag and Last-Modified for the next poll, and emitted_at for audit.')
    : status === 202 ? 'Persisted on disk. Each instruction says what will become of it: `queued` (applied at the next solver cycle), `superseded` (a later programme is in force) or `late` (a programme for today whose every period had begun before it was received: kept, never applied). `message` sums it up and never says "will be applied" of what will not be.'
      : status === 304 ? 'Nothing new since the ETag (or date) you sent. No body; the validators are repeated.'
        : lines.join('\n')
  const media = seen.map(r => (r.headers['content-type'] ?? '').split(';')[0]!).find(Boolean)
  const schema = status === 200 ? (kind === 'status' ? { $ref: '#/components/schemas/ProgrammeStatus' } : kind === 'realise' ? { $ref: '#/components/schemas/Realise' } : kind === 'evenements' ? { $ref: '#/components/schemas/Evenements' } : kind === 'sites' ? { $ref: '#/components/schemas/Sites' } : { $ref: SCHEMA_FILES.besoins })
    : status === 202 ? { $ref: '#/components/schemas/Receipt' }
      // message and details named again: linters that close each branch of an allOf (Redocly's
      // example check) would otherwise read them as properties the branch does not allow.
      : door === 'inbound' ? errorSchema('#/components/schemas/InboundError', { properties: { error: { properties: { code: { enum: codes }, message: true, details: true } } } })
        : errorSchema('#/components/schemas/Problem', {
          properties: { status: { const: status }, code: { enum: codes.map(problemCodeOf) } },
          required: status === 400 ? ['code', 'invalid_params'] : ['code'],
        })
  return {
    description,
    headers: headersOf(seen, status),
    ...(media && !head && status !== 304 ? { content: { [media]: { schema, examples: examplesOf(seen, 'response') } } } : {}),
  }
}

function errorSchema (ref: string, narrow: Record<string, unknown>) {
  return { allOf: [{ $ref: ref }, narrow] }
}

/** The headers a status carries in the runs; required when every run had it. */
function headersOf (seen: readonly Recorded[], status: number): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(HEADER_SPECS)) {
    const values = seen.map(r => r.headers[name.toLowerCase()]).filter((v): v is string => v !== undefined)
    if (values.length === 0) continue
    const same = values.every(v => v === values[0])
    out[name] = {
      description: spec.description,
      required: values.length === seen.length,
      // A 429's Retry-After is the time until the company's budget has a request again: no constant.
      schema: same && !spec.varies && !(status === 429 && name === 'Retry-After') ? { type: 'string', const: values[0] } : { type: 'string', pattern: spec.pattern },
      example: values[0],
    }
  }
  return out
}

function requestExamplesOf (accepted: readonly Recorded[]): Record<string, unknown> {
  return Object.fromEntries(accepted.map(r => [r.requestName ?? r.name, { summary: r.requestSummary ?? r.summary, value: r.request.body }]))
}

function examplesOf (seen: readonly Recorded[], side: 'request' | 'response'): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const r of seen) {
    const request = `${r.request.method} ${r.request.path}` +
      Object.entries(r.request.headers).map(([k, v]) => `, ${k}: ${v}`).join('')
    const value = side === 'request' ? r.request.body : r.body
    const recorded = side === 'response' && r.request.method !== '-'
    if (value !== undefined) out[r.name] = { summary: r.summary, ...(recorded ? { description: `Recorded answer to ${request}` } : {}), value }
  }
  return out
}

/**
 * Unknown path (404, problem+json) and a method a path does not serve (405, in the
 * format of the path's door): each operation lists the latter as its 405.
 */
function otherResponse (door: Door, seen: readonly Recorded[], status: number, code: ErrorCode) {
  return response(door, status, [code], seen.filter(r => r.status === status), false)
}

/** The door's own rendering of codes no run produced (500): example marked as such. */
function rendered (door: Door, codes: readonly ErrorCode[]): Recorded[] {
  return codes.map(code => {
    const r = renderError(new EpxError(code, []), door, EXAMPLE_BASE_URL)
    const headers = Object.fromEntries(Object.entries(r.headers).filter(([k]) => k !== 'content-length'))
    return {
      operation: 'other', name: code.toLowerCase(), summary: `${code}, as the door renders it (no recorded run produces it)`,
      request: { method: '-', path: '-', headers: {} }, status: r.status, headers, body: JSON.parse(r.body),
    }
  })
}
