/**
 * Programme against delivery (docs/http-api.md "Programme against delivery"): a site's day
 * compared slot by slot with the effective instruction, from the stored meter values
 * (`store/metering.ts`). The same answer for the BSP (GET realise), the CLI (`epx realise`)
 * and the console.
 * @module
 */
import { createHash } from 'node:crypto'
import { parisDayMs } from '../contract/paris-day.ts'
import { instantText } from '../contract/instant-text.ts'
import { VERDICTS, type Creneau, type RealiseBody, type Verdict } from '../contract/realise.ts'
import type { Instructions } from '../store/instructions.ts'
import type { Metering } from '../store/metering.ts'

export type { RealiseBody, Creneau, Verdict }

const SLOT_MS = 900_000

export interface Tolerance {
  /** `delivery.toleranceKwh`: the least tolerance, and what a curtailment may draw. */
  readonly toleranceKwh: number
  /** `delivery.tolerancePercent`: of the slot's programmed energy, when larger. */
  readonly tolerancePercent: number
}

export interface RealisationDeps {
  readonly instructions: Pick<Instructions, 'effectiveOf' | 'slotsOf'>
  readonly metering: Pick<Metering, 'get'>
  readonly tolerance: Tolerance
}

/** kWh as the wire shows them: to the Wh. */
const wh = (v: number): number => Math.round(v * 1000) / 1000

/**
 * The day of `siteId` on `targetDate`. `companyId`: the comparison is against the effective
 * instruction only when that company sent it (a BSP never sees another's programme);
 * undefined: whoever sent it (the operator). Undefined when there is nothing to tell:
 * no instruction to compare with and no meter value.
 */
export function realisation (deps: RealisationDeps, targetDate: string, siteId: string, companyId?: string): RealiseBody | undefined {
  const { startMs, endMs } = parisDayMs(targetDate)
  const n = (endMs - startMs) / SLOT_MS
  const effective = deps.instructions.effectiveOf(targetDate, siteId)
  const instruction = effective && (companyId === undefined || effective.companyId === companyId) ? effective : undefined
  const metered = deps.metering.get(targetDate, siteId)?.kwh
  if (!instruction && !metered) return undefined

  // Programmed kWh per quarter-hour, NaN where none: a longer slot spreads evenly over its quarter-hours.
  const programmed = new Float64Array(n).fill(NaN)
  const slots = instruction && deps.instructions.slotsOf(instruction.instructionId, siteId)
  if (slots) {
    const quarters = Math.max(1, Math.round(slots.slotDurationSecs * 1000 / SLOT_MS))
    for (let k = 0; k < slots.starts.length; k++) {
      for (let q = 0; q < quarters; q++) {
        const i = (slots.starts[k]! - startMs) / SLOT_MS + q
        if (i >= 0 && i < n) programmed[i] = slots.kwh[k]! / quarters
      }
    }
  }

  const counts = Object.fromEntries(VERDICTS.map(v => [v, 0])) as Record<Verdict, number>
  let programmedTotal = 0
  let deliveredTotal = 0
  let shortfallTotal = 0
  const creneaux: Creneau[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const p = programmed[i]!
    const d = metered?.[i] ?? NaN
    const verdict = verdictOf(p, d, deps.tolerance)
    counts[verdict]++
    if (!Number.isNaN(p)) programmedTotal += p
    if (!Number.isNaN(d)) deliveredTotal += d
    const creneau: Creneau = {
      debut_utc: instantText(startMs + i * SLOT_MS),
      fin_utc: instantText(startMs + (i + 1) * SLOT_MS),
      energie_programmee_kwh: Number.isNaN(p) ? null : wh(p),
      energie_realisee_kwh: Number.isNaN(d) ? null : wh(d),
      verdict,
    }
    if (verdict === 'short') {
      const shortfall = wh(p - d)
      shortfallTotal += shortfall
      creneaux[i] = { ...creneau, manque_kwh: shortfall }
    } else {
      creneaux[i] = creneau
    }
  }
  return {
    site_id: siteId,
    target_date: targetDate,
    instruction_id: instruction?.instructionId ?? null,
    creneaux,
    totaux: {
      energie_programmee_kwh: wh(programmedTotal),
      energie_realisee_kwh: wh(deliveredTotal),
      manque_kwh: wh(shortfallTotal),
      verdicts: counts,
    },
  }
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
  readonly instructions: Pick<Instructions, 'effectiveOf' | 'slotsOf' | 'effectiveFrom'>
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

export const CSV_HEADER = ['site_id', 'target_date', 'instruction_id', 'debut_utc', 'fin_utc', 'energie_programmee_kwh', 'energie_realisee_kwh', 'verdict', 'manque_kwh'] as const

/**
 * A day as CSV (RFC 4180, CRLF, a header row): one row per site and quarter-hour, numbers
 * with a dot and no thousands separator, an empty cell where there is no value, so a
 * spreadsheet's sums equal the totals.
 */
export function realisationCsv (bodies: readonly RealiseBody[]): string {
  const cell = (v: string | number | null | undefined) => v === null || v === undefined ? '' : String(v)
  const lines = [CSV_HEADER.join(',')]
  for (const b of bodies) {
    for (const c of b.creneaux) {
      lines.push([b.site_id, b.target_date, cell(b.instruction_id), c.debut_utc, c.fin_utc, cell(c.energie_programmee_kwh), cell(c.energie_realisee_kwh), c.verdict, cell(c.manque_kwh)].join(','))
    }
  }
  return lines.join('\r\n') + '\r\n'
}

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
