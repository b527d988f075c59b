/**
 * Programme_Soutirage v0.2 (contract §2.2): the JSON Schema of each field taken alone,
 * its TS type (derived from the schema, so the two cannot drift), and the formats the schema names. Slot instants and the rules that
 * relate fields to each other (alignment, slot length, coverage, order, unique sites,
 * perimeter) are in `programme-rules.ts`. Every message says what to fix; `fix` sits next to the rule.
 * @module
 */
import type { FromSchema } from 'json-schema-to-ts'
import { PRM_PATTERN } from './ids.ts'
import { BoundedCache } from '../bounded-cache.ts'
import { readUtcInstant } from './instants.ts'
import { isCalendarDate, LONGEST_DAY_SECS } from './paris-day.ts'

const PROGRAMME_SCHEMA_VERSION = 'v0.2'
/** DECISIONS.md "Inbound": the message for a wrong `schema_version` names these. */
const SUPPORTED_PROGRAMME_VERSIONS = [PROGRAMME_SCHEMA_VERSION] as const
const PROGRAMME_TYPE = 'programme_soutirage'

/** A named string format: its check and what to tell the sender when it fails. */
interface Format {
  readonly validate: (text: string) => boolean
  readonly explain: (text: string) => string
}

/** How a wire instant must look (DECISIONS.md "Time"), for every message that asks for one. */
const INSTANT_SHAPE = 'an ISO 8601 UTC instant ending in Z, e.g. 2026-11-21T23:15:00Z (no offset such as +01:00)'

const calendarDates = new BoundedCache<string, boolean>(1000)

/**
 * The formats the schema uses (registered on the ajv instance in `compiled.ts`). Slot
 * instants have none: `programme-rules.ts` reads each of them once, for its checks
 * and for the instructions, and reports the unreadable and the misaligned ones.
 */
export const programmeFormats: Readonly<Record<string, Format>> = {
  'utc-instant': {
    validate: text => typeof readUtcInstant(text) !== 'string',
    explain: text => readUtcInstant(text) as string,
  },
  'calendar-date': {
    // luxon costs microseconds and a programme names one day: remember the answers.
    validate: text => calendarDates.getOrCompute(text, isCalendarDate),
    explain: text => `must be a real calendar date YYYY-MM-DD (the Europe/Paris target day), e.g. 2026-11-22; got ${quote(text)}`,
  },
}

/**
 * `fix` is the message of every failure at that place: one string, or one per ajv
 * keyword (`*` for the others). It is an annotation only: it checks nothing.
 */
const slotSchema = {
  type: 'object',
  fix: 'each slot must be an object { debut_utc, fin_utc, energie_kwh }',
  required: ['debut_utc', 'fin_utc', 'energie_kwh'],
  properties: {
    debut_utc: { type: 'string', fix: `is required: the slot start, ${INSTANT_SHAPE}, on a 900 s boundary` },
    fin_utc: { type: 'string', fix: `is required: the slot end, ${INSTANT_SHAPE}, on a 900 s boundary` },
    // ajv's `number` refuses NaN and ±Infinity (strictNumbers), so this is "a finite number".
    energie_kwh: { type: 'number', minimum: 0, fix: 'is required: the energy of the slot in kWh, a finite number >= 0 (0 means curtailment)' },
  },
} as const

const siteSchema = {
  type: 'object',
  fix: 'each site must be an object { site_id, site_name, energie_programmee }',
  required: ['site_id', 'energie_programmee'],
  properties: {
    site_id: { type: 'string', pattern: PRM_PATTERN, fix: 'must be "PRM" followed by 14 digits, e.g. PRM30000000000001' },
    site_name: { type: 'string', fix: 'must be a string (the site label)' },
    // An empty list is valid: the instruction has 0 periods and clears the site's day.
    energie_programmee: { type: 'array', items: slotSchema, fix: 'is required: the list of slots (may be empty to clear the day)' },
  },
} as const

/** The v0.2 schema for a site limit (config `inbound.maxSites`, default 5,000). */
export function programmeSoutirageSchema (limits: { readonly maxSites: number }) {
  return {
    $id: 'https://epx.invalid/programme-soutirage.v0.2.json',
    title: 'Programme_Soutirage v0.2',
    type: 'object',
    fix: 'the body must be a JSON object: a Programme_Soutirage envelope',
    required: ['schema_version', 'type', 'emitted_by', 'emitted_at', 'target_date', 'slot_duration_secs', 'sites'],
    // No additionalProperties: unknown fields are ignored (DECISIONS.md, forward compatibility).
    properties: {
      schema_version: {
        type: 'string',
        enum: SUPPORTED_PROGRAMME_VERSIONS,
        fix: `must be one of the supported versions: ${SUPPORTED_PROGRAMME_VERSIONS.map(v => `"${v}"`).join(', ')}`,
      },
      type: { type: 'string', const: PROGRAMME_TYPE, fix: `must be "${PROGRAMME_TYPE}"` },
      emitted_by: { type: 'string', minLength: 1, fix: 'must be a non-empty string naming the sending operator' },
      emitted_at: { type: 'string', format: 'utc-instant', fix: `is required: the emission time, ${INSTANT_SHAPE}` },
      target_date: { type: 'string', format: 'calendar-date', fix: 'is required: the target day, a calendar date YYYY-MM-DD' },
      slot_duration_secs: {
        type: 'integer',
        minimum: 900,
        // A slot longer than the longest day fits in no day (and 1e46 would overflow Date).
        maximum: LONGEST_DAY_SECS,
        multipleOf: 900,
        fix: `must be a positive integer multiple of 900 seconds, at most ${LONGEST_DAY_SECS} (a 25-hour day; 900 is standard)`,
      },
      sites: {
        type: 'array',
        minItems: 1,
        maxItems: limits.maxSites,
        items: siteSchema,
        fix: {
          maxItems: `at most ${limits.maxSites} sites per programme; split it into several programmes`,
          '*': 'must be a non-empty array of sites',
        },
      },
    },
  } as const
}

/**
 * The envelope once the schema passed, wire names as the contract spells them; unknown
 * extra fields may ride along, ignored (the schema sets no additionalProperties).
 */
export type ProgrammeSoutirage = FromSchema<ReturnType<typeof programmeSoutirageSchema>>
export type SiteProgramme = ProgrammeSoutirage['sites'][number]
/** A slot of `energie_programmee`. */
export type SlotProgramme = SiteProgramme['energie_programmee'][number]

function quote (text: string): string {
  return JSON.stringify(text.length > 40 ? text.slice(0, 40) + '…' : text)
}
