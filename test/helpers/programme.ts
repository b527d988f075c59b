/**
 * Programme_Soutirage bodies for tests: a valid programme by default (every
 * quarter-hour of the target day, sites of the reference host), shaped by options.
 *
 *   programme({ targetDate: '2027-03-28', sites: 2, slots: 4, kwh: i => i % 2 })
 * @module
 */
import { coverageOf } from '../../src/contract/paris-day.ts'
import { INBOUND_PATH } from '../../src/http/route.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import type { InstructionBatch } from '../../src/contract/instruction.ts'

export { INBOUND_PATH }

export interface ProgrammeOptions {
  readonly targetDate?: string
  readonly emittedAt?: string
  readonly emittedBy?: string
  /** Number of sites, or their ids (default: 1 site, PRM30000000000001). */
  readonly sites?: number | readonly string[]
  /** Slots per site from the start of the day (default: the whole day). */
  readonly slots?: number
  readonly slotSecs?: number
  /** Energy of slot j of site i (default 2.5 kWh). */
  readonly kwh?: (j: number, i: number) => number
}

export interface Slot { debut_utc: string; fin_utc: string; energie_kwh: number }
export interface Site { site_id: string; site_name: string; energie_programmee: Slot[] }
export interface Body {
  schema_version: string
  type: string
  emitted_by: string
  emitted_at: string
  target_date: string
  slot_duration_secs: number
  sites: Site[]
  [extra: string]: unknown
}

/** `PRM3000000000000n`, the reference host's simulated sites. */
export const siteId = (n: number): string => 'PRM' + String(30_000_000_000_000 + n)

export function programme (o: ProgrammeOptions = {}): Body {
  const targetDate = o.targetDate ?? '2026-11-22'
  const cov = coverageOf(targetDate)
  const secs = o.slotSecs ?? 900
  const start = Date.parse(cov.startUtc)
  const perDay = (Date.parse(cov.endUtc) - start) / (secs * 1000)
  const count = o.slots ?? perDay
  const ids = typeof o.sites === 'object' ? o.sites : Array.from({ length: o.sites ?? 1 }, (_, i) => siteId(i + 1))
  const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')
  return {
    schema_version: 'v0.2',
    type: 'programme_soutirage',
    emitted_by: o.emittedBy ?? 'bsp-acme',
    emitted_at: o.emittedAt ?? '2026-11-21T12:00:00Z',
    target_date: targetDate,
    slot_duration_secs: secs,
    sites: ids.map((id, i) => ({
      site_id: id,
      site_name: `Site ${i + 1}`,
      energie_programmee: Array.from({ length: count }, (_, j) => ({
        debut_utc: iso(start + j * secs * 1000),
        fin_utc: iso(start + (j + 1) * secs * 1000),
        energie_kwh: o.kwh ? o.kwh(j, i) : 2.5,
      })),
    })),
  }
}

const check = createProgrammeCheck({ maxSites: 5000, requireContiguous: false })

/** A valid programme of `o` (2 slots unless said), as the door's check turns it into a batch received at `receivedAt`. */
export function instructionBatch (o: ProgrammeOptions, receivedAt = '2026-11-21T12:30:00.000Z'): InstructionBatch {
  const r = check(Buffer.from(JSON.stringify(programme({ slots: 2, ...o }))), {
    perimeter: 'all', provenance: { receivedAt, companyId: 'acme', tokenId: 'tok', certFingerprint256: 'F' },
  })
  if (!r.ok) throw new Error(JSON.stringify(r.details))
  return r.batch
}
