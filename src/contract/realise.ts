/**
 * The body of the realisation read, GET realise (docs/http-api.md "Programme against
 * delivery", an extension of the contract): one site's day, slot by slot, the energy
 * programmed by the effective instruction against the energy its meter measured. What
 * the door answers, the BSP client reads, the CLI and the console show.
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

export interface Creneau {
  readonly debut_utc: string
  readonly fin_utc: string
  /** null where the slot is unconstrained. */
  readonly energie_programmee_kwh: number | null
  /** null where no meter value was reported. */
  readonly energie_realisee_kwh: number | null
  readonly verdict: Verdict
  /** With `short`: programmed − delivered, kWh. */
  readonly manque_kwh?: number
}

export interface Totaux {
  /** Sum over the programmed slots. */
  readonly energie_programmee_kwh: number
  /** Sum over every metered slot of the day. */
  readonly energie_realisee_kwh: number
  /** Sum of the `short` slots' shortfalls. */
  readonly manque_kwh: number
  /** Slots per verdict, every verdict present. */
  readonly verdicts: Readonly<Record<Verdict, number>>
}

export interface RealiseBody {
  readonly site_id: string
  readonly target_date: string
  /** The effective instruction compared against; null when the caller has none for the day. */
  readonly instruction_id: string | null
  readonly creneaux: readonly Creneau[]
  readonly totaux: Totaux
}
