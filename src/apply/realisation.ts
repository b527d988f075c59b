/**
 * Programme against delivery (docs/http-api.md "Programme against delivery"): a site's day
 * compared quarter-hour by quarter-hour with the instruction in force at each quarter-hour's
 * start (DECISIONS.md "In force, quarter-hour by quarter-hour"; the timeline is
 * `store/in-force.ts`), from the stored meter values (`store/metering.ts`). A slot of an
 * instruction received after its quarter-hour began is `late`: told beside the quarter-hour,
 * counted apart, never in the shortfall. The same answer for the BSP (GET realise), the CLI
 * (`epx realise`) and the console.
 * @module
 */
import { createHash } from 'node:crypto'
import { parisDayMs } from '../contract/paris-day.ts'
import { instantText } from '../contract/instant-text.ts'
import { VERDICTS, type Creneau, type RealiseBody, type Verdict } from '../contract/realise.ts'
import type { Instructions } from '../store/instructions.ts'
import type { InForce, InForceSpan } from '../store/in-force.ts'
import type { Metering } from '../store/metering.ts'

export type { RealiseBody, Creneau, Verdict }

const SLOT_MS = 900_000

export interface Tolerance {
  /** `delivery.toleranceKwh`: the least tolerance, and what a curtailment may draw. */
  readonly toleranceKwh: number
  /** `delivery.tolerancePercent`: of the slot's programmed energy, when larger. */
  readonly tolerancePercent: number
}

/**
 * Who held a site during [fromMs, untilMs) (DECISIONS.md "Tenure": the active company whose
 * perimeter held it; `store/tenure.ts` `holdersDuring`), in time order. Unset, every
 * company that has the site in its perimeter reads its whole day, and the holder the
 * operator sees is the company of the instruction in force.
 */
export type HoldersDuring = (siteId: string, fromMs: number, untilMs: number) => ReadonlyArray<{ readonly companyId: string; readonly fromMs: number; readonly untilMs: number }>

export interface RealisationDeps {
  readonly instructions: Pick<Instructions, 'slotsOf'> & { readonly inForce: Pick<InForce, 'spansOf'> }
  readonly metering: Pick<Metering, 'get'>
  readonly tolerance: Tolerance
  readonly holders?: HoldersDuring
}

/** kWh as the wire shows them: to the Wh. */
const wh = (v: number): number => Math.round(v * 1000) / 1000

/**
 * The day of `siteId` on `targetDate`. `companyId`: that company's day, the quarter-hours
 * that began while it held the site (all of them without `holders`), each compared with its
 * own instruction in force then (a BSP never sees another's programme); undefined: the
 * operator's, every quarter-hour with its holder named. Undefined when there is nothing
 * to tell: no quarter-hour held, or neither an instruction nor a meter value.
 */
export function realisation (deps: RealisationDeps, targetDate: string, siteId: string, companyId?: string): RealiseBody | undefined {
  return compared(deps, targetDate, siteId, companyId, true)
}

/** What a list of many sites shows of each: `realisation` without its quarter-hours, a fraction of its cost (no row built). */
export type RealiseTotals = Omit<RealiseBody, 'creneaux'>

/** `realisation`'s totals only, the same numbers (a list of 1,000 sites builds no 96,000 rows to count them). */
export function realisationTotals (deps: RealisationDeps, targetDate: string, siteId: string, companyId?: string): RealiseTotals | undefined {
  return compared(deps, targetDate, siteId, companyId, false)
}

