/**
 * The OpenAPI 3.1 description of the API, built from what the door uses: the schemas of
 * src/contract/ (published-schemas.ts), the statuses of the error catalogue, and the
 * headers and bodies of real runs (record.ts). Which headers a response carries, and
 * the values that never vary (Cache-Control, Retry-After, nosniff), are read from the
 * recorded responses, so the description says what the door really sends.
 * @module
 */
import { catalogue, EpxError, type ErrorCode } from '../../src/errors.ts'
import { renderError } from '../../src/http/render-error.ts'
import { INBOUND_PATH, OUTBOUND_PATH, type Door } from '../../src/http/route.ts'
import {
  besoinsAgregesJsonSchema, inboundErrorJsonSchema, JSON_SCHEMA_DIALECT, problemJsonSchema, programmeSoutirageJsonSchema,
  receiptJsonSchema, type JsonSchema,
} from '../../src/contract/published-schemas.ts'
import { EXAMPLE_BASE_URL, type Recorded } from './record.ts'
import { ADVICE, API_DESCRIPTION, HEADER_SPECS, MTLS_DESCRIPTION, BEARER_DESCRIPTION } from './texts.ts'

export const SCHEMA_FILES = { besoins: 'schemas/besoins-agreges.json', programme: 'schemas/programme-soutirage.json' } as const

