/**
 * The bench's wire documents: a ~9 KB Besoins_Agreges (one site, one quarter-hour slot per
 * slot of the Paris day) and Programme_Soutirage bodies of 1, 100 and 1,000 sites × 96 slots,
 * all for the target date "tomorrow" of the server's clock, slots inside that day's coverage.
 * Deterministic: the same inputs give the same bytes, so every server gets the same work.
 * @module
 */
import { addDays, coverageOf, parisDateOf, QUARTER_HOUR_MS } from '../src/contract/paris-day.ts'
import { formatUtcInstant } from '../src/contract/instants.ts'

/**
 * `PRM` + 14 digits, the reference host's simulated site ids (PRM30000000000001, …), so
 * programmes name sites the solver manages; site 0 is the one the GET scenarios read.
 */
export function siteId (i: number): string {
  return 'PRM' + String(30_000_000_000_001 + i)
}

export function siteIds (count: number): string[] {
  return Array.from({ length: count }, (_, i) => siteId(i))
}

/** Tomorrow in Europe/Paris by `now` (the server's clock, DECISIONS.md "Time"). */
export function benchTargetDate (now: Date = new Date()): string {
  return addDays(parisDateOf(now), 1)
}

/** A cheap deterministic pseudo-random series, so documents look like data, not zeros. */
function series (seed: number): () => number {
  let x = (seed * 2_654_435_761) >>> 0 || 1
  return () => {
    x ^= x << 13; x >>>= 0
    x ^= x >>> 17
    x ^= x << 5; x >>>= 0
    return x / 0x1_0000_0000
  }
}

const round2 = (v: number) => Math.round(v * 100) / 100

/** The Besoins_Agreges A and B serve (E serves its own published revision). */
export function besoinsAgreges (targetDate: string, site = siteId(0), emittedAt = new Date()): object {
  const cov = coverageOf(targetDate)
  const start = Date.parse(cov.startUtc)
  const rnd = series(7)
  const jalons = [6, 10, 14, 18].map(h => {
    const debut = start + (h - 4) * 3_600_000
    const kwh = round2(40 + rnd() * 200)
    return {
      debut_utc: formatUtcInstant(debut),
      deadline_utc: formatUtcInstant(start + h * 3_600_000),
      valeur_kwh: kwh,
      puissance_kW: round2(kwh / 4),
    }
  })
  const puissance = Array.from({ length: cov.slots }, (_, i) => ({
    debut_utc: formatUtcInstant(start + i * QUARTER_HOUR_MS),
    fin_utc: formatUtcInstant(start + (i + 1) * QUARTER_HOUR_MS),
    p_max_kw: round2(150 + rnd() * 350),
  }))
  return {
    schema_version: 'v0.3',
    type: 'besoins_agreges',
    emitted_by: 'epx',
    emitted_at: formatUtcInstant(Math.floor(emittedAt.getTime() / 1000) * 1000),
    target_date: targetDate,
    coverage_start_utc: cov.startUtc,
    coverage_end_utc: cov.endUtc,
    slot_duration_secs: 900,
    sites: [{ site_id: site, site_name: 'Depot 1', jalons_besoin: jalons, puissance_disponible: puissance }],
  }
}

export interface ProgrammeFixture {
  readonly sites: number
  readonly slotsPerSite: number
  readonly body: string
}

/**
 * A Programme_Soutirage of `count` sites (ids 0..count-1), 96 slots each (fewer on a
 * 92-slot DST day: slots must stay inside the coverage). Some slots are 0 (curtailment).
 */
export function programme (targetDate: string, count: number, emittedAt: string): ProgrammeFixture {
  const cov = coverageOf(targetDate)
  const start = Date.parse(cov.startUtc)
  const slots = Math.min(96, cov.slots)
  const rnd = series(count)
  const stamps = Array.from({ length: slots + 1 }, (_, i) => formatUtcInstant(start + i * QUARTER_HOUR_MS))
  const sites = siteIds(count).map((id, s) => ({
    site_id: id,
    site_name: `Depot ${s + 1}`,
    energie_programmee: Array.from({ length: slots }, (_, i) => ({
      debut_utc: stamps[i],
      fin_utc: stamps[i + 1],
      energie_kwh: i % 11 === 0 ? 0 : round2(rnd() * 60),
    })),
  }))
  const doc = {
    schema_version: 'v0.2',
    type: 'programme_soutirage',
    emitted_by: 'Bench BSP',
    emitted_at: emittedAt,
    target_date: targetDate,
    slot_duration_secs: 900,
    sites,
  }
  return { sites: count, slotsPerSite: slots, body: JSON.stringify(doc) }
}

/** The instant every bench programme claims, whole seconds (its instruction ids are stable). */
export function benchEmittedAt (now: Date = new Date()): string {
  // An hour back: the open loop adds a millisecond a request, and an emitted_at ahead of
  // the server's clock by more than inbound.maxClockSkewSeconds is refused.
  return formatUtcInstant(Math.floor(now.getTime() / 1000) * 1000 - 3_600_000)
}

/** The site E pads to a realise answer's size, for the GET realise row (bench/servers/epx.ts). */
export const SAME_SIZE_SITE = 'PRM30000000000002'
