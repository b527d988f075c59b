/**
 * Body bytes → a validated instruction batch, or every violation: JSON parse, schema,
 * rules, then the instructions. Pure and synchronous, so it runs as is on the
 * request's thread for a small body and in the parsing worker for a big one.
 * @module
 */
import { compileProgrammeValidator } from '../contract/compiled.ts'
import type { InstructionBatch, Provenance } from '../contract/instruction.ts'
import { MAX_DETAILS, scannedSlotsHold, type RuleOptions } from '../contract/programme-rules.ts'
import { inPerimeter } from '../auth/tenancy.ts'
import { isEpxError } from '../errors.ts'
import { parseJson } from './parse-json.ts'
import { scanProgramme } from './scan-programme.ts'
import { toInstructionBatch } from './to-instructions.ts'

export interface CheckOptions {
  readonly maxSites: number
  readonly requireContiguous: boolean
  /** `inbound.maxClockSkewSeconds` and `inbound.maxDaysAhead` (defaults: programme-rules.ts). */
  readonly maxClockSkewSeconds?: number
  readonly maxDaysAhead?: number
  /** `inbound.maxSiteKw` (default: programme-rules.ts). */
  readonly maxSiteKw?: number
}

/** What the check needs to know of the request besides its body. */
export interface CheckContext {
  readonly perimeter: 'all' | readonly string[]
  readonly provenance: Provenance
  /** The server's clock at reception (ms): the time rules run only when it is given. */
  readonly nowMs?: number
  /** The sites the solver manages (`apply/managed-sites.ts`); unset, not checked. */
  readonly managed?: ReadonlySet<string>
}

export type CheckResult =
  | { readonly ok: true; readonly batch: InstructionBatch }
  | { readonly ok: false; readonly message: string; readonly details: Record<string, string> }

export type ProgrammeCheck = (bytes: Uint8Array, ctx: CheckContext) => CheckResult

/**
 * `fromBytes`: a body in the shape a serializer writes is first read straight from its
 * bytes (`scan-programme.ts`); false reads every body the general way (a test compares them).
 */
export function createProgrammeCheck (opts: CheckOptions, fromBytes = true): ProgrammeCheck {
  const validate = compileProgrammeValidator({ maxSites: opts.maxSites })
  return (bytes, ctx) => {
    const managed = ctx.managed
    const rules: RuleOptions = {
      allowed: siteId => inPerimeter(ctx, siteId),
      requireContiguous: opts.requireContiguous,
      nowMs: ctx.nowMs,
      maxClockSkewSeconds: opts.maxClockSkewSeconds,
      maxDaysAhead: opts.maxDaysAhead,
      maxSiteKw: opts.maxSiteKw,
      managed: managed && (siteId => managed.has(siteId)),
    }
    const scanned = fromBytes ? scanProgramme(bytes) : undefined
    if (scanned) {
      // The envelope and the sites through the schema and the rules (their slots are in
      // the columns); the slots through what is left of their rules.
      const v = validate(scanned.body, rules)
      if (v.ok && scannedSlotsHold(scanned.body, scanned, opts.maxSiteKw)) {
        const slots = { emittedAt: v.slots.emittedAt, starts: scanned.starts, kwh: scanned.kwh, slotEnds: scanned.slotEnds }
        return { ok: true, batch: toInstructionBatch(v.programme, slots, ctx.provenance) }
      }
    }
    let body: unknown
    try {
      body = parseJson(bytes)
    } catch (err) {
      if (!isEpxError(err) || !err.details) throw err
      return { ok: false, message: 'the body is not a JSON document we accept', details: { ...err.details } }
    }
    const v = validate(body, rules)
    if (!v.ok) {
      const n = Object.keys(v.details).length
      return { ok: false, message: `${n}${n >= MAX_DETAILS ? ' (or more)' : ''} problem(s), see error.details`, details: v.details }
    }
    return { ok: true, batch: toInstructionBatch(v.programme, v.slots, ctx.provenance) }
  }
}