function compared (deps: RealisationDeps, targetDate: string, siteId: string, companyId: string | undefined, withSlots: true): RealiseBody | undefined
function compared (deps: RealisationDeps, targetDate: string, siteId: string, companyId: string | undefined, withSlots: boolean): RealiseTotals | undefined
function compared (deps: RealisationDeps, targetDate: string, siteId: string, companyId: string | undefined, withSlots: boolean): RealiseBody | RealiseTotals | undefined {
  const { startMs, endMs } = parisDayMs(targetDate)
  const n = (endMs - startMs) / SLOT_MS
  const all = deps.instructions.inForce.spansOf(targetDate, siteId)
  const spans = companyId === undefined ? all : all.filter(s => s.companyId === companyId)
  const holders = deps.holders && holderOfQuarters(deps.holders(siteId, startMs, endMs), startMs, n)
  const held = holders && companyId !== undefined ? holders.map(h => h === companyId ? 1 : 0) : undefined
  if (held && !held.includes(1)) return undefined
  const metered = deps.metering.get(targetDate, siteId)?.kwh
  if (spans.length === 0 && !metered) return undefined

  const programmed = new Map<string, Float64Array>()
  for (const span of spans) if (!programmed.has(span.instructionId)) programmed.set(span.instructionId, programmedOf(deps, span.instructionId, siteId, startMs, n))
  const instructionId = spans.at(-1)?.instructionId ?? null

  const counts = Object.fromEntries(VERDICTS.map(v => [v, 0])) as Record<Verdict, number>
  let programmedTotal = 0
  let deliveredTotal = 0
  let shortfallTotal = 0
  let late = 0
  const creneaux: Creneau[] = []
  let g = 0
  for (let i = 0; i < n; i++) {
    if (held && held[i] === 0) continue
    const qStart = startMs + i * SLOT_MS
    while (g < spans.length && (spans[g]!.untilMs ?? Infinity) <= qStart) g++
    const governing = g < spans.length && spans[g]!.fromMs <= qStart ? spans[g] : undefined
    const p = governing ? programmed.get(governing.instructionId)![i]! : NaN
    const d = metered?.[i] ?? NaN
    const verdict = verdictOf(p, d, deps.tolerance)
    counts[verdict]++
    if (!Number.isNaN(p)) programmedTotal += p
    if (!Number.isNaN(d)) deliveredTotal += d
    const shortfall = verdict === 'short' ? wh(p - d) : 0
    shortfallTotal += shortfall
    const tardy = lateSlot(spans, programmed, i, qStart)
    if (tardy) late++
    if (!withSlots) continue
    const governingId = governing?.instructionId ?? null
    const holder = companyId === undefined ? (holders ? holders[i] : governing?.companyId) : undefined
    let creneau: Creneau = {
      debut_utc: instantText(qStart),
      fin_utc: instantText(qStart + SLOT_MS),
      // Named only where it is not the day's: most days have one instruction, and their body stays small.
      ...(governingId !== instructionId ? { instruction_id: governingId } : {}),
      ...(holder !== undefined ? { company_id: holder } : {}),
      energie_programmee_kwh: Number.isNaN(p) ? null : wh(p),
      energie_realisee_kwh: Number.isNaN(d) ? null : wh(d),
      verdict,
    }
    if (verdict === 'short') creneau = { ...creneau, manque_kwh: shortfall }
    if (tardy) {
      creneau = { ...creneau, tardif: { instruction_id: tardy.instructionId, energie_programmee_kwh: wh(tardy.kwh), verdict: 'late' } }
    }
    creneaux.push(creneau)
  }
  return {
    site_id: siteId,
    target_date: targetDate,
    instruction_id: instructionId,
    ...(withSlots ? { creneaux } : {}),
    totaux: {
      energie_programmee_kwh: wh(programmedTotal),
      energie_realisee_kwh: wh(deliveredTotal),
      manque_kwh: wh(shortfallTotal),
      verdicts: counts,
      tardifs: late,
    },
  }
}

/** Per quarter-hour, the company that held the site at its start (undefined: none). */
function holderOfQuarters (spans: ReturnType<HoldersDuring>, startMs: number, n: number): Array<string | undefined> {
  const out = new Array<string | undefined>(n).fill(undefined)
  for (const s of spans) {
    for (let i = Math.max(0, Math.ceil((s.fromMs - startMs) / SLOT_MS)); i < n && startMs + i * SLOT_MS < s.untilMs; i++) out[i] = s.companyId
  }
  return out
}

/** An instruction's programmed kWh per quarter-hour of the day, NaN where none: a longer slot spreads evenly over its quarter-hours. */
function programmedOf (deps: RealisationDeps, instructionId: string, siteId: string, startMs: number, n: number): Float64Array {
  const programmed = new Float64Array(n).fill(NaN)
  const slots = deps.instructions.slotsOf(instructionId, siteId)
  if (!slots) return programmed
  const quarters = Math.max(1, Math.round(slots.slotDurationSecs * 1000 / SLOT_MS))
  for (let k = 0; k < slots.starts.length; k++) {
    for (let q = 0; q < quarters; q++) {
      const i = (slots.starts[k]! - startMs) / SLOT_MS + q
      if (i >= 0 && i < n) programmed[i] = slots.kwh[k]! / quarters
    }
  }
  return programmed
}

/**
 * The slot of quarter-hour `i` that came too late: of the instructions that came into
 * force after it began, the latest one that programmed it (DECISIONS.md "In force,
 * quarter-hour by quarter-hour": never fed to the solver for it, judged `late`).
 */
function lateSlot (spans: readonly InForceSpan[], programmed: ReadonlyMap<string, Float64Array>, i: number, qStartMs: number): { instructionId: string; kwh: number } | undefined {
  for (let k = spans.length - 1; k >= 0 && spans[k]!.fromMs > qStartMs; k--) {
    const kwh = programmed.get(spans[k]!.instructionId)![i]!
    if (!Number.isNaN(kwh)) return { instructionId: spans[k]!.instructionId, kwh }
  }
  return undefined
}

