/**
 * The inbound validator and the 202 serializer, compiled once (at activation, and once
 * in the parsing worker): ajv with allErrors for the per-field schema, then the
 * cross-field rules, every violation as `{ RFC 6901 pointer: message }`.
 * @module
 */
import { createRequire } from 'node:module'
import type { ErrorObject, ValidateFunction } from 'ajv'
// Generated from receiptSchema below by scripts/build.mjs: no fast-json-stringify (nor its ajv) at run time.
import receiptSerializer from '../generated/receipt-serializer.js'
// Generated from programme-ajv.ts by scripts/build.mjs: the default limit's validator, no ajv at run time.
import defaultValidator from '../generated/programme-validator.js'
import { programmeFormats, programmeSoutirageSchema, type ProgrammeSoutirage } from './programme-soutirage.ts'
import { addProgrammeVocabulary, DEFAULT_MAX_SITES, programmeAjvOptions } from './programme-ajv.ts'
import { checkProgrammeRules, Details, type CheckedSlots, type RuleOptions } from './programme-rules.ts'

export interface ValidatorOptions {
  readonly maxSites: number
}

export type Validated =
  | { readonly ok: true; readonly programme: ProgrammeSoutirage; readonly slots: CheckedSlots }
  | { readonly ok: false; readonly details: Record<string, string> }

export type ProgrammeValidator = (body: unknown, rules: RuleOptions) => Validated

/**
 * ajv is loaded by the first compilation, not with this module, and only for a limit other
 * than the default (programme-ajv.ts): the solver's thread imports this module (through the
 * in-thread door's code) but, with the door in its worker, never compiles a programme
 * validator, and ajv's modules cost a thread ~1.5 MB of heap. A synchronous require (ajv is
 * CommonJS) keeps compileProgrammeValidator synchronous for its callers.
 */
const loadAjv = () => (createRequire(import.meta.url)('ajv') as typeof import('ajv')).Ajv

/** The schema's validator for a site limit: the build's for the default, compiled now for another. */
export function schemaValidator (maxSites: number): ValidateFunction {
  if (maxSites === DEFAULT_MAX_SITES) return defaultValidator
  return compileSchemaValidator(maxSites)
}

/** ajv's compilation at run time, as the build's (a test holds the two equal). */
export function compileSchemaValidator (maxSites: number): ValidateFunction {
  const ajv = new (loadAjv())(programmeAjvOptions)
  addProgrammeVocabulary(ajv)
  return ajv.compile(programmeSoutirageSchema({ maxSites }))
}

export function compileProgrammeValidator (opts: ValidatorOptions): ProgrammeValidator {
  const validate = schemaValidator(opts.maxSites)

  return (body, rules) => {
    const details = new Details()
    if (!validate(body)) addSchemaErrors(validate, details)
    const slots = details.full ? undefined : checkProgrammeRules(body, rules, details)
    if (details.size > 0 || !slots) return { ok: false, details: details.toObject() }
    return { ok: true, programme: body as ProgrammeSoutirage, slots }
  }
}

function addSchemaErrors (validate: ValidateFunction, details: Details): void {
  for (const e of validate.errors ?? []) {
    if (details.full) return
    if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty
      const fix = fixOf((e.parentSchema as { properties?: Record<string, unknown> }).properties?.[missing], e)
      details.add(`${e.instancePath}/${escapePointer(missing)}`, fix.startsWith('is required') ? fix : `is required; ${fix}`)
    } else if (e.keyword === 'format') {
      const f = programmeFormats[(e.params as { format: string }).format]!
      details.add(e.instancePath, f.explain(String(e.data)))
    } else {
      details.add(e.instancePath, `${fixOf(e.parentSchema, e).replace(/^is required: /, 'must be ')}; got ${describe(e.data)}`)
    }
  }
}

/** The `fix` annotation of a schema for this error's keyword, or ajv's own text. */
function fixOf (schema: unknown, e: ErrorObject): string {
  const fix = (schema as { fix?: string | Record<string, string> } | undefined)?.fix
  if (typeof fix === 'string') return fix
  if (fix) return fix[e.keyword] ?? fix['*'] ?? e.message ?? 'is invalid'
  return e.message ?? 'is invalid'
}

/** What the sender sent, short: a primitive as JSON, else its kind. */
function describe (data: unknown): string {
  if (data === null || typeof data !== 'object') {
    // JSON.parse reads 1e400 as Infinity, which JSON.stringify would print as null.
    const text = typeof data === 'number' ? String(data) : JSON.stringify(data) ?? String(data)
    return text.length > 40 ? text.slice(0, 40) + '…' : text
  }
  if (!Array.isArray(data)) return 'an object'
  return data.length === 0 ? 'an empty array' : `an array of ${data.length}`
}

/** RFC 6901 §3: `~` is `~0`, `/` is `~1`. */
function escapePointer (token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1')
}

// The 202 body's types live in receipt.ts: the BSP client's declarations name them without this module's.
import type { Receipt } from './receipt.ts'
export type { Receipt, ReceiptEntry } from './receipt.ts'

/** The 202 body's schema: the serializer's, and the description's (openapi/). */
export const receiptSchema = {
  title: 'Programme_Soutirage receipt',
  type: 'object',
  required: ['status', 'count', 'instructions', 'message'],
  properties: {
    status: { type: 'string' },
    count: { type: 'integer' },
    instructions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['instruction_id', 'site_id', 'periods_count', 'status'],
        properties: {
          instruction_id: { type: 'string' },
          site_id: { type: 'string' },
          periods_count: { type: 'integer' },
          status: {
            type: 'string',
            enum: ['queued', 'superseded', 'late'],
            description: 'Extension: `queued` goes to the solver at its next cycle; `superseded`: a programme with a later emitted_at is in force for this site and day, and this one is kept but never applied; `late`: every period of it had begun before it was received (a programme for today sent too late), so it is kept but never applied.',
          },
          superseded_by: {
            type: 'string',
            description: 'Extension, with `superseded`: the instruction_id in force, when it is your own company\'s (another company\'s is never named).',
          },
          periods_over: {
            type: 'integer',
            description: 'Extension, for a programme for today: how many of its periods were already over at reception; they are kept but not fed to the solver. Absent when none, and with `late` (none of it is fed).',
          },
        },
      },
    },
    message: { type: 'string' },
  },
} as const

export const serializeReceipt: (r: Receipt) => string = receiptSerializer
