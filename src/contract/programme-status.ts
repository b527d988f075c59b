/**
 * The body of the status read, GET programme-soutirage (DECISIONS.md "Reading outcomes",
 * an extension of the contract): what the door answers (`apply/programme-status.ts`) and
 * the BSP client reads (`bsp/client.ts`). Its JSON Schema is in `published-schemas.ts`.
 * @module
 */
export interface StatusEntry {
  readonly instruction_id: string
  readonly site_id: string
  readonly emitted_at: string
  readonly received_at: string
  readonly periods_count: number
  readonly status: 'received' | 'queued' | 'applied' | 'superseded' | 'withdrawn'
  /** With `applied`: when the solver's cycle acknowledged it, and that cycle's number. */
  readonly applied_at?: string
  readonly cycle?: number
  /** With `superseded`: the instruction in force, when it is the caller company's own. */
  readonly superseded_by?: string
  /** With `withdrawn` (DECISIONS.md "Tenure: who holds a site, and when"): from when (why: `not_in_force_reason`). */
  readonly withdrawn_at?: string
  /** Slots whose floor exceeds the published available power (0 when none, or not checked). */
  readonly infeasible_slots: number
  /**
   * When it was the instruction in force for its site and day (DECISIONS.md "In force,
   * quarter-hour by quarter-hour"), UTC; `until` absent while it is. Empty: never.
   */
  readonly in_force: readonly InForcePeriod[]
  /** Why it is not (or no longer) in force, or governs none of its periods; never naming another company. */
  readonly not_in_force_reason?: NotInForceReason
}

export interface InForcePeriod {
  readonly from: string
  readonly until?: string
}

/**
 * `superseded`: a programme with a later emitted_at took its place; `withdrawn`: the
 * operator withdrew it; `site-left-perimeter`: the site left the company's perimeter;
 * `late`: every period had begun before it was received, so none of them is governed by it.
 */
export const NOT_IN_FORCE_REASONS = ['superseded', 'withdrawn', 'late', 'site-left-perimeter'] as const
export type NotInForceReason = typeof NOT_IN_FORCE_REASONS[number]

export interface StatusBody {
  readonly target_date: string
  readonly count: number
  readonly instructions: readonly StatusEntry[]
}
