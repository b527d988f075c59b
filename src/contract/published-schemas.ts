/**
 * The contract's schemas as a BSP reads them (openapi/schemas/*.json, the OpenAPI
 * description, the reference client): JSON Schema draft 2020-12 made from the very
 * objects the door compiles and serializes with, so they cannot drift. Only what is
 * ours alone is translated: `fix` messages become `description`, the serializer's
 * `format: 'unsafe'` and the validator's named formats become standard `date-time` /
 * `date` with their pattern.
 * @module
 */
import { besoinsAgregesSchema } from './besoins-agreges.ts'
import { receiptSchema } from './compiled.ts'
import { INSTRUCTION_ID_PATTERN } from './ids.ts'
import { NOT_IN_FORCE_REASONS } from './programme-status.ts'
import { readUtcInstant, UTC_INSTANT_PATTERN } from './instants.ts'
import { DATE_PATTERN, isCalendarDate } from './paris-day.ts'
import { programmeSoutirageSchema } from './programme-soutirage.ts'

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema'

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
export type JsonSchema = { [k: string]: Json }

/** Standard format and pattern of each of our named formats. */
const NAMED_FORMATS: Readonly<Record<string, { format: string; pattern: string }>> = {
  'utc-instant': { format: 'date-time', pattern: UTC_INSTANT_PATTERN },
  'calendar-date': { format: 'date', pattern: DATE_PATTERN },
}

/**
 * How epx reads the standard formats its published schemas use, for a validator of them
 * (the reference client, the tests' response checks): the contract's own readers.
 */
export const PUBLISHED_FORMATS: Readonly<Record<'date-time' | 'date', (text: string) => boolean>> = {
  'date-time': text => typeof readUtcInstant(text) !== 'string',
  date: isCalendarDate,
}

/** The standard format a serializer-only (`unsafe`) string has, known by its pattern. */
const FORMAT_OF_PATTERN: Readonly<Record<string, string>> = {
  [UTC_INSTANT_PATTERN]: 'date-time',
  [DATE_PATTERN]: 'date',
}

/** One schema node, and all below it, in portable JSON Schema. */
export function toPortableSchema (schema: unknown): Json {
  if (Array.isArray(schema)) return schema.map(toPortableSchema)
  if (schema === null || typeof schema !== 'object') return schema as Json
  const out: JsonSchema = {}
  const src = schema as Record<string, unknown>
  for (const [k, v] of Object.entries(src)) {
    if (k === 'fix') continue
    if (k === 'format') {
      const named = NAMED_FORMATS[v as string]
      if (named) Object.assign(out, named)
      else if (v === 'unsafe') {
        const f = FORMAT_OF_PATTERN[src.pattern as string]
        if (f) out.format = f
      } else out.format = v as string
      continue
    }
    // `properties` maps names to schemas: its keys are not keywords.
    out[k] = k === 'properties'
      ? Object.fromEntries(Object.entries(v as object).map(([name, s]) => [name, toPortableSchema(s)]))
      : toPortableSchema(v)
  }
  const fix = src.fix as string | Record<string, string> | undefined
  if (fix !== undefined && out.description === undefined) out.description = typeof fix === 'string' ? fix : fix['*'] ?? ''
  return out
}

function fileSchema (schema: object, description: string): JsonSchema {
  const { $id, ...rest } = toPortableSchema(schema) as JsonSchema
  return { $schema: JSON_SCHEMA_DIALECT, $id: $id!, ...rest, description }
}

/** Besoins_Agreges v0.3 (contract §2.1), what GET besoins-agreges answers. */
export function besoinsAgregesJsonSchema (): JsonSchema {
  return fileSchema(besoinsAgregesSchema, 'Besoins_Agreges v0.3, the aggregated needs of one or more sites for a Europe/Paris day (contract section 2.1). Field order is the contract\'s.')
}

/**
 * Programme_Soutirage v0.2 (contract §2.2), the fields taken alone. The rules between
 * fields (slot alignment and length, coverage of the day, order, unique sites, perimeter, sanity bound)
 * are the server's (`programme-rules.ts`) and are stated in the description.
 */