/** One slot's verdict from its programmed (NaN: none) and delivered (NaN: no value) kWh. */
export function verdictOf (programmedKwh: number, deliveredKwh: number, tolerance: Tolerance): Verdict {
  if (Number.isNaN(programmedKwh)) return 'unconstrained'
  if (Number.isNaN(deliveredKwh)) return 'no_data'
  if (programmedKwh === 0) return deliveredKwh > tolerance.toleranceKwh ? 'curtailment_broken' : 'curtailment_respected'
  const allowed = Math.max(tolerance.toleranceKwh, programmedKwh * tolerance.tolerancePercent / 100)
  // Compared at the Wh the wire shows, so what a reader recomputes from the body agrees.
  return wh(deliveredKwh) >= wh(programmedKwh - allowed) ? 'met' : 'short'
}

/** A weak validator of a realisation answer: its bytes' digest (a new meter value, a new ETag). */
export function realiseEtag (body: string): string {
  return `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
}

export interface DayDeps extends RealisationDeps {
  readonly instructions: RealisationDeps['instructions'] & Pick<Instructions, 'effectiveFrom'>
  readonly metering: Pick<Metering, 'get' | 'sitesOf'>
}

/**
 * Every site of a day with something to compare (an instruction in force or a meter value),
 * in site order; `only` narrows to some sites (a company's perimeter), `companyId` as for
 * `realisation`.
 */
export function realisationDay (deps: DayDeps, targetDate: string, only?: (siteId: string) => boolean, companyId?: string): RealiseBody[] {
  const sites = new Set(deps.metering.sitesOf(targetDate))
  for (const ref of deps.instructions.effectiveFrom(targetDate)) {
    if (ref.targetDate !== targetDate) break
    sites.add(ref.siteId)
  }
  const out: RealiseBody[] = []
  for (const siteId of [...sites].sort()) {
    if (only && !only(siteId)) continue
    const body = realisation(deps, targetDate, siteId, companyId)
    if (body) out.push(body)
  }
  return out
}

export { CSV_HEADER, realisationCsv } from './realisation-csv.ts'

/** Today's programme against delivery over every site, for the metrics. */
export interface RealisationToday {
  /** Sum of the `short` slots' shortfalls, kWh. */
  readonly shortfallKwh: number
  /** Slots whose curtailment was broken. */
  readonly curtailmentsBroken: number
  /** Sites with at least one `short` slot. */
  readonly sitesShort: number
  /** The most `short` slots of one site (the alert of docs/operating.md). */
  readonly shortSlotsMax: number
}

interface SiteSummary { readonly shortfallKwh: number; readonly broken: number; readonly short: number }

/**
 * Today's summary, kept per site and redone only for the sites whose meter values changed
 * (`changed`, told by the metering store) when it is read: a scrape after a whole day of
 * 10,000 sites arrived pays once, without building the API's bodies.
 */
export function realisationToday (deps: RealisationDeps, today: () => string) {
  let day = ''
  const sites = new Map<string, SiteSummary>()
  const dirty = new Set<string>()
  return {
    changed (changes: ReadonlyArray<{ targetDate: string; siteId: string }>): void {
      const d = today()
      for (const c of changes) if (c.targetDate === d) dirty.add(`${c.targetDate}/${c.siteId}`)
    },
    read (): RealisationToday {
      const d = today()
      if (d !== day) { day = d; sites.clear() }
      for (const key of dirty) {
        const [date, siteId] = key.split('/') as [string, string]
        if (date === day) sites.set(siteId, summaryOf(deps, date, siteId))
      }
      dirty.clear()
      let shortfallKwh = 0
      let curtailmentsBroken = 0
      let sitesShort = 0
      let shortSlotsMax = 0
      for (const s of sites.values()) {
        shortfallKwh += s.shortfallKwh
        curtailmentsBroken += s.broken
        if (s.short > 0) sitesShort++
        if (s.short > shortSlotsMax) shortSlotsMax = s.short
      }
      return { shortfallKwh: wh(shortfallKwh), curtailmentsBroken, sitesShort, shortSlotsMax }
    },
  }
}

function summaryOf (deps: RealisationDeps, targetDate: string, siteId: string): SiteSummary {
  const body = realisation(deps, targetDate, siteId)
  if (!body) return { shortfallKwh: 0, broken: 0, short: 0 }
  return { shortfallKwh: body.totaux.manque_kwh, broken: body.totaux.verdicts.curtailment_broken, short: body.totaux.verdicts.short }
}
