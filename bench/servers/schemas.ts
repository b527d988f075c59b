/**
 * JSON Schemas for server B (Fastify): the Besoins_Agreges response (serialized by
 * fast-json-stringify, field order as the contract lists it) and the Programme_Soutirage
 * body (validated by Fastify's ajv), written from the contract's sections 2.1 and 2.2.
 * This is what a Fastify user would declare; the rules JSON Schema cannot say (alignment,
 * contiguity, coverage) are left out on purpose: B is "what a user would pick instead".
 * @module
 */

const instant = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z$' } as const
const date = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' } as const
const prm = { type: 'string', pattern: '^PRM[0-9]{14}$' } as const

export const querystringSchema = {
  type: 'object',
  required: ['site_id', 'target_date'],
  properties: { site_id: prm, target_date: date },
} as const

export const besoinsAgregesSchema = {
  type: 'object',
  properties: {
    schema_version: { type: 'string' },
    type: { type: 'string' },
    emitted_by: { type: 'string' },
    emitted_at: { type: 'string' },
    target_date: { type: 'string' },
    coverage_start_utc: { type: 'string' },
    coverage_end_utc: { type: 'string' },
    slot_duration_secs: { type: 'integer' },
    sites: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          site_id: { type: 'string' },
          site_name: { type: 'string' },
          jalons_besoin: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                debut_utc: { type: 'string' },
                deadline_utc: { type: 'string' },
                valeur_kwh: { type: 'number' },
                puissance_kW: { type: 'number' },
              },
            },
          },
          puissance_disponible: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                debut_utc: { type: 'string' },
                fin_utc: { type: 'string' },
                p_max_kw: { type: 'number' },
              },
            },
          },
        },
      },
    },
  },
} as const

export const programmeSoutirageSchema = {
  type: 'object',
  required: ['schema_version', 'type', 'emitted_by', 'emitted_at', 'target_date', 'slot_duration_secs', 'sites'],
  properties: {
    schema_version: { const: 'v0.2' },
    type: { const: 'programme_soutirage' },
    emitted_by: { type: 'string', minLength: 1 },
    emitted_at: instant,
    target_date: date,
    slot_duration_secs: { type: 'integer', minimum: 900, multipleOf: 900 },
    sites: {
      type: 'array',
      minItems: 1,
      maxItems: 5000,
      items: {
        type: 'object',
        required: ['site_id', 'site_name', 'energie_programmee'],
        properties: {
          site_id: prm,
          site_name: { type: 'string' },
          energie_programmee: {
            type: 'array',
            items: {
              type: 'object',
              required: ['debut_utc', 'fin_utc', 'energie_kwh'],
              properties: {
                debut_utc: instant,
                fin_utc: instant,
                energie_kwh: { type: 'number', minimum: 0 },
              },
            },
          },
        },
      },
    },
  },
} as const

export const acceptedSchema = {
  type: 'object',
  properties: {
    status: { type: 'string' },
    count: { type: 'integer' },
    instructions: {
      type: 'array',
      items: {
        type: 'object',
        properties: { instruction_id: { type: 'string' }, site_id: { type: 'string' }, periods_count: { type: 'integer' } },
      },
    },
    message: { type: 'string' },
  },
} as const