export function programmeSoutirageJsonSchema (limits: { readonly maxSites: number }): JsonSchema {
  const schema = fileSchema(programmeSoutirageSchema(limits), [
    'Programme_Soutirage v0.2, the withdrawal programme a BSP posts (contract section 2.2).',
    'Besides this schema the server checks: debut_utc/fin_utc on a 900 s boundary, fin_utc - debut_utc = slot_duration_secs,',
    'every slot inside the Europe/Paris target day, slots in strictly increasing order without overlap, each site_id once,',
    'each site in the caller\'s perimeter, and each slot\'s power (energie_kwh * 3600 / slot_duration_secs) at most the service\'s',
    'sanity bound (inbound.maxSiteKw, 100,000 kW by default). Unknown extra fields are ignored.',
  ].join(' '))
  // The slot bounds are read by the server's rules (readUtcInstant, as emitted_at is), not by
  // the door's schema; published, they carry the same format and pattern as every other instant.
  const slot = (((schema.properties as JsonSchema).sites as JsonSchema).items as JsonSchema).properties as JsonSchema
  const bounds = ((slot.energie_programmee as JsonSchema).items as JsonSchema).properties as JsonSchema
  for (const name of ['debut_utc', 'fin_utc']) bounds[name] = { ...(bounds[name] as JsonSchema), ...NAMED_FORMATS['utc-instant']! }
  return schema
}

/** The 202 body of POST programme-soutirage (contract §4.2). */
export function receiptJsonSchema (): JsonSchema {
  const s = toPortableSchema(receiptSchema) as JsonSchema
  // The serializer's schema says "a string"; the contract (section 4.2) says which one, and what an id looks like.
  const properties: JsonSchema = { ...(s.properties as JsonSchema), status: { type: 'string', const: 'received' } }
  const items = (properties.instructions as JsonSchema).items as JsonSchema
  const itemProperties = { ...(items.properties as JsonSchema), instruction_id: instructionId(), site_id: { type: 'string', pattern: PRM_PATTERN } }
  properties.instructions = { ...(properties.instructions as JsonSchema), items: { ...items, properties: itemProperties } }
  return {
    ...s,
    properties,
    // Never "will be applied" for what will not (DECISIONS.md "Inbound"): each entry says.
    description: 'One instruction per site was persisted (on disk) before this answer. Whether each is applied is its entry\'s `status`: ' +
      '`queued` goes to the solver at its next cycle (of a programme for today, only the periods not yet over; `periods_over` counts the others); ' +
      'any other status is never applied (`superseded`: a programme with a later emitted_at is in force for that site and day, `superseded_by` names it when it is yours; ' +
      '`late`: every period had begun before it was received). ' +
      '`message` sums it up.',
  }
}

const PRM_PATTERN = '^PRM[0-9]{14}$'

function instructionId (): JsonSchema {
  return {
    type: 'string',
    pattern: INSTRUCTION_ID_PATTERN,
    description: 'ProgrammeSoutirage-<target_date>-rev-<emitted_at in compact UTC form>, derived by the service: the same (target_date, emitted_at) always gives the same id.',
  }
}

/** The inbound error body (contract §7.2, DECISIONS.md "Inbound"). */
export function inboundErrorJsonSchema (codes: readonly string[]): JsonSchema {
  return {
    title: 'Inbound error',
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'details'],
        properties: {
          code: { type: 'string', enum: [...codes] },
          message: { type: 'string', description: 'What went wrong; for 400, that the request validation failed and how many problems.' },
          details: {
            type: 'object',
            description: 'RFC 6901 JSON Pointer into the body (the key "" is the body as a whole) -> what to fix; for INVALID_QUERY (the status read), the query parameter\'s name. At most 100 entries; {} when there are none.',
            propertyNames: { pattern: '^((/.*)?|[a-z_]+)$' },
            additionalProperties: { type: 'string' },
            maxProperties: 100,
          },
        },
      },
    },
  }
}

