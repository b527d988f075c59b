/**
 * The reference host: a small, real stand-in for the solver daemon. It owns the
 * simulated sites, runs a solver cycle every N seconds that drains the next-cycle
 * input queue, computes each site's set-point for the current quarter-hour honouring
 * floors and curtailments within the available power, and acknowledges what it applied.
 * @module
 */
import pino from 'pino'
import type {
  Clock, Coverage, CycleApplied, Host, Logger, MeterReading, MeteringReport, Period, Site, SiteNeeds, SolverInput, SolverPort,
} from './contract.ts'
import { HOST_API_VERSION } from './contract.ts'
import { meterCorrections, simulatedNeeds, simulatedReadings, simulatedSites } from './simulated-sites.ts'
import { coverageOf, parisDateOf } from '../contract/paris-day.ts'

/** Instruction ids named in a cycle's log line; a bigger cycle says how many more. */
const MAX_LOGGED_INSTRUCTIONS = 200

/** A clock tests and demos can set; `now()` returns a fresh Date each call. */
export class ManualClock implements Clock {
  #ms: number
  constructor (iso: string | Date) { this.#ms = new Date(iso).getTime() }
  now (): Date { return new Date(this.#ms) }
  set (iso: string | Date): void { this.#ms = new Date(iso).getTime() }
  advance (ms: number): void { this.#ms += ms }
}

export const systemClock: Clock = { now: () => new Date() }

export interface ReferenceHostOptions {
  readonly dataDir: string
  readonly clock?: Clock
  readonly logger?: Logger
  /** Number of simulated sites (default 5). */
  readonly sites?: number
  /** Seconds between solver cycles; 0 = only when `runCycle()` is called (default 0). */
  readonly cycleSeconds?: number
}

/** A site's set-point for one quarter-hour, and what shaped it. */
export interface Setpoint {
  readonly slotStartUtc: string
  readonly kw: number
  readonly plannedKw: number
  readonly availableKw: number
  readonly floorKw?: number
  readonly capKw?: number
  readonly instructionId?: string
}

export interface ReferenceHost {
  readonly host: Host
  readonly sites: readonly Site[]
  /** Drains the queue, computes set-points for the current slot, acknowledges. */
  runCycle(): CycleApplied
  /** Inputs waiting for the next cycle. */
  pending(): readonly SolverInput[]
  /** The instruction in force for a site and Paris day, if any. */
  activeInput(siteId: string, targetDate: string): SolverInput | undefined
  /** Set-points of the last cycle, by site. */
  setpoints(): ReadonlyMap<string, Setpoint>
  /**
   * Host API 1.1: from now on, each cycle reports the quarter-hours that closed since the
   * last report (from the start of today at first) to `report` (the plugin's
   * `reportMetering`), as the sites' simulated meters measured them; and at 7 minutes past
   * each hour, every site's late correction of one quarter-hour of the day reported earlier
   * (logged at info level, "meter correction").
   */
  meterInto(report: (readings: readonly MeterReading[]) => Promise<MeteringReport>): void
  /**
   * The simulated meter readings of every site over `[fromMs, toMs)` (whole quarter-hours),
   * against the inputs in force, with the corrections due by `asOfMs` (default: now).
   */
  meterReadings(fromMs: number, toMs: number, asOfMs?: number): MeterReading[]
  /** Starts the periodic cycle (no-op when cycleSeconds is 0). */
  start(): void
  close(): Promise<void>
}

export function createReferenceHost (opts: ReferenceHostOptions): ReferenceHost {
  const clock = opts.clock ?? systemClock
  const logger = opts.logger ?? (pino({ level: 'silent' }) as unknown as Logger)
  const sites = simulatedSites(opts.sites ?? 5)
  const siteIds = new Set(sites.map(s => s.site_id))
  let queue: SolverInput[] = []
  const active = new Map<string, SolverInput>()          // `${siteId}/${targetDate}` → input
  const listeners = new Set<(r: CycleApplied) => void>()
  let lastSetpoints = new Map<string, Setpoint>()
  let cycle = 0
  let timer: NodeJS.Timeout | undefined
  let meterSink: ((readings: readonly MeterReading[]) => Promise<MeteringReport>) | undefined
  let meteredUntilMs = 0
  let correctedUntilMs = 0

  const solver: SolverPort = {
    async sites () { return sites },
    async needs (siteId: string, coverage: Coverage): Promise<SiteNeeds> {
      if (!siteIds.has(siteId)) throw new Error(`unknown site ${siteId}`)
      return simulatedNeeds(siteId, coverage)
    },
    enqueueNextCycle (inputs) { queue.push(...inputs) },
    onCycleApplied (listener) {
      listeners.add(listener)
      return () => { listeners.delete(listener) }
    },
  }

  const host: Host = { apiVersion: HOST_API_VERSION, logger, clock, dataDir: opts.dataDir, solver }

  function runCycle (): CycleApplied {
    cycle++
    const now = clock.now()
    const drained = queue
    queue = []
    // The latest input of a (site, day) replaces earlier ones, in queue order.
    for (const input of drained) active.set(`${input.siteId}/${input.targetDate}`, input)
    lastSetpoints = computeSetpoints(now)
    const report: CycleApplied = {
      cycle,
      at: now.toISOString(),
      inputs: drained.map(i => ({ instructionId: i.instructionId, siteId: i.siteId })),
    }
    if (drained.length) {
      // Which programmes it applied, as an operator (or a test) checks that one reached it.
      const ids = [...new Set(drained.map(i => i.instructionId))]
      logger.info({
        cycle, applied: drained.length, instructions: ids.slice(0, MAX_LOGGED_INSTRUCTIONS),
        ...(ids.length > MAX_LOGGED_INSTRUCTIONS ? { moreInstructions: ids.length - MAX_LOGGED_INSTRUCTIONS } : {}),
      }, 'solver cycle applied inputs')
    }
    for (const l of listeners) {
      try { l(report) } catch (err) { logger.error({ err }, 'cycle listener failed') }
    }
    if (meterSink) meter(now.getTime())
    return report
  }

  /**
   * Reports the quarter-hours closed since the last report and, once an hour, the late
   * correction of a quarter-hour reported earlier (`meterCorrections`): real meter data
   * arrives corrected now and then, and a BSP polling the realisation read sees it as a new
   * ETag. One batch, so a correction never lands before the value it corrects.
   */
  function meter (nowMs: number): void {
    const closedMs = Math.floor(nowMs / 900_000) * 900_000
    const readings = closedMs > meteredUntilMs ? meterReadings(meteredUntilMs, closedMs, nowMs) : []
    // Corrected slots this batch already carries (closed since the last report) are not sent twice.
    const corrected = [...new Set(meterCorrections(correctedUntilMs, nowMs).map(c => c.slotMs))].filter(ms => ms < meteredUntilMs)
    for (const slotMs of corrected) {
      const before = meterReadings(slotMs, slotMs + 900_000, correctedUntilMs)
      const after = meterReadings(slotMs, slotMs + 900_000, nowMs)
      readings.push(...after)
      logger.info({
        startUtc: after[0]?.startUtc, endUtc: after[0]?.endUtc, sites: after.length,
        changes: after.slice(0, 5).map((r, i) => ({ siteId: r.siteId, kwh: r.kwh, previousKwh: before[i]?.kwh })),
      }, 'meter correction: a quarter-hour already reported is reported again with a corrected value')
    }
    meteredUntilMs = Math.max(meteredUntilMs, closedMs)
    correctedUntilMs = nowMs
    if (readings.length === 0) return
    meterSink!(readings).then(
      r => { if (r.refusedCount) logger.warn({ refused: r.refused.slice(0, 3), count: r.refusedCount }, 'meter readings refused') },
      err => logger.error({ err }, 'meter readings not taken'))
  }

  function meterReadings (fromMs: number, toMs: number, asOfMs = clock.now().getTime()): MeterReading[] {
    return simulatedReadings(sites.map(s => s.site_id), fromMs, toMs, (siteId, date, ms) =>
      active.get(`${siteId}/${date}`)?.periods.find(p => Date.parse(p.startUtc) <= ms && ms < Date.parse(p.endUtc)), asOfMs)
  }

  function computeSetpoints (now: Date): Map<string, Setpoint> {
    const date = parisDateOf(now)
    const coverage = coverageOf(date)
    const slot = Math.floor((now.getTime() - Date.parse(coverage.startUtc)) / 900_000)
    const slotStartMs = Date.parse(coverage.startUtc) + slot * 900_000
    const out = new Map<string, Setpoint>()
    for (const site of sites) {
      const needs = simulatedNeeds(site.site_id, coverage)
      const availableKw = needs.availablePowerKw[slot] ?? 0
      const plannedKw = plannedPower(needs, now.getTime())
      const input = active.get(`${site.site_id}/${date}`)
      const period = input?.periods.find(p => Date.parse(p.startUtc) <= now.getTime() && now.getTime() < Date.parse(p.endUtc))
      out.set(site.site_id, {
        slotStartUtc: new Date(slotStartMs).toISOString(),
        kw: honour(plannedKw, availableKw, period),
        plannedKw,
        availableKw,
        floorKw: period?.minKw,
        capKw: period?.maxKw,
        instructionId: period ? input!.instructionId : undefined,
      })
    }
    return out
  }

  return {
    host,
    sites,
    runCycle,
    pending: () => [...queue],
    activeInput: (siteId, targetDate) => active.get(`${siteId}/${targetDate}`),
    setpoints: () => lastSetpoints,
    meterInto (report) {
      meterSink = report
      meteredUntilMs = Date.parse(coverageOf(parisDateOf(clock.now())).startUtc)
      // The first report carries the corrections already due today; later ones, each as it falls due.
      correctedUntilMs = clock.now().getTime()
    },
    meterReadings,
    start () {
      const seconds = opts.cycleSeconds ?? 0
      if (seconds > 0 && !timer) timer = setInterval(runCycle, seconds * 1000)
    },
    async close () {
      if (timer) clearInterval(timer)
      timer = undefined
      listeners.clear()
    },
  }
}

/** What the solver would do alone: charge each open milestone at its power. */
function plannedPower (needs: SiteNeeds, nowMs: number): number {
  let kw = 0
  for (const m of needs.milestones) {
    if (Date.parse(m.startUtc) <= nowMs && nowMs < Date.parse(m.deadlineUtc)) kw += m.powerKw
  }
  return kw
}

/**
 * A floor is reached at minimum (overshoot is not credited, so no more than needed),
 * a curtailment caps the load, and nothing exceeds the power physically available.
 */
export function honour (plannedKw: number, availableKw: number, period?: Period): number {
  let kw = plannedKw
  if (period?.minKw !== undefined) kw = Math.max(kw, period.minKw)
  if (period?.maxKw !== undefined) kw = Math.min(kw, period.maxKw)
  return Math.round(Math.min(kw, availableKw) * 1000) / 1000
}
