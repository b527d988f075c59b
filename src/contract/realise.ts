/**
 * The body of the realisation read, GET realise (docs/http-api.md "Programme against
 * delivery", an extension of the contract): one site's day, quarter-hour by quarter-hour,
 * the energy programmed by the instruction in force at its start against the energy its
 * meter measured (DECISIONS.md "In force, quarter-hour by quarter-hour"). What the door
 * answers, the BSP client reads, the CLI and the console show.
 * @module
 */

/**
 * `met`: delivered ≥ programmed − tolerance; `short`: below it (`manque_kwh` says by how
 * much); `curtailment_respected` / `curtailment_broken`: 0 was programmed, and no more than
 * the tolerance was drawn, or more; `no_data`: a programmed slot with no meter value (yet);
 * `unconstrained`: no programme for the slot.
 */
export const VERDICTS = ['met', 'short', 'curtailment_respected', 'curtailment_broken', 'no_data', 'unconstrained'] as const
export type Verdict = typeof VERDICTS[number]

/**
 * A slot of an instruction received after its quarter-hour began: never fed to the solver
 * for it, judged `late` ("reçu trop tard"), neither met nor short, never in the shortfall.
 */
export interface Tardif {
  readonly instruction_id: string
  readonly energie_programmee_kwh: number
  readonly verdict: 'late'
}

export interface Creneau {
  readonly debut_utc: string
  readonly fin_utc: string
  /**
   * The instruction in force at the quarter-hour's start, when it is not the body's
   * `instruction_id` (null: none was). Absent: the body's.
   */
  readonly instruction_id?: string | null
  /** The operator's read only: the company that held the site at the quarter-hour's start. */
  readonly company_id?: string
  /** null where the slot is unconstrained. */
  readonly energie_programmee_kwh: number | null
  /** null where no meter value was reported. */
  readonly energie_realisee_kwh: number | null
  readonly verdict: Verdict
  /** With `short`: programmed − delivered, kWh. */
  readonly manque_kwh?: number
  /** A later instruction's slot for this quarter-hour, received after it began. */
  readonly tardif?: Tardif
}

export interface Totaux {
  /** Sum over the programmed slots. */
  readonly energie_programmee_kwh: number
  /** Sum over every metered slot of the day. */
  readonly energie_realisee_kwh: number
  /** Sum of the `short` slots' shortfalls. */
  readonly manque_kwh: number
  /** Quarter-hours per verdict, every verdict present. */
  readonly verdicts: Readonly<Record<Verdict, number>>
  /** Quarter-hours with a late slot (`Creneau.tardif`), counted apart from the verdicts. */
  readonly tardifs: number
}

export interface RealiseBody {
  readonly site_id: string
  readonly target_date: string
  /**
   * The caller's instruction last in force on the day, which the quarter-hours are compared
   * against unless one names another; null when the caller has none for the day.
   */
  readonly instruction_id: string | null
  readonly creneaux: readonly Creneau[]
  readonly totaux: Totaux
}
