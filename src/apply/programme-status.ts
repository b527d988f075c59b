/**
 * What became of a company's programmes, as the API tells the BSP (DECISIONS.md "Reading
 * outcomes", an extension of the contract): one day's instructions of the caller's
 * company, newest first, each with its status and its feasibility count. Never another
 * company's instructions, nor their ids: a superseded instruction names the one in force
 * only when it is the caller's own. A company's own instructions are shown whatever its
 * perimeter is now: those of a site that left it are `withdrawn` (DECISIONS.md "Tenure:
 * who holds a site, and when"), and a site it never programmed answers an empty list.
 * @module
 */
import { createHash } from 'node:crypto'
import { compareInstants, readUtcInstant, type Instant } from '../contract/instants.ts'
import type { Instructions } from '../store/instructions.ts'
import type { InstructionFlags } from '../store/instruction-flags.ts'
import type { StatusBody, StatusEntry } from '../contract/programme-status.ts'

export type { StatusBody, StatusEntry }

export interface StatusDeps {
  readonly instructions: Pick<Instructions, 'headsOf' | 'effectiveOf'>
  readonly flags: Pick<InstructionFlags, 'get'>
}

export interface StatusCaller {
  readonly companyId: string
  readonly perimeter: 'all' | readonly string[]
}

/** The caller's instructions of `targetDate` (of one site if given), newest first. */
export function programmeStatus (deps: StatusDeps, caller: StatusCaller, targetDate: string, siteId?: string): StatusBody {
  const found: Array<{ entry: StatusEntry; at: Instant }> = []
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
    }
    if (state.status === 'applied') {
      entry = withBefore(entry, { applied_at: state.at, ...(state.cycle !== undefined ? { cycle: state.cycle } : {}) })
    } else if (state.status === 'withdrawn') {
      entry = withBefore(entry, { withdrawn_at: state.at, not_in_force_reason: state.reason ?? 'withdrawn' })
    } else if (state.status === 'superseded') {
      const inForce = deps.instructions.effectiveOf(targetDate, head.siteId)
      if (inForce && inForce.companyId === caller.companyId && inForce.instructionId !== head.instructionId) {
        entry = withBefore(entry, { superseded_by: inForce.instructionId })
      }
    }
    const at = readUtcInstant(head.emittedAt)
    found.push({ entry, at: typeof at === 'string' ? { ms: NaN, nanos: 0 } : at })
  }
  found.sort((a, b) => compareInstants(b.at, a.at) || (a.entry.site_id < b.entry.site_id ? -1 : a.entry.site_id > b.entry.site_id ? 1 : 0))
  const instructions = found.map(f => f.entry)
  return { target_date: targetDate, count: instructions.length, instructions }
}

/** The fields of a status, placed before `infeasible_slots` (the documented field order). */
function withBefore (entry: StatusEntry, fields: Partial<StatusEntry>): StatusEntry {
  const { infeasible_slots: infeasible, ...rest } = entry
  return { ...rest, ...fields, infeasible_slots: infeasible }
}

/** A weak validator of a status answer: its bytes' digest (it changes with any status). */
export function statusEtag (body: string): string {
  return `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
}
