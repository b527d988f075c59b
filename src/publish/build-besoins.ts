/**
 * Host needs → Besoins_Agreges document: the one place where the solver's camelCase
 * becomes the contract's wire names (STYLE.md §2, one file per direction).
 * @module
 */
import type { Coverage, Site, SiteNeeds } from '../host/contract.ts'
import {
  BESOINS_SCHEMA_VERSION, BESOINS_SLOT_SECS, BESOINS_TYPE,
  type BesoinsAgreges, type JalonBesoin, type PuissanceDisponible,
} from '../contract/besoins-agreges.ts'
import { formatUtcInstant, readUtcInstant, utcInstantMs } from '../contract/instants.ts'
import { isPrm } from '../contract/ids.ts'
import { QUARTER_HOUR_MS } from '../contract/paris-day.ts'

/** A document without its emission time: `emitted_at` is the revision store's to decide. */
export type BesoinsDraft = Omit<BesoinsAgreges, 'emitted_at'>

/** Thrown for needs the contract cannot carry; the run reports the site as failed. */
export class NeedsShapeError extends Error {
  override name = 'NeedsShapeError'
}

/**
 * Slot boundaries of a coverage, computed once per target date and shared by every
 * site of a run (10,000 sites reuse the same 92/96/100 strings).
 */
export function slotBoundaries (coverage: Coverage): readonly string[] {
  const start = utcInstantMs(coverage.startUtc)
  const out = new Array<string>(coverage.slots + 1)
  for (let i = 0; i <= coverage.slots; i++) out[i] = formatUtcInstant(start + i * QUARTER_HOUR_MS)
  return out
}

/**
 * A site's needs once checked: what its document is made from, kept by a publication run
 * from the site's turn until its commit (and read again only if a commit must re-render
 * it): a copy of the powers (the solver may reuse its arrays) and the milestones in
 * wire form, ~1 KB, where the document's objects are ~7 KB
 * (bench/README.md#a-publications-garbage).
 */
export interface CheckedNeeds {
  readonly site: Site
  readonly jalons: JalonBesoin[]
  readonly power: readonly number[]
}

/** Checks a site's needs against its day. */
export function checkNeeds (site: Site, needs: SiteNeeds, coverage: Coverage): CheckedNeeds {
  // The serializer writes site_id unescaped: only a PRM id may reach it.
  if (!isPrm(site.site_id)) throw new NeedsShapeError(`site id is not PRM followed by 14 digits: ${String(site.site_id).slice(0, 40)}`)
  if (typeof site.site_name !== 'string') throw new NeedsShapeError('site name is not a string')
  const kws = needs.availablePowerKw
  // DECISIONS.md "Besoins_Agreges publication": one slot per quarter-hour of the coverage.
  if (!Array.isArray(kws) || kws.length !== coverage.slots) {
    throw new NeedsShapeError(`solver gave ${Array.isArray(kws) ? kws.length : 'no'} available-power slots, the day has ${coverage.slots}`)
  }
  const power = new Array<number>(coverage.slots)
  for (let i = 0; i < coverage.slots; i++) {
    const kw = kws[i]!
    if (!Number.isFinite(kw)) throw new NeedsShapeError(`available power of slot ${i} is not a finite number`)
    power[i] = kw
  }
  const jalons: JalonBesoin[] = needs.milestones.map((m, i) => ({
    debut_utc: wireInstant(m.startUtc, `milestone ${i} start`),
    deadline_utc: wireInstant(m.deadlineUtc, `milestone ${i} deadline`),
    valeur_kwh: finite(m.energyKwh, `milestone ${i} energy`),
    puissance_kW: finite(m.powerKw, `milestone ${i} power`),
  }))
  return { site, jalons, power }
}

/** The document of checked needs, without its emission time. */
export function besoinsOf (checked: CheckedNeeds, coverage: Coverage, emittedBy: string, boundaries: readonly string[] = slotBoundaries(coverage)): BesoinsDraft {
  const puissance = new Array<PuissanceDisponible>(coverage.slots)
  for (let i = 0; i < coverage.slots; i++) {
    puissance[i] = { debut_utc: boundaries[i]!, fin_utc: boundaries[i + 1]!, p_max_kw: checked.power[i]! }
  }
  return {
    schema_version: BESOINS_SCHEMA_VERSION,
    type: BESOINS_TYPE,
    emitted_by: emittedBy,
    target_date: coverage.targetDate,
    coverage_start_utc: coverage.startUtc,
    coverage_end_utc: coverage.endUtc,
    slot_duration_secs: BESOINS_SLOT_SECS,
    sites: [{ site_id: checked.site.site_id, site_name: checked.site.site_name, jalons_besoin: checked.jalons, puissance_disponible: puissance }],
  }
}

/** One site's document for one Paris day (one site per document: the pair is the storage key). */
export function buildBesoins (args: {
  site: Site
  needs: SiteNeeds
  coverage: Coverage
  emittedBy: string
  boundaries?: readonly string[]
}): BesoinsDraft {
  return besoinsOf(checkNeeds(args.site, args.needs, args.coverage), args.coverage, args.emittedBy, args.boundaries)
}

/** The draft with its emission time, fields in contract order (the serializer orders them anyway). */
export function withEmittedAt (draft: BesoinsDraft, emittedAt: string): BesoinsAgreges {
  return {
    schema_version: draft.schema_version,
    type: draft.type,
    emitted_by: draft.emitted_by,
    emitted_at: emittedAt,
    target_date: draft.target_date,
    coverage_start_utc: draft.coverage_start_utc,
    coverage_end_utc: draft.coverage_end_utc,
    slot_duration_secs: draft.slot_duration_secs,
    sites: draft.sites,
  }
}

// DECISIONS.md "Time": every instant on the wire is UTC with `Z`; normalise the host's spelling.
function wireInstant (text: string, what: string): string {
  const at = readUtcInstant(text)
  if (typeof at === 'string') throw new NeedsShapeError(`${what} is not an ISO 8601 UTC instant: ${at}`)
  // Already canonical (`…:00Z`, no fraction): keep the string.
  if (text.length === 20) return text
  return formatUtcInstant(at.ms, at.nanos)
}

function finite (n: number, what: string): number {
  if (!Number.isFinite(n)) throw new NeedsShapeError(`${what} is not a finite number`)
  return n
}
