/**
 * What became of a company's programmes, as the API tells the BSP (DECISIONS.md "Reading
 * outcomes", an extension of the contract): one day's instructions of the caller's
 * company, newest first, each with its status, its feasibility count, and when it was in
 * force (`in_force`, `not_in_force_reason`: DECISIONS.md "Tenure"). Never another
 * company's instructions, nor their ids: a superseded instruction names the one in force
 * only when it is the caller's own. A company's own instructions are shown whatever its
 * perimeter is now: those of a site that left it are `withdrawn` (DECISIONS.md "Tenure:
 * who holds a site, and when"), and a site it never programmed answers an empty list.
 * @module
 */
import { createHash } from 'node:crypto'
import { compareInstants, readUtcInstant, type Instant } from '../contract/instants.ts'
import type { Instructions } from '../store/instructions.ts'
import type { InstructionState } from '../contract/instruction.ts'
import type { InstructionFlags } from '../store/instruction-flags.ts'
import type { NotInForceReason, StatusBody, StatusEntry } from '../contract/programme-status.ts'
import type { InForce, InForceSpan } from '../store/in-force.ts'
import { instantText } from '../contract/instant-text.ts'

export type { StatusBody, StatusEntry }

export interface StatusDeps {
  readonly instructions: Pick<Instructions, 'headsOf' | 'effectiveOf' | 'slotsOf'> & { readonly inForce: Pick<InForce, 'spansOf'> }
  readonly flags: Pick<InstructionFlags, 'get'>
}

export interface StatusCaller {
  readonly companyId: string
  readonly perimeter: 'all' | readonly string[]
}

/** The caller's instructions of `targetDate` (of one site if given), newest first. */
export function programmeStatus (deps: StatusDeps, caller: StatusCaller, targetDate: string, siteId?: string): StatusBody {
  const found: Array<{ entry: StatusEntry; at: Instant }> = []
  const spansOf = new Map<string, readonly InForceSpan[]>()
  for (const { head, periodsCount, state } of deps.instructions.headsOf(targetDate)) {
    // Only the caller's own: a site it no longer holds shows what it sent, nothing of another's.
    if (head.companyId !== caller.companyId) continue
    if (siteId !== undefined && head.siteId !== siteId) continue
    const flag = deps.flags.get(head.instructionId, head.siteId)
    let entry: StatusEntry = {
      instruction_id: head.instructionId,
      site_id: head.siteId,
      emitted_at: head.emittedAt,
      received_at: head.receivedAt,
      periods_count: periodsCount,
      status: state.status,
      infeasible_slots: flag?.infeasibleSlots.length ?? 0,
      in_force: [],
    }
    if (state.status === 'applied') {
      entry = withBefore(entry, { applied_at: state.at, ...(state.cycle !== undefined ? { cycle: state.cycle } : {}) })
    } else if (state.status === 'withdrawn') {
      entry = withBefore(entry, { withdrawn_at: state.at })
    } else if (state.status === 'superseded') {
      const inForce = deps.instructions.effectiveOf(targetDate, head.siteId)
      if (inForce && inForce.companyId === caller.companyId && inForce.instructionId !== head.instructionId) {
        entry = withBefore(entry, { superseded_by: inForce.instructionId })
      }
    }
    let site = spansOf.get(head.siteId)
    if (!site) spansOf.set(head.siteId, site = deps.instructions.inForce.spansOf(targetDate, head.siteId))
    entry = withInForce(deps, entry, site.filter(s => s.instructionId === head.instructionId), state, Date.parse(head.receivedAt))
    const at = readUtcInstant(head.emittedAt)
    found.push({ entry, at: typeof at === 'string' ? { ms: NaN, nanos: 0 } : at })
  }
  found.sort((a, b) => compareInstants(b.at, a.at) || (a.entry.site_id < b.entry.site_id ? -1 : a.entry.site_id > b.entry.site_id ? 1 : 0))
  const instructions = found.map(f => f.entry)
  return { target_date: targetDate, count: instructions.length, instructions }
}

/** The fields of a status, placed before `infeasible_slots` (the documented field order). */
function withBefore (entry: StatusEntry, fields: Partial<StatusEntry>): StatusEntry {
  const { infeasible_slots: infeasible, in_force: inForce, ...rest } = entry
  return { ...rest, ...fields, infeasible_slots: infeasible, in_force: inForce }
}

/**
 * Its spans in force (`store/in-force.ts`), and why it is not in force when it is not
 * (DECISIONS.md "Tenure", "In force, quarter-hour by quarter-hour"): the reason says what
 * befell it, never whose programme took its place.
 */
function withInForce (deps: StatusDeps, entry: StatusEntry, spans: readonly InForceSpan[], state: InstructionState, receivedMs: number): StatusEntry {
  const in_force = spans.map(s => s.untilMs === undefined ? { from: instantText(s.fromMs) } : { from: instantText(s.fromMs), until: instantText(s.untilMs) })
  const last = spans.at(-1)
  let reason: NotInForceReason | undefined
  if (last && last.untilMs !== undefined) reason = last.endedBy ?? 'superseded'
  // Withdrawn while in force, on a day whose timeline lacks it: its own status says why.
  else if (state.status === 'withdrawn') reason = state.reason ?? 'withdrawn'
  // Never in force: late (never eligible), or superseded on arrival.
  else if (!last) reason = allBegun(deps, entry.instruction_id, entry.site_id, receivedMs) ? 'late' : 'superseded'
  // Stored in force before lateness kept an instruction out of it: it governed none of its periods all the same.
  else if (allBegun(deps, entry.instruction_id, entry.site_id, receivedMs)) reason = 'late'
  return { ...entry, in_force, ...(reason ? { not_in_force_reason: reason } : {}) }
}

/** Every period of an instruction had begun before it was received: it governs none of them. */
function allBegun (deps: StatusDeps, instructionId: string, siteId: string, receivedMs: number): boolean {
  const slots = deps.instructions.slotsOf(instructionId, siteId)
  return !!slots && slots.starts.length > 0 && slots.starts[slots.starts.length - 1]! < receivedMs
}

/** A weak validator of a status answer: its bytes' digest (it changes with any status). */
export function statusEtag (body: string): string {
  return `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
}