/** The outbound error body: RFC 9457 problem details (DECISIONS.md "Outbound"). */
export function problemJsonSchema (): JsonSchema {
  return {
    title: 'Problem details (RFC 9457)',
    type: 'object',
    // `code` is what a program branches on (NOT_PUBLISHED: retry later; UNKNOWN_PATH: fix the path); every problem the service sends has one.
    required: ['type', 'title', 'status', 'detail', 'code'],
    properties: {
      type: { type: 'string', format: 'uri', pattern: '/errors/[a-z-]+$', description: '{base_url}/errors/<slug>' },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string', description: 'What went wrong and what to do.' },
      invalid_params: {
        type: 'array',
        description: 'On 400: each query parameter at fault and why.',
        items: {
          type: 'object',
          required: ['name', 'reason'],
          properties: { name: { type: 'string' }, reason: { type: 'string' } },
        },
      },
      code: { type: 'string', description: 'The error code (docs/errors.md): what a program branches on, e.g. NOT_PUBLISHED (retry later) or UNKNOWN_PATH (fix the path).' },
    },
  }
}

/** GET programme-soutirage: what became of the caller's programmes (DECISIONS.md "Reading outcomes", an extension). */
export function programmeStatusJsonSchema (): JsonSchema {
  return {
    title: 'Programme_Soutirage status (extension)',
    description: 'Your company\'s instructions for target_date (of site_id when given), newest first, withdrawn ones included (a site that left your perimeter). A site you never programmed answers as one with none.',
    type: 'object',
    required: ['target_date', 'count', 'instructions'],
    properties: {
      target_date: { type: 'string', format: 'date' },
      count: { type: 'integer', minimum: 0 },
      instructions: {
        type: 'array',
        items: {
          type: 'object',
          required: ['instruction_id', 'site_id', 'emitted_at', 'received_at', 'periods_count', 'status', 'infeasible_slots', 'in_force'],
          properties: {
            instruction_id: instructionId(),
            site_id: { type: 'string', pattern: PRM_PATTERN },
            emitted_at: { type: 'string', format: 'date-time', pattern: UTC_INSTANT_PATTERN, description: 'As you sent it (UTC, at the precision sent).' },
            received_at: { type: 'string', format: 'date-time', pattern: UTC_INSTANT_PATTERN, description: 'When the service received it (UTC).' },
            periods_count: { type: 'integer', minimum: 0 },
            status: {
              type: 'string',
              enum: ['received', 'queued', 'applied', 'superseded', 'withdrawn'],
              description: '`received`: stored, not yet handed to the solver (it will be at the service\'s next start, unless its day is over by then, or it was late: every period had begun before it was received, so it is never applied); `queued`: handed to the solver for its next cycle; `applied`: a solver cycle took it (`applied_at`, `cycle`); `superseded`: a programme with a later emitted_at is in force for this site and day; this one is kept, never applied; `withdrawn`: no longer in force from `withdrawn_at`, because the site left your perimeter or the operator withdrew it (`not_in_force_reason`).',
            },
            withdrawn_at: { type: 'string', format: 'date-time', pattern: UTC_INSTANT_PATTERN, description: 'With `withdrawn`: from when it is no longer in force (UTC).' },
            applied_at: { type: 'string', format: 'date-time', pattern: UTC_INSTANT_PATTERN, description: 'With `applied`: when the cycle acknowledged it (UTC).' },
            cycle: { type: 'integer', description: 'With `applied`: the solver cycle\'s number.' },
            superseded_by: { type: 'string', description: 'With `superseded`: the instruction in force, when it is your company\'s own.' },
            infeasible_slots: { type: 'integer', minimum: 0, description: 'Slots whose floor exceeds the available power published for them (0 when none, or when nothing was published to check against).' },
            in_force: {
              type: 'array',
              description: 'When this instruction was the one in force for its site and day (UTC), oldest first; `until` absent while it is. A quarter-hour is governed by the instruction in force at its start. Empty: never in force.',
              items: {
                type: 'object',
                required: ['from'],
                properties: {
                  from: { type: 'string', format: 'date-time', pattern: UTC_INSTANT_PATTERN },
                  until: { type: 'string', format: 'date-time', pattern: UTC_INSTANT_PATTERN },
                },
              },
            },
            not_in_force_reason: {
              type: 'string',
              enum: [...NOT_IN_FORCE_REASONS],
              description: 'Why it is not (or no longer) in force: `superseded` (a programme with a later emitted_at), `withdrawn` (by the service\'s operator), `site-left-perimeter` (the site left your perimeter, or was given to another company); `late`: every period had begun before it was received, so it governs none of them and is never in force. Never names another company.',
            },
          },
        },
      },
    },
  }
}

