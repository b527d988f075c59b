/**
 * Besoins_Agreges v0.3 (contract §2.1): one JSON Schema, its TS type, and the one
 * serializer built from it. The schema lists the fields in the contract's order and
 * fast-json-stringify writes them in schema order, so the bytes follow the contract
 * (DECISIONS.md "Besoins_Agreges publication": field order exactly as listed).
 * @module
 */
// Generated from besoinsAgregesSchema below by scripts/build.mjs (fast-json-stringify standalone).
import stringify from '../generated/besoins-agreges-serializer.js'
import { PRM_PATTERN } from './ids.ts'
import { UTC_INSTANT_PATTERN } from './instants.ts'
import { DATE_PATTERN } from './paris-day.ts'

export const BESOINS_SCHEMA_VERSION = 'v0.3'
export const BESOINS_TYPE = 'besoins_agreges'
/** DECISIONS.md: `slot_duration_secs` is 900 in the published shape. */
export const BESOINS_SLOT_SECS = 900

/** Need milestone (jalons_besoin[]); wire names kept as the contract spells them. */
export interface JalonBesoin {
  debut_utc: string
  deadline_utc: string
  valeur_kwh: number
  puissance_kW: number
}

/** Available-power slot (puissance_disponible[]). */
export interface PuissanceDisponible {
  debut_utc: string
  fin_utc: string
  p_max_kw: number
}

export interface BesoinsSite {
  site_id: string
  site_name: string
  jalons_besoin: JalonBesoin[]
  puissance_disponible: PuissanceDisponible[]
}

export interface BesoinsAgreges {
  schema_version: typeof BESOINS_SCHEMA_VERSION
  type: typeof BESOINS_TYPE
  emitted_by: string
  emitted_at: string
  target_date: string
  coverage_start_utc: string
  coverage_end_utc: string
  slot_duration_secs: number
  sites: BesoinsSite[]
}

/**
 * Instants and ids are written by epx itself (`formatUtcInstant`, checked PRM and
 * dates), never free text, so they skip JSON escaping (`format: 'unsafe'`): escaping
 * checks were a fifth of the serializer's time for 10,000 sites (bench/README.md#targets, the publication row).
 * Free text (`emitted_by`, `site_name`) is always escaped.
 */
const instant = { type: 'string', format: 'unsafe', pattern: UTC_INSTANT_PATTERN } as const

/** The document schema; `properties` order IS the wire order (contract §2.1). */
export const besoinsAgregesSchema = {
  $id: 'https://epx.invalid/besoins-agreges.v0.3.json',
  title: 'Besoins_Agreges v0.3',
  type: 'object',
  additionalProperties: false,
  required: ['schema_version', 'type', 'emitted_by', 'emitted_at', 'target_date',
    'coverage_start_utc', 'coverage_end_utc', 'slot_duration_secs', 'sites'],
  properties: {
    schema_version: { type: 'string', const: BESOINS_SCHEMA_VERSION },
    type: { type: 'string', const: BESOINS_TYPE },
    emitted_by: { type: 'string', minLength: 1 },
    emitted_at: instant,
    target_date: { type: 'string', format: 'unsafe', pattern: DATE_PATTERN },
    coverage_start_utc: instant,
    coverage_end_utc: instant,
    slot_duration_secs: { type: 'integer' },
    sites: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['site_id', 'site_name', 'jalons_besoin', 'puissance_disponible'],
        properties: {
          site_id: { type: 'string', format: 'unsafe', pattern: PRM_PATTERN },
          site_name: { type: 'string' },
          jalons_besoin: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['debut_utc', 'deadline_utc', 'valeur_kwh', 'puissance_kW'],
              properties: {
                debut_utc: instant,
                deadline_utc: instant,
                valeur_kwh: { type: 'number' },
                puissance_kW: { type: 'number' },
              },
            },
          },
          puissance_disponible: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['debut_utc', 'fin_utc', 'p_max_kw'],
              properties: {
                debut_utc: instant,
                fin_utc: instant,
                p_max_kw: { type: 'number' },
              },
            },
          },
        },
      },
    },
  },
} as const

/**
 * The wire bytes of a document. Built once per revision at publication and stored;
 * the GET door serves these bytes and never serializes per request.
 */
export function serializeBesoinsAgreges (doc: BesoinsAgreges): string {
  return stringify(doc)
}
