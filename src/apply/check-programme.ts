/**
 * Body bytes → a validated instruction batch, or every violation: JSON parse, schema,
 * rules, then the instructions. Pure and synchronous, so it runs as is on the
 * request's thread for a small body and in the parsing worker for a big one.
 * @module
 */
import { compileProgrammeValidator } from '../contract/compiled.ts'
import type { InstructionBatch, Provenance } from '../contract/instruction.ts'
import { MAX_DETAILS } from '../contract/programme-rules.ts'
import { inPerimeter } from '../auth/tenancy.ts'
import { isEpxError } from '../errors.ts'
import { parseJson } from './parse-json.ts'
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

export function createProgrammeCheck (opts: CheckOptions): ProgrammeCheck {
  const validate = compileProgrammeValidator({ maxSites: opts.maxSites })
  return (bytes, ctx) => {
    let body: unknown
    try {
      body = parseJson(bytes)
    } catch (err) {
      if (!isEpxError(err) || !err.details) throw err
      return { ok: false, message: 'the body is not a JSON document we accept', details: { ...err.details } }
    }
    const managed = ctx.managed
    const v = validate(body, {
      allowed: siteId => inPerimeter(ctx, siteId),
      requireContiguous: opts.requireContiguous,
      nowMs: ctx.nowMs,
      maxClockSkewSeconds: opts.maxClockSkewSeconds,
      maxDaysAhead: opts.maxDaysAhead,
      maxSiteKw: opts.maxSiteKw,
      managed: managed && (siteId => managed.has(siteId)),
    })
    if (!v.ok) {
      const n = Object.keys(v.details).length
      return { ok: false, message: `${n}${n >= MAX_DETAILS ? ' (or more)' : ''} problem(s), see error.details`, details: v.details }
    }
    return { ok: true, batch: toInstructionBatch(v.programme, v.slots, ctx.provenance) }
  }
}

