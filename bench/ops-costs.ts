/**
 * `node --import=tsx bench/ops-costs.ts [--days N] [--sites N]`: what operating epx costs
 * (issue 13), measured in one process on real LMDB in a temporary folder:
 *
 * - receipts: CPU per `Deliveries.record` call, the work a GET 200/304 adds (target: well
 *   under 1 µs), for a BSP polling 10,000 sites round-robin;
 * - audit: CPU per accepted POST of its audit record, written in the save's own transaction
 *   (`apply/programme-records.ts`), measured as the extra CPU of a save with the record
 *   over a save alone for 1-site programmes;
 * - disk: bytes a day of 10,000 sites adds (one revision per site, one programme of every
 *   site × 96 slots, 10,000 receipts, a day of audit records), measured over N sample days,
 *   then a year extrapolated at the default retentions.
 *
 * Figures on a loaded machine are indicative; the ratios and the bytes are what matter.
 * @module
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openStore, type Store } from '../src/store/open-store.ts'
import { openDeliveries } from '../src/store/deliveries.ts'
import { openAudit } from '../src/store/audit.ts'
import { openInstructions } from '../src/store/instructions.ts'
import { openRevisions } from '../src/store/revisions.ts'
import { createProgrammeCheck } from '../src/apply/check-programme.ts'
import { programmeAccepted } from '../src/apply/audit-events.ts'
import { addDays, coverageOf } from '../src/contract/paris-day.ts'
import { simulatedNeeds, simulatedSites } from '../src/host/simulated-sites.ts'
import { buildBesoins, withEmittedAt } from '../src/publish/build-besoins.ts'
import { serializeBesoinsAgreges } from '../src/contract/besoins-agreges.ts'
import { programme, siteId, siteIds } from './fixtures.ts'

const { values: args } = parseArgs({ options: { days: { type: 'string', default: '2' }, sites: { type: 'string', default: '10000' } } })
const DAYS = Number(args.days)
const SITES = Number(args.sites)
const tmp = mkdtempSync(join(tmpdir(), 'epx-ops-bench-'))
const cpuUs = () => { const u = process.cpuUsage(); return u.user + u.system }

function receiptCost (store: Store): number {
  const deliveries = openDeliveries(store)
  const ids = siteIds(SITES)
  const N = 2_000_000
  // Warm: every pair known (the steady state of a BSP polling all day).
  for (let i = 0; i < SITES; i++) deliveries.record('bench-bsp', ids[i]!, '2026-11-22', 1, 200, 1)
  const t0 = cpuUs()
  for (let i = 0; i < N; i++) deliveries.record('bench-bsp', ids[i % SITES]!, '2026-11-22', i, (i & 1) ? 200 : 304, i)
  return (cpuUs() - t0) * 1000 / N   // ns per call
}

async function auditCost (store: Store): Promise<{ withAudit: number; without: number }> {
  const instructions = openInstructions(store)
  const audit = openAudit(store)
  const check = createProgrammeCheck({ maxSites: 5000, requireContiguous: false })
  const caller = { companyId: 'bench-bsp', tokenId: 'tok_bench', certFingerprint256: 'AB:CD', perimeter: 'all' as const }
  const batchAt = (k: number) => {
    const body = Buffer.from(programme('2026-11-22', 1, `2026-11-21T${String(10 + Math.floor(k / 3600)).padStart(2, '0')}:${String(Math.floor(k / 60) % 60).padStart(2, '0')}:${String(k % 60).padStart(2, '0')}Z`).body)
    const r = check(body, { perimeter: 'all', provenance: { receivedAt: '2026-11-21T12:00:00Z', ...caller } })
    if (!r.ok) throw new Error(JSON.stringify(r.details))
    return { batch: r.batch, bytes: body.length }
  }
  const N = 800
  const batches = Array.from({ length: 5 * N }, (_, k) => batchAt(k))
  // 8 clients posting back to back, as the bench's: each programme's audit record is
  // written by its save's transaction, as the service does.
  const run = async (from: number, audited: boolean) => {
    const t0 = cpuUs()
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let k = from + w; k < from + N; k += 8) {
        const { batch, bytes } = batches[k]!
        const event = audited ? programmeAccepted(batch, caller, bytes) : undefined
        await instructions.save(batch, '2026-11-21T12:00:00Z', 'queued', event && (() => audit.appendSync(event, Date.now())))
      }
    }))
    return (cpuUs() - t0) / N
  }
  // Fresh ids for every run (a re-save of known keys is cheaper than a new one), and the
  // two variants alternated, so neither gets the warmer store.
  await run(0, true)   // warm-up
  const a = await run(N, false)
  const b = await run(2 * N, true)
  const c = await run(3 * N, false)
  const d = await run(4 * N, true)
  const without = (a + c) / 2
  const withAudit = (b + d) / 2
  return { withAudit, without }
}

/** Bytes allocated on disk under a folder (sparse files counted by their blocks). */
function diskBytes (dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    n += e.isDirectory() ? diskBytes(p) : statSync(p).blocks * 512
  }
  return n
}