/** The realisation read's body (`contract/realise.ts`): an extension of the contract. */
export function realiseJsonSchema (): JsonSchema {
  const kwh = { type: ['number', 'null'], minimum: 0 }
  return {
    title: 'Realise: programmed against delivered (extension)',
    description: 'One site\'s Europe/Paris day, every quarter-hour (92, 96 or 100) that began while you held the site, the energy programmed by your instruction in force at its start against the energy the site\'s meter measured, with a verdict. A slot of an instruction received after its quarter-hour began is `late` (`tardif`): counted apart, never in the shortfall.',
    type: 'object',
    required: ['site_id', 'target_date', 'instruction_id', 'creneaux', 'totaux'],
    properties: {
      site_id: { type: 'string', pattern: '^PRM[0-9]{14}$' },
      target_date: { type: 'string', format: 'date' },
      instruction_id: { type: ['string', 'null'], description: 'Your instruction last in force on the site and day: each quarter-hour is compared against it unless the quarter-hour names another; null when you have none (every slot is then `unconstrained`).' },
      creneaux: {
        type: 'array',
        minItems: 1,
        maxItems: 100,
        items: {
          type: 'object',
          required: ['debut_utc', 'fin_utc', 'energie_programmee_kwh', 'energie_realisee_kwh', 'verdict'],
          properties: {
            debut_utc: { type: 'string', description: 'Slot start (UTC).' },
            fin_utc: { type: 'string', description: 'Slot end (UTC), 15 minutes later.' },
            instruction_id: { type: ['string', 'null'], description: 'Present when the instruction in force at this quarter-hour\'s start is not the body\'s `instruction_id`: that one (an earlier programme of yours it superseded), or null when none of yours was in force.' },
            energie_programmee_kwh: { ...kwh, description: 'Programmed energy; null where no slot of your instruction covers it.' },
            energie_realisee_kwh: { ...kwh, description: 'Metered energy; null where no meter value was reported (yet).' },
            verdict: {
              type: 'string',
              enum: ['met', 'short', 'curtailment_respected', 'curtailment_broken', 'no_data', 'unconstrained'],
              description: '`met`: delivered ≥ programmed − tolerance; `short`: below (`manque_kwh`); `curtailment_respected` / `curtailment_broken`: 0 was programmed, and at most the tolerance was drawn, or more; `no_data`: programmed, no meter value (yet); `unconstrained`: not programmed.',
            },
            manque_kwh: { type: 'number', exclusiveMinimum: 0, description: 'With `short`: programmed − delivered.' },
            tardif: {
              type: 'object',
              description: 'A slot for this quarter-hour of a programme received after the quarter-hour began (the latest such): never fed to the solver for it, judged `late`, neither met nor short, never in the shortfall.',
              required: ['instruction_id', 'energie_programmee_kwh', 'verdict'],
              properties: {
                instruction_id: { type: 'string' },
                energie_programmee_kwh: { type: 'number', minimum: 0 },
                verdict: { type: 'string', const: 'late' },
              },
            },
          },
        },
      },
      totaux: {
        type: 'object',
        required: ['energie_programmee_kwh', 'energie_realisee_kwh', 'manque_kwh', 'verdicts', 'tardifs'],
        properties: {
          energie_programmee_kwh: { type: 'number', minimum: 0, description: 'Sum over the programmed slots.' },
          energie_realisee_kwh: { type: 'number', minimum: 0, description: 'Sum over every metered slot of the day.' },
          manque_kwh: { type: 'number', minimum: 0, description: 'Sum of the `short` slots\' shortfalls.' },
          verdicts: {
            type: 'object',
            description: 'Slots per verdict.',
            required: ['met', 'short', 'curtailment_respected', 'curtailment_broken', 'no_data', 'unconstrained'],
            properties: {
              met: { type: 'integer', minimum: 0 },
              short: { type: 'integer', minimum: 0 },
              curtailment_respected: { type: 'integer', minimum: 0 },
              curtailment_broken: { type: 'integer', minimum: 0 },
              no_data: { type: 'integer', minimum: 0 },
              unconstrained: { type: 'integer', minimum: 0 },
            },
            additionalProperties: false,
          },
          tardifs: { type: 'integer', minimum: 0, description: 'Quarter-hours with a `late` slot (`tardif`), counted apart from the verdicts.' },
        },
      },
    },
  }
}

