/**
 * Seeds a real store as the doors would: programmes through the inbound check, and
 * Besoins_Agreges revisions through the publisher's serializer.
 *
 *   const s = seedStore(t)                                   // LMDB in t.testdir()
 *   await s.receive({ emittedAt, sites: [id], kwh }, 'acme')  // one programme, sent by company acme
 *   await s.publish('2027-03-28', siteId(1), { siteName?, kw? })
 * @module
 */
import { join } from 'node:path'
import type { Test } from 'tap'
import { openStore, type Store } from '../../src/store/open-store.ts'
import { openInstructions, type Instructions } from '../../src/store/instructions.ts'
import { openRevisions, type Revisions, type RevisionMeta } from '../../src/store/revisions.ts'
import { openCompanies, type Companies, type CompanyRecord } from '../../src/store/companies.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import { serializeBesoinsAgreges } from '../../src/contract/besoins-agreges.ts'
import { coverageOf } from '../../src/contract/paris-day.ts'
import { programme, type ProgrammeOptions } from './programme.ts'

export interface Seeded {
  readonly store: Store
  readonly instructions: Instructions
  readonly revisions: Revisions
  readonly companies: Companies
  receive(o: ProgrammeOptions, companyId: string): Promise<void>
  publish(targetDate: string, siteId: string, o?: { siteName?: string; kw?: (slot: number) => number; nowMs?: number }): Promise<RevisionMeta>
  addCompany(id: string, perimeter: CompanyRecord['perimeter'], status?: CompanyRecord['status']): Promise<void>
}

const check = createProgrammeCheck({ maxSites: 100, requireContiguous: false })

/** `store`: one already open (a store of another kind, test/helpers/store-kinds.ts); default: LMDB in t.testdir(). */
export function seedStore (t: Test, given?: Store): Seeded {
  const store = given ?? openStore(join(t.testdir(), 'store'))
  const instructions = openInstructions(store)
  const revisions = openRevisions(store, { retentionDays: 90 })
  // Records as stored, overlapping perimeters included (data from before one BSP per site).
  const companies = openCompanies(store, { onePerSite: false })
  t.teardown(async () => { revisions.close(); await store.close() })
  return {
    store, instructions, revisions, companies,
    async receive (o, companyId) {
      const receivedAt = '2026-11-21T12:00:00.000Z'
      const r = check(Buffer.from(JSON.stringify(programme(o))), {
        perimeter: 'all', provenance: { receivedAt, companyId, tokenId: `tok_${companyId}`, certFingerprint256: 'AB:CD' },
      })
      if (!r.ok) throw new Error(JSON.stringify(r.details))
      await instructions.save(r.batch, receivedAt)
    },
    async publish (targetDate, siteId, o = {}) {
      const cov = coverageOf(targetDate)
      const start = Date.parse(cov.startUtc)
      const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')
      const [meta] = await revisions.publish([{
        siteId, targetDate,
        render: emittedAt => serializeBesoinsAgreges({
          schema_version: 'v0.3', type: 'besoins_agreges', emitted_by: 'epx-test', emitted_at: emittedAt,
          target_date: targetDate, coverage_start_utc: cov.startUtc, coverage_end_utc: cov.endUtc, slot_duration_secs: 900,
          sites: [{
            site_id: siteId, site_name: o.siteName ?? 'Depot 1',
            jalons_besoin: [{ debut_utc: iso(start + 4 * 3_600_000), deadline_utc: iso(start + 8 * 3_600_000), valeur_kwh: 120, puissance_kW: 30 }],
            puissance_disponible: Array.from({ length: cov.slots }, (_, k) => ({
              debut_utc: iso(start + k * 900_000), fin_utc: iso(start + (k + 1) * 900_000), p_max_kw: o.kw?.(k) ?? 50 + (k % 8),
            })),
          }],
        }),
      }], o.nowMs ?? Date.parse('2026-11-21T08:00:00Z'))
      return meta!
    },
    async addCompany (id, perimeter, status = 'active') {
      await companies.add({ id, name: id, status, certSubject: `CN=${id},O=${id}`, perimeter, createdAt: '2026-11-01T00:00:00.000Z' })
    },
  }
}