async function diskPerDay (): Promise<{ revisions: number; instructions: number; lmdbOther: number; perDay: number }> {
  const path = join(tmp, 'disk')
  const store = openStore(path)
  const revisions = openRevisions(store, { retentionDays: 400 })
  const instructions = openInstructions(store)
  const deliveries = openDeliveries(store)
  const audit = openAudit(store)
  const sites = simulatedSites(SITES)
  const check = createProgrammeCheck({ maxSites: 5000, requireContiguous: false })
  const segmentBytes = () => diskBytes(join(path, 'revision-bytes'))
  const lmdbBytes = () => statSync(join(path, 'data.mdb')).blocks * 512
  let day = '2026-11-22'
  const startSegments = segmentBytes()
  const startLmdb = lmdbBytes()
  let instructionLmdb = 0
  for (let d = 0; d < DAYS; d++, day = addDays(day, 1)) {
    const coverage = coverageOf(day)
    const nowMs = Date.parse(coverage.startUtc) - 16 * 3_600_000
    for (let i = 0; i < sites.length; i += 1000) {
      const drafts = sites.slice(i, i + 1000).map(site => {
        const draft = buildBesoins({ site, needs: simulatedNeeds(site.site_id, coverage), coverage, emittedBy: 'epx' })
        return { siteId: site.site_id, targetDate: day, render: (at: string) => serializeBesoinsAgreges(withEmittedAt(draft, at)) }
      })
      await revisions.publish(drafts, nowMs)
    }
    const before = lmdbBytes()
    for (let i = 0; i < sites.length; i += 5000) {
      const doc = JSON.parse(programme(day, Math.min(5000, sites.length - i), new Date(nowMs).toISOString()).body) as { sites: Array<{ site_id: string }> }
      doc.sites.forEach((s, k) => { s.site_id = siteId(i + k) })
      const body = Buffer.from(JSON.stringify(doc))
      const r = check(body, { perimeter: 'all', provenance: { receivedAt: new Date(nowMs).toISOString(), companyId: 'bench-bsp', tokenId: 'tok_bench', certFingerprint256: 'AB:CD' } })
      if (!r.ok) throw new Error(JSON.stringify(r.details).slice(0, 300))
      await instructions.save(r.batch, new Date(nowMs).toISOString())
    }
    instructionLmdb += lmdbBytes() - before
    for (const s of sites) deliveries.record('bench-bsp', s.site_id, day, nowMs, 200, nowMs)
    await deliveries.flush()
    for (let k = 0; k < 20; k++) await audit.append({ actor: { kind: 'schedule' }, action: 'publication.run', subject: day, outcome: 'ok', details: { published: SITES, failed: 0, durationMs: 900 } }, nowMs + k)
  }
  const revisionsBytes = (segmentBytes() - startSegments) / DAYS
  const lmdbPerDay = (lmdbBytes() - startLmdb) / DAYS
  await store.close()
  return { revisions: revisionsBytes, instructions: instructionLmdb / DAYS, lmdbOther: lmdbPerDay - instructionLmdb / DAYS, perDay: revisionsBytes + lmdbPerDay }
}

const store = openStore(join(tmp, 'costs'))
try {
  const receiptNs = receiptCost(store)
  const audit = await auditCost(store)
  await store.close()
  const disk = await diskPerDay()
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MB`
  const gb = (b: number) => `${(b / 2 ** 30).toFixed(2)} GB`
  // Defaults: revisions, receipts and instructions 90 days; the audit (400) is a small part of "other".
  const yearAtDefaults = (disk.revisions + disk.lmdbOther + disk.instructions) * 90
  const yearKeptWhole = disk.perDay * 365
  console.log(JSON.stringify({
    sites: SITES, sampleDays: DAYS,
    receiptRecordNsPerGet: Math.round(receiptNs),
    auditCpuUsPerPost: { saveAlone: Math.round(audit.without), saveAndAudit: Math.round(audit.withAudit), auditShare: Math.round(audit.withAudit - audit.without) },
    diskPerDay: { revisionFiles: mb(disk.revisions), instructionsLmdb: mb(disk.instructions), otherLmdb: mb(disk.lmdbOther), total: mb(disk.perDay) },
    diskYear: { atDefaultRetention: gb(yearAtDefaults), everythingKeptAYear: gb(yearKeptWhole) },
    note: 'revision files kept publish.retentionDays (90), instructions inbound.retentionDays (90), other LMDB (revision index, receipts, audit) 90 days',
  }, null, 2))
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
