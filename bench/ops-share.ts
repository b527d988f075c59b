/**
 * What operating epx (docs/operating.md) adds to a request, measured in one process on real LMDB
 * in a temporary folder, for `npm run bench` and `bench/ops-costs.ts`:
 *
 * - receipts: CPU per `Deliveries.record` call, the work a GET 200/304 adds (target: well
 *   under 1 µs), for a BSP polling 10,000 sites round-robin;
 * - records: CPU per accepted 1-site × 96 POST of what `apply/programme-records.ts` does
 *   (the feasibility check against the published needs, the audit record and the flags
 *   written in the save's own transaction, the warn line), as the extra CPU of a save with
 *   them over a save alone. The needs are published at 20 kW, so every slot over 5 kWh is
 *   flagged: the worst case, as in the bench's POST rows. The audit record alone is given
 *   beside it.
 *
 * The variants are alternated, each on fresh instruction ids, so none gets the warmer store.
 * @module
 */
import { join } from 'node:path'
import pino from 'pino'
import { openStore, type Store } from '../src/store/open-store.ts'
import { openDeliveries } from '../src/store/deliveries.ts'
import { openAudit } from '../src/store/audit.ts'
import { openInstructions } from '../src/store/instructions.ts'
import { openInstructionFlags } from '../src/store/instruction-flags.ts'
import { openRevisions } from '../src/store/revisions.ts'
import { createProgrammeCheck } from '../src/apply/check-programme.ts'
import { programmeAccepted } from '../src/apply/audit-events.ts'
import { programmeRecords } from '../src/apply/programme-records.ts'
import { coverageOf } from '../src/contract/paris-day.ts'
import { formatUtcInstant } from '../src/contract/instants.ts'
import { serializeBesoinsAgreges } from '../src/contract/besoins-agreges.ts'
import type { Logger } from '../src/host/contract.ts'
import { programme, siteId, siteIds } from './fixtures.ts'

export interface OpsShare {
  /** CPU per GET of its delivery receipt. */
  readonly receiptNsPerGet: number
  /** CPU per accepted POST (1 site × 96): the save alone, with its audit record, with all its records. */
  readonly perPostUs: { readonly saveAlone: number; readonly withAudit: number; readonly withRecords: number }
}

const cpuUs = () => { const u = process.cpuUsage(); return u.user + u.system }
const DAY = '2026-11-22'

function receiptCost (store: Store, sites: number): number {
  const deliveries = openDeliveries(store)
  const ids = siteIds(sites)
  const N = 2_000_000
  // Warm: every pair known (the steady state of a BSP polling all day).
  for (let i = 0; i < sites; i++) deliveries.record('bench-bsp', ids[i]!, DAY, 1, 200, 1)
  const t0 = cpuUs()
  for (let i = 0; i < N; i++) deliveries.record('bench-bsp', ids[i % sites]!, DAY, i, (i & 1) ? 200 : 304, i)
  return (cpuUs() - t0) * 1000 / N
}

async function publishLowNeeds (store: Store): Promise<ReturnType<typeof openRevisions>> {
  const revisions = openRevisions(store, { retentionDays: 400 })
  const cov = coverageOf(DAY)
  const start = Date.parse(cov.startUtc)
  await revisions.publish([{
    siteId: siteId(0), targetDate: DAY,
    render: emittedAt => serializeBesoinsAgreges({
      schema_version: 'v0.3', type: 'besoins_agreges', emitted_by: 'epx', emitted_at: emittedAt,
      target_date: DAY, coverage_start_utc: cov.startUtc, coverage_end_utc: cov.endUtc, slot_duration_secs: 900,
      sites: [{
        site_id: siteId(0), site_name: 'Depot 1',
        jalons_besoin: [{ debut_utc: formatUtcInstant(start), deadline_utc: formatUtcInstant(start + 8 * 3_600_000), valeur_kwh: 120, puissance_kW: 20 }],
        puissance_disponible: Array.from({ length: cov.slots }, (_, k) => ({
          debut_utc: formatUtcInstant(start + k * 900_000), fin_utc: formatUtcInstant(start + (k + 1) * 900_000), p_max_kw: 20,
        })),
      }],
    }),
  }], Date.parse('2026-11-21T07:00:00Z'))
  return revisions
}

async function perPostCost (store: Store): Promise<OpsShare['perPostUs']> {
  const instructions = openInstructions(store)
  const audit = openAudit(store)
  const revisions = await publishLowNeeds(store)
  // The host's logger, writing where a daemon's would (a file), at its default level.
  const dest = pino.destination({ dest: join(store.path, 'bench.log'), sync: true })
  const log = pino({ level: 'info' }, dest) as unknown as Logger
  const records = programmeRecords({ audit, flags: openInstructionFlags(store), feasibility: { revisions }, log })
  const check = createProgrammeCheck({ maxSites: 5000, requireContiguous: false })
  const caller = { companyId: 'bench-bsp', tokenId: 'tok_bench', certFingerprint256: 'AB:CD', perimeter: 'all' as const }
  const receivedAt = new Date('2026-11-21T12:00:00Z')
  const N = 800
  const ROUNDS = 3
  const batches = Array.from({ length: (1 + 3 * ROUNDS) * N }, (_, k) => {
    const emittedAt = new Date(Date.parse('2026-11-21T10:00:00Z') + k * 1000).toISOString().replace('.000Z', 'Z')
    const body = Buffer.from(programme(DAY, 1, emittedAt).body)
    const r = check(body, { perimeter: 'all', provenance: { receivedAt: receivedAt.toISOString(), ...caller } })
    if (!r.ok) throw new Error(JSON.stringify(r.details))
    return { batch: r.batch, bytes: body.length }
  })
  type Variant = 'alone' | 'audit' | 'records'
  let next = 0
  // 8 clients posting back to back, as the bench's: concurrent saves share commits.
  const run = async (variant: Variant): Promise<number> => {
    const from = next
    next += N
    const t0 = cpuUs()
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let k = from + w; k < from + N; k += 8) {
        const { batch, bytes } = batches[k]!
        if (variant === 'records') {
          const r = await records.accepting(batch, caller, bytes, receivedAt)
          await instructions.save(batch, receivedAt.toISOString(), 'queued', r.write)
          r.landed()
        } else {
          const event = variant === 'audit' ? programmeAccepted(batch, caller, bytes) : undefined
          await instructions.save(batch, receivedAt.toISOString(), 'queued', event && (() => audit.appendSync(event, receivedAt.getTime())))
        }
      }
    }))
    return (cpuUs() - t0) / N
  }
  await run('records')   // warm-up
  const sums = { alone: 0, audit: 0, records: 0 }
  for (let r = 0; r < ROUNDS; r++) {
    for (const v of (r % 2 ? ['records', 'audit', 'alone'] : ['alone', 'audit', 'records']) as Variant[]) sums[v] += await run(v)
  }
  records.close()
  dest.end()
  return { saveAlone: sums.alone / ROUNDS, withAudit: sums.audit / ROUNDS, withRecords: sums.records / ROUNDS }
}

/** Both figures, in a store under `dir` (the caller removes it). */
export async function measureOpsShare (dir: string, sites = 10_000): Promise<OpsShare> {
  const store = openStore(dir)
  try {
    const receiptNsPerGet = receiptCost(store, sites)
    const perPostUs = await perPostCost(store)
    return { receiptNsPerGet, perPostUs }
  } finally {
    await store.close()
  }
}
