/**
 * The 202 body of POST programme-soutirage (contract §4.2), fields in the contract's
 * order. A module of plain types: the BSP client's published declarations (the epx-bsp
 * package) name them, and must not reach the validator's modules and their type
 * dependencies (compiled.ts re-exports them, beside the schema and serializer).
 * @module
 */

/**
 * One instruction of a receipt: the contract's three fields, in their order, then the
 * extension (DECISIONS.md "Inbound"): what will become of it.
 */
export interface ReceiptEntry {
  instruction_id: string
  site_id: string
  periods_count: number
  /**
   * `queued`: goes to the solver at its next cycle; `superseded`: a later programme is in
   * force; `late`: every period had begun before reception, kept but never applied.
   */
  status: 'queued' | 'superseded' | 'late'
  /** The instruction in force, when it is the caller company's own (another's is not named). */
  superseded_by?: string
  /** Periods of a programme for today already over at reception: kept, not fed to the solver (never with `late`: none is). */
  periods_over?: number
}

export interface Receipt {
  status: 'received'
  count: number
  instructions: ReceiptEntry[]
  message: string
}
