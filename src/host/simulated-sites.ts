/**
 * Deterministic, EV-fleet-like sites for the reference host: the same site and day
 * always give the same needs, so demos, tests and benchmarks are repeatable.
 * @module
 */
import { createHash } from 'node:crypto'
import type { Coverage, MeterReading, Site, SiteNeeds } from './contract.ts'
import { coverageOf, parisDateOf, parisDayMs } from '../contract/paris-day.ts'
import { parisHoursOf } from './paris-hours.ts'

/** `count` sites with stable PRM ids: PRM30000000000001, PRM30000000000002, … */
export function simulatedSites (count: number): Site[] {
  return Array.from({ length: count }, (_, i) => ({
    site_id: 'PRM' + String(30_000_000_000_001 + i),
    site_name: `Depot ${i + 1}`,
  }))
}

/** A small PRNG (mulberry32) seeded from the site and day. */
function rng (seedText: string): () => number {
  let a = createHash('sha256').update(seedText).digest().readUInt32LE(0)
  return () => {
    a = (a + 0x6D2B79F5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const round1 = (x: number) => Math.round(x * 10) / 10

/** The site's connection limit in kW (stable for a site, whatever the day). */
function siteLimitKw (siteId: string): number {
  return 100 + Math.floor(rng(siteId)() * 30) * 10
}

/**
 * Needs of a simulated depot over a Paris day: vehicles plugged overnight must be
 * charged by 07:00, a second wave by 22:00; the building's own load leaves less power
 * available in working hours.
 */
export function simulatedNeeds (siteId: string, coverage: Coverage): SiteNeeds {
  const r = rng(`${siteId}/${coverage.targetDate}`)
  const limit = siteLimitKw(siteId)
  const start = Date.parse(coverage.startUtc)
  const hours = parisHoursOf(coverage)
  const availablePowerKw: number[] = []
  for (let i = 0; i < coverage.slots; i++) {
    const hour = hours[i]!
    const building = hour >= 8 && hour < 19 ? 0.35 : 0.1
    availablePowerKw.push(round1(limit * (1 - building - r() * 0.05)))
  }
  // Paris wall-clock hour h of the day, as a wire instant (DST-safe: looked up, not added).
  const at = (h: number) => {
    const i = hours.indexOf(h)
    return new Date(start + (i < 0 ? coverage.slots : i) * 900_000).toISOString().replace('.000Z', 'Z')
  }
  const vehicles = 4 + Math.floor(r() * 20)
  const night = round1(vehicles * (20 + r() * 30))
  const evening = round1(vehicles * 0.5 * (10 + r() * 20))
  return {
    milestones: [
      { startUtc: at(0), deadlineUtc: at(7), energyKwh: night, powerKw: round1(Math.min(limit * 0.9, night / 7)) },
      { startUtc: at(17), deadlineUtc: at(22), energyKwh: evening, powerKw: round1(Math.min(limit * 0.6, evening / 5)) },
    ],
    availablePowerKw,
  }
}

/**
 * What a simulated site's meter measured over one quarter-hour, kWh: a floor is drawn,
 * a little over, most of the time, and falls short now and then; a curtailment is
 * respected most of the time; an unconstrained slot follows the solver's own plan
 * (`plannedKw`). Seeded by site and slot, so a day measured again reads the same.
 */
export function simulatedMeterKwh (siteId: string, slotStartMs: number, plannedKw: number, period?: { minKw?: number; maxKw?: number }): number {
  const r = rng(`${siteId}/meter/${slotStartMs}`)
  const noise = r()
  let kwh: number
  if (period?.maxKw === 0) kwh = r() < 0.9 ? 0 : 0.5 + r() * 4
  else if (period?.minKw !== undefined) {
    const floor = Math.max(plannedKw, period.minKw) / 4
    kwh = r() < 0.85 ? floor * (1 + noise * 0.04) : floor * (0.6 + noise * 0.35)
  } else kwh = plannedKw / 4 * (0.9 + noise * 0.2)
  return Math.round(kwh * 1000) / 1000
}

const HOUR_MS = 3_600_000

/**
 * When the simulated meters send a late correction: this long after the start of each hour,
 * between two quarter-hour closings, so a change of the realisation read at that moment is
 * the correction's alone.
 */
export const METER_CORRECTION_DELAY_MS = 7 * 60_000

/**
 * The quarter-hour the simulated meters correct in the hour starting at `hourMs` (UTC, a
 * whole hour): one of the Paris day's quarter-hours closed before that hour, chosen by a
 * generator seeded with the hour; none in the day's first hour.
 */
export function correctedSlotMs (hourMs: number): number | undefined {
  const { startMs } = parisDayMs(parisDateOf(new Date(hourMs)))
  const closed = Math.floor((hourMs - startMs) / 900_000)
  if (closed < 1) return undefined
  return startMs + Math.floor(rng(`meter-correction/${hourMs}`)() * closed) * 900_000
}

/** The corrections due in `(afterMs, untilMs]`: each as the slot corrected and the hour that corrects it, in time order. */
export function meterCorrections (afterMs: number, untilMs: number): Array<{ slotMs: number; hourMs: number }> {
  const out: Array<{ slotMs: number; hourMs: number }> = []
  for (let h = Math.floor((afterMs - METER_CORRECTION_DELAY_MS) / HOUR_MS + 1) * HOUR_MS; h + METER_CORRECTION_DELAY_MS <= untilMs; h += HOUR_MS) {
    const slotMs = correctedSlotMs(h)
    if (slotMs !== undefined) out.push({ slotMs, hourMs: h })
  }
  return out
}

/** A site's late-corrected value of a quarter-hour measured `measuredKwh` at first: a few per cent off, never the same. */
function correctedKwh (siteId: string, slotMs: number, hourMs: number, measuredKwh: number): number {
  const r = rng(`${siteId}/meter-correction/${slotMs}/${hourMs}`)
  const sign = r() < 0.5 ? -1 : 1
  let kwh = Math.round(measuredKwh * (1 + sign * (0.03 + r() * 0.09)) * 1000) / 1000
  if (kwh === measuredKwh) kwh = Math.round((measuredKwh + 0.1 + r() * 0.4) * 1000) / 1000
  return kwh
}

/**
 * The simulated meter readings of `siteIds` over the whole quarter-hours of `[fromMs, toMs)`,
 * against the constraint in force in each (`periodAt`): what the reference host reports as
 * slots close, and what `epx demo` seeds for the day before. With `asOfMs`, as the meters
 * know them then: the late corrections due by that instant (`meterCorrections`) replace the
 * first values, so a host that reports a day again reports what it reported last.
 */
export function simulatedReadings (siteIds: readonly string[], fromMs: number, toMs: number,
  periodAt: (siteId: string, targetDate: string, ms: number) => { minKw?: number; maxKw?: number } | undefined,
  asOfMs?: number): MeterReading[] {
  const out: MeterReading[] = []
  const needsOf = new Map<string, SiteNeeds>()
  let day = { date: '', startMs: 0, endMs: 0 }
  // slot → the hour of its latest correction due by `asOfMs`, for the day being read.
  let correctedBy = new Map<number, number>()
  for (let ms = Math.ceil(fromMs / 900_000) * 900_000; ms + 900_000 <= toMs; ms += 900_000) {
    if (!(ms >= day.startMs && ms < day.endMs)) {
      const date = parisDateOf(new Date(ms))
      day = { date, ...parisDayMs(date) }
      correctedBy = new Map()
      if (asOfMs !== undefined) {
        for (const c of meterCorrections(day.startMs - 1, Math.min(asOfMs, day.endMs - 1 + METER_CORRECTION_DELAY_MS))) {
          if (c.hourMs < day.endMs) correctedBy.set(c.slotMs, c.hourMs)
        }
      }
    }
    const slot = (ms - day.startMs) / 900_000
    const startUtc = new Date(ms).toISOString().replace('.000Z', 'Z')
    const endUtc = new Date(ms + 900_000).toISOString().replace('.000Z', 'Z')
    for (const siteId of siteIds) {
      let needs = needsOf.get(`${siteId}/${day.date}`)
      if (!needs) needsOf.set(`${siteId}/${day.date}`, needs = simulatedNeeds(siteId, coverageOf(day.date)))
      let plannedKw = 0
      for (const m of needs.milestones) if (Date.parse(m.startUtc) <= ms && ms < Date.parse(m.deadlineUtc)) plannedKw += m.powerKw
      plannedKw = Math.min(plannedKw, needs.availablePowerKw[slot] ?? 0)
      const measured = simulatedMeterKwh(siteId, ms, plannedKw, periodAt(siteId, day.date, ms))
      const hourMs = correctedBy.get(ms)
      out.push({ siteId, startUtc, endUtc, kwh: hourMs === undefined ? measured : correctedKwh(siteId, ms, hourMs, measured) })
    }
  }
  return out
}
