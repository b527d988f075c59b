/**
 * The BSP's checks, with the server's own rules: a received Besoins_Agreges against the
 * published schema (openapi/schemas/besoins-agreges.json is made from the same object),
 * and a programme with the validator the door compiles, so the JSON-pointer details
 * printed before sending are the ones the server would answer.
 * @module
 */
import { Ajv2020 } from 'ajv/dist/2020.js'
import { compileProgrammeValidator } from '../contract/compiled.ts'
// The server's default `inbound.maxSites`; the server may allow fewer (it then says so).
import { DEFAULT_MAX_SITES } from '../contract/programme-ajv.ts'
import { besoinsAgregesJsonSchema, PUBLISHED_FORMATS } from '../contract/published-schemas.ts'
import type { BesoinsAgreges } from '../contract/besoins-agreges.ts'

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly details: Readonly<Record<string, string>> }

let besoinsValidator: ((doc: unknown) => Checked<BesoinsAgreges>) | undefined

/** A received document against the Besoins_Agreges v0.3 schema; details keyed by JSON Pointer. */
export function checkBesoinsAgreges (doc: unknown): Checked<BesoinsAgreges> {
  besoinsValidator ??= compileBesoins()
  return besoinsValidator(doc)
}

function compileBesoins (): (doc: unknown) => Checked<BesoinsAgreges> {
  const ajv = new Ajv2020({ allErrors: true, strict: true })
  for (const [name, validate] of Object.entries(PUBLISHED_FORMATS)) ajv.addFormat(name, { type: 'string', validate })
  const validate = ajv.compile(besoinsAgregesJsonSchema())
  return doc => {
    if (validate(doc)) return { ok: true, value: doc as BesoinsAgreges }
    const details: Record<string, string> = {}
    for (const e of validate.errors ?? []) details[e.instancePath] ??= e.message ?? e.keyword
    return { ok: false, details }
  }
}

const programmeValidators = new Map<number, ReturnType<typeof compileProgrammeValidator>>()

/** The server's default `inbound.maxClockSkewSeconds`. */
export const DEFAULT_MAX_CLOCK_SKEW_SECONDS = 300

export interface CheckProgrammeOptions {
  readonly maxSites?: number
  readonly requireContiguous?: boolean
  /**
   * This machine's clock: with it, an emitted_at more than `maxClockSkewSeconds` ahead is
   * found before sending (the server would refuse it: it would outrank every later
   * revision). Which target dates are open is the server's to say (its clock and settings).
   */
  readonly now?: Date
  readonly maxClockSkewSeconds?: number
  /**
   * The server's `inbound.maxSiteKw` (default its default, 100,000 kW): a slot whose power
   * (energie_kwh * 3600 / slot_duration_secs) is above it is found before sending.
   */
  readonly maxSiteKw?: number
}

/**
 * A Programme_Soutirage as the server checks it, perimeter and managed sites aside (only
 * the server knows them): the same schema, rules and messages, the same `{ pointer: message }` details.
 */
export function checkProgramme (body: unknown, opts: CheckProgrammeOptions = {}): Checked<unknown> {
  const maxSites = opts.maxSites ?? DEFAULT_MAX_SITES
  let validate = programmeValidators.get(maxSites)
  if (!validate) {
    validate = compileProgrammeValidator({ maxSites })
    programmeValidators.set(maxSites, validate)
  }
  const v = validate(body, {
    allowed: () => true,
    requireContiguous: opts.requireContiguous ?? false,
    ...(opts.maxSiteKw !== undefined ? { maxSiteKw: opts.maxSiteKw } : {}),
    ...(opts.now ? {
      nowMs: opts.now.getTime(),
      maxClockSkewSeconds: opts.maxClockSkewSeconds ?? DEFAULT_MAX_CLOCK_SKEW_SECONDS,
      checkTargetDate: false,
      clockName: 'this machine\'s clock',
    } : {}),
  })
  return v.ok ? { ok: true, value: body } : { ok: false, details: v.details }
}
