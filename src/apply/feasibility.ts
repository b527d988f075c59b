/**
 * Instructions checked against the needs epx published: a slot whose floor exceeds the
 * site's available power in the latest Besoins_Agreges of that day, or a day whose
 * programmed energy exceeds what its milestones need or its available power can take,
 * is flagged. The instruction is applied all the same (the solver decides); the flag is
 * data for people (`epx instructions show`), stored with the instruction
 * (`programme-records.ts`), and logged at `warn` (`flaggedWarnings`).
 * @module
 */
import type { BesoinsAgreges } from '../contract/besoins-agreges.ts'
import { slotRange, type InstructionBatch } from '../contract/instruction.ts'
import { utcInstantMs } from '../contract/instants.ts'
import type { Logger } from '../host/contract.ts'
import type { RevisionMeta, Revisions } from '../store/revisions.ts'
import { BoundedCache } from '../bounded-cache.ts'
import { readableFlag, type FlagFound, type SiteFlag } from '../store/instruction-flags.ts'
import { powerKw } from './to-constraints.ts'

/** Rounding noise of kWh ↔ kW conversions is not infeasibility. */
const EPSILON = 1e-6
const QUARTER_MS = 900_000
const SITES_PER_TURN = 64

/** The needs of one site and day, as the check reads them. */
export interface SiteNeedsSeen {
  readonly emittedAt: string
  /**
   * p_max_kw by quarter-hour, from `firstMs` on (NaN where the document gives none): read
   * by index, 96 times a site, where a map of instants cost a small POST ~2 µs.
   */
  // load-bearing: POST 1 × 96, −2 µs a POST (bench/README.md#what-a-saved-programme-keeps-alive)
  readonly availableKw: Float64Array
  readonly firstMs: number
  /** What the available power could deliver over the day. */
  readonly availableKwh: number
  readonly needsKwh: number
}

/** Reads the site's part of a published document. */
export function needsOf (doc: BesoinsAgreges): SiteNeedsSeen {
  const site = doc.sites[0]!
  let availableKwh = 0
  for (const p of site.puissance_disponible) availableKwh += p.p_max_kw / 4
  const power = availablePower(site.puissance_disponible.map(p => [utcInstantMs(p.debut_utc), p.p_max_kw]))
  return { emittedAt: doc.emitted_at, ...power, availableKwh, needsKwh: site.jalons_besoin.reduce((n, j) => n + j.valeur_kwh, 0) }
}

/** A day has at most 100 quarter-hours: a document spanning more than twice that is read over its first 200. */
const MAX_QUARTERS = 200

/** Available power by quarter-hour (`SiteNeedsSeen.availableKw`) from (start ms, kW) pairs. */
export function availablePower (slots: ReadonlyArray<readonly [startMs: number, kw: number]>): Pick<SiteNeedsSeen, 'availableKw' | 'firstMs'> {
  const firstMs = slots.reduce((min, [ms]) => Math.min(min, ms), Infinity)
  if (firstMs === Infinity) return { availableKw: new Float64Array(0), firstMs: 0 }
  const lastMs = slots.reduce((max, [ms]) => Math.max(max, ms), -Infinity)
  const availableKw = new Float64Array(Math.min(MAX_QUARTERS, Math.floor((lastMs - firstMs) / QUARTER_MS) + 1)).fill(NaN)
  // The contract's slots are quarter-hours: a start off that grid is never a slot's.
  for (const [ms, kw] of slots) {
    const at = (ms - firstMs) / QUARTER_MS
    if (Number.isInteger(at) && at < availableKw.length) availableKw[at] = kw
  }
  return { availableKw, firstMs }
}

/** The available power of the quarter-hour starting at `startMs`; undefined when the needs give none. */
function availableAt (needs: SiteNeedsSeen, startMs: number): number | undefined {
  const kw = needs.availableKw[(startMs - needs.firstMs) / QUARTER_MS]
  return kw === undefined || Number.isNaN(kw) ? undefined : kw
}

/** The flag of slots `[from, to)` of a batch against a site's needs; undefined when feasible. */
export function checkSlots (batch: Pick<InstructionBatch, 'starts' | 'kwh' | 'slotDurationSecs'>, from: number, to: number, needs: SiteNeedsSeen): FlagFound | undefined {
  /** [start ms, floor kW, available kW] per infeasible slot (readableFlag makes them text). */
  const slots: number[] = []
  let programmedKwh = 0
  const quarters = Math.max(1, Math.round(batch.slotDurationSecs * 1000 / QUARTER_MS))
  for (let k = from; k < to; k++) {
    const energy = batch.kwh[k]!
    if (!(energy > 0)) continue
    const floorKw = powerKw(energy, batch.slotDurationSecs)
    // No constraint, as to-constraints.ts makes it: a non-finite floor is never stored (the rules refuse it: DECISIONS.md "Inbound", sanity bound).
    if (!(floorKw < Infinity)) continue
    programmedKwh += energy
    // A slot longer than a quarter-hour needs its floor in each quarter-hour it covers.
    let available = Infinity
    for (let q = 0; q < quarters; q++) {
      const kw = availableAt(needs, batch.starts[k]! + q * QUARTER_MS)
      if (kw !== undefined && kw < available) available = kw
    }
    if (available !== Infinity && floorKw > available + EPSILON) slots.push(batch.starts[k]!, floorKw, available)
  }
  const powerKwh = needs.availableKwh
  const overNeeds = programmedKwh > needs.needsKwh + EPSILON
  const overPower = programmedKwh > powerKwh + EPSILON
  if (slots.length === 0 && !overNeeds && !overPower) return undefined
  return {
    checkedAgainst: needs.emittedAt,
    slots,
    ...(overNeeds || overPower ? { day: { programmedKwh, needsKwh: needs.needsKwh, availableKwh: powerKwh } } : {}),
  }
}