/** The codes each door can answer, in the catalogue's order. */
const DOOR_CODES: Record<Door, readonly ErrorCode[]> = {
  outbound: ['INVALID_QUERY', 'UNAUTHORIZED', 'MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'SCOPE_DENIED', 'NOT_PUBLISHED', 'NO_STORE', 'INTERNAL'],
  inbound: ['INVALID_PROGRAMME_SOUTIRAGE_REQUEST', 'UNAUTHORIZED', 'MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'SCOPE_DENIED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'NO_STORE', 'INTERNAL'],
}
const statusOf = (code: ErrorCode): number => (catalogue[code] as { status: number }).status

export interface Described {
  readonly document: JsonSchema
  readonly schemas: Readonly<Record<string, JsonSchema>>
}

export function describeApi (recorded: readonly Recorded[], opts: { version: string; maxSites: number }): Described {
  const of = (op: Recorded['operation']) => recorded.filter(r => r.operation === op)
  const get = operation('outbound', of('GET'), { head: false })
  const document = {
    openapi: '3.1.0',
    jsonSchemaDialect: JSON_SCHEMA_DIALECT,
    info: { title: 'epx, the Energy Programs eXchange API', version: opts.version, description: API_DESCRIPTION },
    servers: [{ url: 'https://{host}', description: 'The service\'s API listener (mutual TLS)', variables: { host: { default: 'epx.example.com:8443' } } }],
    tags: [
      { name: 'outbound', description: 'Besoins_Agreges, published by the service, pulled by the BSP' },
      { name: 'inbound', description: 'Programme_Soutirage, sent by the BSP' },
    ],
    paths: {
      [OUTBOUND_PATH]: {
        'x-other-methods': { $ref: '#/components/responses/MethodNotAllowedOutbound' },
        get: { operationId: 'getBesoinsAgreges', summary: 'The latest Besoins_Agreges of a site and day', ...get },
        head: { operationId: 'headBesoinsAgreges', summary: 'The headers GET would send (validators), without the body', ...operation('outbound', [...of('HEAD'), ...of('GET').filter(r => r.status !== 200)], { head: true }) },
      },
      [INBOUND_PATH]: {
        'x-other-methods': { $ref: '#/components/responses/MethodNotAllowedInbound' },
        post: { operationId: 'postProgrammeSoutirage', summary: 'Send a Programme_Soutirage (one instruction per site)', ...operation('inbound', of('POST'), { head: false }) },
      },
    },
    components: {
      schemas: {
        Receipt: receiptJsonSchema(),
        InboundError: inboundErrorJsonSchema([...DOOR_CODES.inbound, 'METHOD_NOT_ALLOWED']),
        Problem: problemJsonSchema(),
      },
      responses: {
        UnknownPath: otherResponse('outbound', of('other'), 404, 'NOT_FOUND'),
        MethodNotAllowedOutbound: otherResponse('outbound', of('other').filter(r => r.request.path.startsWith(OUTBOUND_PATH)), 405, 'METHOD_NOT_ALLOWED'),
        MethodNotAllowedInbound: otherResponse('inbound', of('other').filter(r => r.request.path.startsWith(INBOUND_PATH)), 405, 'METHOD_NOT_ALLOWED'),
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

function operation (door: Door, recorded: readonly Recorded[], o: { head: boolean }) {
  const scope = door === 'outbound' ? 'outbound:besoins-agreges' : 'inbound:programme-soutirage'
  const responses: Record<string, unknown> = {}
  const statuses = new Set([...recorded.map(r => r.status), ...DOOR_CODES[door].map(statusOf)])
  for (const status of [...statuses].sort()) {
    const codes = DOOR_CODES[door].filter(c => statusOf(c) === status)
    const seen = recorded.filter(r => r.status === status)
    responses[String(status)] = response(door, status, codes, seen.length ? seen : rendered(door, codes), o.head)
  }
  const parameters = door === 'outbound'
    ? [
        { name: 'site_id', in: 'query', required: true, description: 'The site, PRM followed by 14 digits', schema: { type: 'string', pattern: '^PRM[0-9]{14}$' }, example: 'PRM30000000000001' },
        { name: 'target_date', in: 'query', required: true, description: 'The Europe/Paris day, YYYY-MM-DD', schema: { type: 'string', format: 'date' }, example: '2026-11-22' },
        { name: 'If-None-Match', in: 'header', required: false, description: 'The ETag last received for this site and day: 304 when nothing changed. Wins over If-Modified-Since.', schema: { type: 'string' } },
        { name: 'If-Modified-Since', in: 'header', required: false, description: 'The Last-Modified last received (HTTP date, one-second resolution): 304 when nothing changed. Ignored when unparsable.', schema: { type: 'string' } },
      ]
    : [{ name: 'Content-Type', in: 'header', required: true, description: 'application/json (parameters such as charset=utf-8 allowed)', schema: { type: 'string', pattern: '^application/json' } }]
  const requestBody = door === 'inbound'
    ? {
        required: true,
        content: { 'application/json': { schema: { $ref: SCHEMA_FILES.programme }, examples: examplesOf(recorded.filter(r => r.request.body !== undefined && r.status !== 413), 'request') } },
      }
    : undefined
  return {
    tags: [door],
    security: [{ mutualTLS: [], bearer: [scope] }],
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses,
  }
}

/** A response of a status: its headers (from the runs), its body schema, its examples. */
function response (door: Door, status: number, codes: readonly ErrorCode[], seen: readonly Recorded[], head: boolean) {
  const lines = codes.map(c => `- \`${c}\`: ${ADVICE[c] ?? ''}`)
  const description = status === 200 ? 'The latest revision. Keep ETag and Last-Modified for the next poll, and emitted_at for audit.'
    : status === 202 ? 'Persisted on disk; applied at the next solver cycle.'
      : status === 304 ? 'Nothing new since the ETag (or date) you sent. No body; the validators are repeated.'
        : lines.join('\n')
  const media = seen.map(r => (r.headers['content-type'] ?? '').split(';')[0]!).find(Boolean)
  const schema = status === 200 ? { $ref: SCHEMA_FILES.besoins }
    : status === 202 ? { $ref: '#/components/schemas/Receipt' }
      : door === 'inbound' ? errorSchema('#/components/schemas/InboundError', { properties: { error: { properties: { code: { enum: codes } } } } })
        : errorSchema('#/components/schemas/Problem', {
          properties: { status: { const: status }, ...(status === 403 ? { code: { enum: codes } } : {}) },
          required: status === 403 ? ['code'] : status === 400 ? ['invalid_params'] : [],
        })
  return {
    description,
    headers: headersOf(seen),
    ...(media && !head && status !== 304 ? { content: { [media]: { schema, examples: examplesOf(seen, 'response') } } } : {}),
  }
}

function errorSchema (ref: string, narrow: Record<string, unknown>) {
  return { allOf: [{ $ref: ref }, narrow] }
}

/** The headers a status carries in the runs; required when every run had it. */
function headersOf (seen: readonly Recorded[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(HEADER_SPECS)) {
    const values = seen.map(r => r.headers[name.toLowerCase()]).filter((v): v is string => v !== undefined)
    if (values.length === 0) continue
    const same = values.every(v => v === values[0])
    out[name] = {
      description: spec.description,
      required: values.length === seen.length,
      schema: same && !spec.varies ? { type: 'string', const: values[0] } : { type: 'string', pattern: spec.pattern },
      example: values[0],
    }
  }
  return out
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
 * format of the path's door): `x-other-methods` of a path item names the latter.
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