/** The perimeter read's body (`contract/sites.ts`): an extension of the contract. */
export function sitesJsonSchema (): JsonSchema {
  return {
    title: 'Sites: your company\'s perimeter (extension)',
    description: 'The sites your company may read and program, in site order, never another company\'s. `perimeter` `all`: every site the service manages (the list is then empty).',
    type: 'object',
    required: ['perimeter', 'sites'],
    properties: {
      perimeter: { type: 'string', enum: ['sites', 'all'] },
      sites: {
        type: 'array',
        items: {
          type: 'object',
          required: ['site_id'],
          properties: {
            site_id: { type: 'string', pattern: PRM_PATTERN },
            held_since: { type: 'string', format: 'date-time', pattern: UTC_INSTANT_PATTERN, description: 'Since when your company has held the site without a break (UTC); absent when the service\'s history does not say.' },
          },
        },
      },
    },
  }
}

const EVENT_ID = { type: 'string', pattern: '^[0-9]{15}$', description: 'Opaque; strictly increasing for your company (as a string and as a number).' }

/**
 * Each type of event, as the feed lists it and a webhook delivers it (DECISIONS.md "Events
 * for BSPs", an extension), by its `type`.
 */
export function eventJsonSchemas (): Record<'besoins_agreges.publie' | 'instruction.statut' | 'realise.modifie' | 'perimetre.modifie', JsonSchema> {
  const instant = { type: 'string', format: 'date-time', pattern: UTC_INSTANT_PATTERN }
  const site = { type: 'string', pattern: '^PRM[0-9]{14}$' }
  const day = { type: 'string', format: 'date' }
  const event = (type: string, description: string, properties: Record<string, JsonSchema>, required: readonly string[]): JsonSchema => ({
    title: type,
    description,
    type: 'object',
    additionalProperties: false,
    required: ['id', 'type', 'occurred_at', ...required],
    properties: { id: EVENT_ID, type: { const: type }, occurred_at: { ...instant, description: 'When it happened (UTC).' }, ...properties },
  })
  return {
    'besoins_agreges.publie': event('besoins_agreges.publie', 'A Besoins_Agreges of a site of your perimeter was published: GET besoins-agreges with this ETag answers it.',
      { site_id: site, target_date: day, etag: { type: 'string', pattern: '^W/"[A-Za-z0-9_-]+"$' }, emitted_at: instant }, ['site_id', 'target_date', 'etag', 'emitted_at']),
    'instruction.statut': event('instruction.statut', 'One of your instructions changed status: `queued`, `applied` (with its solver cycle), `superseded`, `withdrawn` (with its reason) or `late`.',
      {
        instruction_id: { type: 'string' }, site_id: site, target_date: day,
        status: { enum: ['queued', 'applied', 'superseded', 'withdrawn', 'late'] },
        cycle: { type: 'integer', description: 'With `applied`: the solver cycle.' },
        reason: { enum: ['site-left-perimeter', 'withdrawn'], description: 'With `withdrawn`: the site left your perimeter, or the operator withdrew it.' },
      }, ['instruction_id', 'site_id', 'target_date', 'status']),
    'realise.modifie': event('realise.modifie', 'A quarter-hour of the site and day you may read in GET realise changed (at most one such event per site and day every 5 minutes).',
      { site_id: site, target_date: day }, ['site_id', 'target_date']),
    'perimetre.modifie': event('perimetre.modifie', 'Your perimeter changed. `all_sites`: it is now every site. From every site to a list, `sites_added` is the whole list.',
      { sites_added: { type: 'array', items: site }, sites_removed: { type: 'array', items: site }, all_sites: { type: 'boolean' } }, ['sites_added', 'sites_removed', 'all_sites']),
  }
}

/** GET evenements: a page of the caller company's events (DECISIONS.md "Events for BSPs", an extension). */
export function eventsFeedJsonSchema (): JsonSchema {
  return {
    title: 'Events of your company (extension)',
    description: 'Your company\'s events after `apres`, oldest first. Continue with `apres` = `suivant`; nothing new gives an empty list and the same `suivant`.',
    type: 'object',
    additionalProperties: false,
    required: ['evenements', 'suivant'],
    properties: {
      evenements: { type: 'array', maxItems: 1000, items: { oneOf: Object.values(eventJsonSchemas()) } },
      suivant: EVENT_ID,
    },
  }
}