/**
 * The needs of a revision, parsed once: keyed by its ETag (a hash of its bytes, so the
 * same key is the same document whatever the store), because a BSP posting every few
 * minutes for the same sites would otherwise parse the same Besoins_Agreges each time
 * (~9 KB of JSON per site: most of a small POST's CPU).
 */
const NEEDS_SEEN = new BoundedCache<string, SiteNeedsSeen | undefined>(20_000)

function readNeeds (_etag: string, { meta, revisions }: { meta: RevisionMeta; revisions: FeasibilityDeps['revisions'] }): SiteNeedsSeen | undefined {
  const bytes = revisions.bytesOf(meta)
  return bytes ? needsOf(JSON.parse(bytes.toString('utf8')) as BesoinsAgreges) : undefined
}

export interface FeasibilityDeps {
  readonly revisions: Pick<Revisions, 'latest' | 'bytesOf'>
}

/**
 * Checks every site of a batch against the latest published needs of its day, a few
 * sites per event-loop turn (the solver shares the loop); resolves to the flagged sites.
 * A site with no published needs is not checked. Never rejects: a check that cannot run
 * is logged and flags nothing (the instruction is applied either way).
 */
export async function flagsOf (batch: InstructionBatch, deps: FeasibilityDeps, log: Logger): Promise<SiteFlag[]> {
  const flagged: SiteFlag[] = []
  try {
    for (let i = 0; i < batch.siteIds.length; i++) {
      if (i > 0 && i % SITES_PER_TURN === 0) await new Promise<void>(resolve => setImmediate(resolve))
      const siteId = batch.siteIds[i]!
      const meta = deps.revisions.latest(siteId, batch.targetDate)
      const needs = meta && NEEDS_SEEN.getOrCompute(meta.etag, readNeeds, { meta, revisions: deps.revisions })
      if (!needs) continue
      const [from, to] = slotRange(batch, i)
      const flag = checkSlots(batch, from, to, needs)
      if (flag) flagged.push({ siteId, flag })
    }
  } catch (err) {
    log.warn({ instructionId: batch.instructionId, err }, 'could not check the instruction against the needs')
    return []
  }
  return flagged
}

/** One full warn line per company per window; the rest of the window is one summary line. */
const WARN_WINDOW_MS = 60_000

/** The warn lines of flagged programmes (docs/operating.md, "What is infeasible": one `warn` line, not a flood). */
export interface FlaggedWarnings {
  /** After the save: a full line, or counted into the company's summary line. */
  warn(batch: InstructionBatch, flagged: readonly SiteFlag[], companyId: string, atMs: number): void
  /** Logs the summaries still waiting (close). */
  flush(): void
}

/**
 * Each flagged programme is logged, but a BSP re-posting an infeasible programme every few
 * seconds is not a line each: the first of a company's window gets the full line (the
 * instruction, its first flagged site and slot), the others of that minute one summary
 * line when the window ends (how many, the last instruction id). The flags themselves
 * are all stored (`epx instructions show`) and counted (`epx_instructions_total{status="infeasible"}`).
 */
export function flaggedWarnings (log: Logger, windowMs = WARN_WINDOW_MS): FlaggedWarnings {
  const windows = new Map<string, { endsMs: number; more: number; sites: number; lastInstructionId: string; timer?: NodeJS.Timeout }>()
  const summarise = (companyId: string): void => {
    const w = windows.get(companyId)
    windows.delete(companyId)
    if (!w?.more) return
    clearTimeout(w.timer)
    log.warn({ companyId, instructions: w.more, sites: w.sites, lastInstructionId: w.lastInstructionId, windowSeconds: windowMs / 1000 },
      `${w.more} more instruction(s) from this company asked more than their sites can take in the last minute: applied anyway, the solver decides; see epx instructions show`)
  }
  return {
    warn (batch, flagged, companyId, atMs) {
      const first = flagged[0]
      if (!first) return
      const w = windows.get(companyId)
      if (w && atMs < w.endsMs) {
        w.more++
        w.sites += flagged.length
        w.lastInstructionId = batch.instructionId
        w.timer ??= setTimeout(() => summarise(companyId), Math.max(0, w.endsMs - atMs)).unref()
        return
      }
      if (w) summarise(companyId)
      windows.set(companyId, { endsMs: atMs + windowMs, more: 0, sites: 0, lastInstructionId: batch.instructionId })
      log.warn({
        companyId, instructionId: batch.instructionId, targetDate: batch.targetDate, sites: flagged.length, firstSite: first.siteId,
        firstSlot: readableFlag({ ...first.flag, slots: first.flag.slots.slice(0, 3) }).infeasibleSlots[0], day: first.flag.day,
      }, 'instruction asks more than the site can take (floor over the available power, or more energy than the needs): applied anyway, the solver decides; see epx instructions show')
    },
    flush () {
      for (const companyId of [...windows.keys()]) summarise(companyId)
    },
  }
}
