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
  /** With `withdrawn` (DECISIONS.md "Tenure: who holds a site, and when"): from when, and why, never naming another company. */
  readonly withdrawn_at?: string
  readonly not_in_force_reason?: 'site-left-perimeter' | 'withdrawn'
  /** Slots whose floor exceeds the published available power (0 when none, or not checked). */
  readonly infeasible_slots: number
}

export interface StatusBody {
  readonly target_date: string
  readonly count: number
  readonly instructions: readonly StatusEntry[]
}
