/**
 * What an operator is told about received instructions, for `epx instructions list|show`
 * and the console's "Programmes" page alike: which ones a filter selects, their status
 * (received, queued, applied at a solver cycle, superseded by which instruction), and
 * each slot's energy with the kW constraint the solver gets from it.
 * @module
 */
import type { Instructions, StoredInstruction } from '../store/instructions.ts'
import type { Period } from '../host/contract.ts'
import { targetDateOfInstructionId } from '../contract/ids.ts'
import { instructionConstraints } from './to-constraints.ts'

/** An instruction with what became of it. */
export interface InstructionView {
  readonly instruction: StoredInstruction
  /**
   * For a superseded one: the instruction of the same site and day with the next later
   * emitted_at (the one whose arrival made it stale), and the company that sent it.
   */
  readonly supersededBy?: { readonly instructionId: string; readonly companyId: string }
}

export interface InstructionFilter {
  readonly siteIds?: readonly string[]
  readonly targetDate?: string
  /** Only those this company sent (a console member sees its own programmes only). */
  readonly companyId?: string
}

/** Instructions in (target date, emitted_at, site) order, each with its superseder. */
export function listInstructionViews (instructions: Instructions, filter: InstructionFilter = {}): InstructionView[] {
  const all = instructions.list({ siteIds: filter.siteIds, targetDate: filter.targetDate })
  // Every instruction of a (day, site) is in `all` (the filters never split one), in
  // emitted_at order: an instruction's superseder is the next one of its pair.
  const next = new Map<StoredInstruction, StoredInstruction>()
  const lastOfPair = new Map<string, StoredInstruction>()
  for (const i of all) {
    const pair = `${i.targetDate} ${i.siteId}`
    const previous = lastOfPair.get(pair)
    if (previous) next.set(previous, i)
    lastOfPair.set(pair, i)
  }
  const views: InstructionView[] = []
  for (const i of all) {
    if (filter.companyId !== undefined && i.companyId !== filter.companyId) continue
    const later = i.state.status === 'superseded' ? next.get(i) : undefined
    views.push(later ? { instruction: i, supersededBy: { instructionId: later.instructionId, companyId: later.companyId } } : { instruction: i })
  }
  return views
}

/** The sites' instructions of one id (one per site of its programme); none for a text that is no instruction id. */
export function instructionViewsOf (instructions: Instructions, instructionId: string, filter: Omit<InstructionFilter, 'targetDate'> = {}): InstructionView[] {
  const targetDate = targetDateOfInstructionId(instructionId)
  if (targetDate === undefined) return []
  return listInstructionViews(instructions, { ...filter, targetDate }).filter(v => v.instruction.instructionId === instructionId)
}

/** One programmed slot: its energy and the kW constraint it becomes (a floor, or a curtailment at 0). */
export interface SlotConstraint extends Period {
  readonly energyKwh: number
}

export function slotConstraints (i: Pick<StoredInstruction, 'slots' | 'slotDurationSecs'>): SlotConstraint[] {
  return instructionConstraints(i)
}

/** The wire-style summary of an instruction (snake_case, like the API). */
export function instructionSummary ({ instruction: i, supersededBy }: InstructionView) {
  return {
    instruction_id: i.instructionId,
    site_id: i.siteId,
    site_name: i.siteName,
    target_date: i.targetDate,
    emitted_at: i.emittedAt,
    emitted_by: i.emittedBy,
    received_at: i.receivedAt,
    company_id: i.companyId,
    token_id: i.tokenId,
    cert_fingerprint256: i.certFingerprint256,
    status: i.state.status,
    ...(i.state.cycle === undefined ? {} : { cycle: i.state.cycle }),
    ...(supersededBy === undefined ? {} : { superseded_by: supersededBy.instructionId }),
    ...(i.state.reason === undefined ? {} : { withdrawn_because: i.state.reason }),
    status_at: i.state.at,
    slot_duration_secs: i.slotDurationSecs,
    periods_count: i.slots.length,
  }
}

/** kW rounded to the watt, for display. */
export function roundKw (kw: number): number {
  return Math.round(kw * 1000) / 1000
}
