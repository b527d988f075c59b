/**
 * What the power chart draws, before any SVG: the series it was given, its vertical
 * scale, the marks that fall off that scale and the legend. Both pages that show a
 * site's day (the "Besoins agrégés" page and a programme's page) give it what they
 * have; a series given empty is neither drawn nor listed in the legend.
 *
 * The scale is robust to outliers: one 8,000 kW floor asked of a site of 88 kW, or one
 * meter glitch, would otherwise stretch the axis so far that every other value reads
 * as a line at 0. The reference is the `REFERENCE_QUANTILE` of every value the chart
 * plots (available power, floors, delivered power); a value beyond `OUTLIER_FACTOR`
 * times that reference does not set the axis. Whatever ends above the axis top is drawn
 * at the top edge and listed in `clipped`, so the renderer marks it with its value.
 * @module
 */

export interface ChartInput {
  /** The Paris day's coverage, UTC ms. */
  readonly startMs: number
  readonly endMs: number
  readonly slotMs: number
  /** Available power per quarter-hour (the published Besoins); empty when none is published. */
  readonly available: ReadonlyArray<{ readonly startMs: number; readonly kw: number }>
  /** Energy milestones: an energy by a deadline. */
  readonly milestones: ReadonlyArray<{ readonly startMs: number; readonly deadlineMs: number; readonly energyKwh: number; readonly powerKw: number }>
  /** The instruction's constrained slots: a floor (`minKw`) or a curtailment (`maxKw` 0). */
  readonly constraints: ReadonlyArray<{ readonly startMs: number; readonly endMs: number; readonly minKw?: number; readonly maxKw?: number }>
  /**
   * The metered energy of each reported quarter-hour as its mean power (kWh × 4): a series
   * beside the floors, so programmed and delivered read on one axis.
   */
  readonly delivered?: ReadonlyArray<{ readonly startMs: number; readonly kw: number }>
  /** Accessible name, e.g. "Puissance disponible, Depot 1, 28/03/2027". */
  readonly title: string
  /** Caption of the page's table that gives the same values (the accessible alternative). */
  readonly tableName: string
}

/** The series a chart may draw, in the order the legend lists them. */
export const SERIES = ['available', 'milestone', 'floor', 'infeasible', 'curtailment', 'delivered', 'clipped'] as const
export type Series = typeof SERIES[number]

export const SERIES_LABELS: Readonly<Record<Series, string>> = {
  available: 'Puissance disponible',
  milestone: 'Jalon (échéance)',
  floor: 'Plancher (min kW)',
  infeasible: 'Plancher infaisable',
  curtailment: 'Effacement (0 kW)',
  delivered: 'Réalisé (compteur)',
  clipped: 'Hors échelle',
}

export interface Floor {
  readonly startMs: number
  readonly endMs: number
  readonly kw: number
  /** The lowest available power over the floor's quarter-hours; undefined when none is published. */
  readonly availableKw?: number
  /** Above its available power: the solver cannot hold it. */
  readonly over: boolean
}

/** A mark drawn at the top edge instead of its value. */
export interface Clipped {
  readonly series: 'available' | 'floor' | 'delivered'
  readonly startMs: number
  readonly endMs: number
  readonly kw: number
}

export interface ChartModel {
  /** The axis maximum, kW (a round number). */
  readonly top: number
  readonly floors: readonly Floor[]
  readonly curtailments: ReadonlyArray<{ readonly startMs: number; readonly endMs: number }>
  readonly clipped: readonly Clipped[]
  /** Exactly the series drawn, in legend order. */
  readonly legend: readonly Series[]
}

/** The quantile of the plotted values that stands for "the day's high". */
const REFERENCE_QUANTILE = 0.9
/** A value above this many times the reference does not set the scale. */
export const OUTLIER_FACTOR = 3
/** A floor this much above its available power is over it (float noise of kWh × 4 is not). */
const OVER_EPSILON_KW = 1e-6

export function chartModel (c: ChartInput): ChartModel {
  const delivered = c.delivered ?? []
  const floors = c.constraints.flatMap(k => k.minKw === undefined ? [] : [floorOf(c, k.startMs, k.endMs, k.minKw)])
  const curtailments = c.constraints.filter(k => k.minKw === undefined).map(k => ({ startMs: k.startMs, endMs: k.endMs }))
  const values = [...c.available.map(s => s.kw), ...floors.map(f => f.kw), ...delivered.map(d => d.kw)]
  const top = axisTop(values)
  const clipped: Clipped[] = [
    ...c.available.filter(s => s.kw > top).map(s => ({ series: 'available' as const, startMs: s.startMs, endMs: s.startMs + c.slotMs, kw: s.kw })),
    ...floors.filter(f => f.kw > top).map(f => ({ series: 'floor' as const, startMs: f.startMs, endMs: f.endMs, kw: f.kw })),
    ...delivered.filter(d => d.kw > top).map(d => ({ series: 'delivered' as const, startMs: d.startMs, endMs: d.startMs + c.slotMs, kw: d.kw })),
  ]
  const drawn: Record<Series, boolean> = {
    available: c.available.length > 0,
    milestone: c.milestones.length > 0,
    floor: floors.some(f => !f.over),
    infeasible: floors.some(f => f.over),
    curtailment: curtailments.length > 0,
    delivered: delivered.length > 0,
    clipped: clipped.length > 0,
  }
  return { top, floors, curtailments, clipped, legend: SERIES.filter(s => drawn[s]) }
}

function floorOf (c: ChartInput, startMs: number, endMs: number, kw: number): Floor {
  const availableKw = lowestAvailable(c.available, startMs, endMs)
  return { startMs, endMs, kw, ...(availableKw === undefined ? {} : { availableKw }), over: availableKw !== undefined && kw > availableKw + OVER_EPSILON_KW }
}

/**
 * The lowest available power over the quarter-hours starting in `[startMs, endMs)`
 * (a one-hour slot spans four); undefined when none is published there.
 */
export function lowestAvailable (available: ChartInput['available'], startMs: number, endMs: number): number | undefined {
  let min: number | undefined
  for (const s of available) if (s.startMs >= startMs && s.startMs < endMs && (min === undefined || s.kw < min)) min = s.kw
  return min
}

/** The axis maximum: the highest value that is not an outlier, rounded up. */
export function axisTop (values: readonly number[]): number {
  const positive = values.filter(v => v > 0).sort((a, b) => a - b)
  // The rank below the quantile, so that in a handful of values the outlier is not its own reference.
  const reference = positive.length ? positive[Math.floor(REFERENCE_QUANTILE * (positive.length - 1))]! : 0
  const bound = reference * OUTLIER_FACTOR
  return niceMax(Math.max(1, ...positive.filter(v => v <= bound)))
}

/** A round axis maximum a little above `v`: 1, 2, 2.5 or 5 times a power of ten, times 4 ticks. */
function niceMax (v: number): number {
  const raw = v * 1.1 / 4
  const p = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 2.5, 5, 10].map(f => f * p).find(s => s >= raw)!
  return step * 4
}
