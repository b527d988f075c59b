/**
 * `node --import=tsx bench/ops-costs.ts [--days N] [--sites N]`: what operating epx costs
 * (docs/operating.md), measured in one process on real LMDB in a temporary folder:
 *
 * - receipts per GET and records per accepted POST (`ops-share.ts`, also in `npm run bench`);
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
import { openStore } from '../src/store/open-store.ts'
import { openDeliveries } from '../src/store/deliveries.ts'
import { openAudit } from '../src/store/audit.ts'
import { openInstructions } from '../src/store/instructions.ts'
import { openRevisions } from '../src/store/revisions.ts'
import { createProgrammeCheck } from '../src/apply/check-programme.ts'
import { addDays, coverageOf } from '../src/contract/paris-day.ts'
import { simulatedNeeds, simulatedSites } from '../src/host/simulated-sites.ts'
import { buildBesoins, withEmittedAt } from '../src/publish/build-besoins.ts'
import { serializeBesoinsAgreges } from '../src/contract/besoins-agreges.ts'
import { programme, siteId } from './fixtures.ts'
import { measureOpsShare } from './ops-share.ts'

const { values: args } = parseArgs({ options: { days: { type: 'string', default: '2' }, sites: { type: 'string', default: '10000' } } })
const DAYS = Number(args.days)
const SITES = Number(args.sites)
const tmp = mkdtempSync(join(tmpdir(), 'epx-ops-bench-'))

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

try {
  const share = await measureOpsShare(join(tmp, 'costs'), SITES)
  const disk = await diskPerDay()
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MB`
  const gb = (b: number) => `${(b / 2 ** 30).toFixed(2)} GB`
  // Defaults: revisions, receipts and instructions 90 days; the audit (400) is a small part of "other".
  const yearAtDefaults = (disk.revisions + disk.lmdbOther + disk.instructions) * 90
  const yearKeptWhole = disk.perDay * 365
  console.log(JSON.stringify({
    sites: SITES, sampleDays: DAYS,
    receiptRecordNsPerGet: Math.round(share.receiptNsPerGet),
    cpuUsPerPost: {
      saveAlone: Math.round(share.perPostUs.saveAlone),
      auditShare: Math.round(share.perPostUs.withAudit - share.perPostUs.saveAlone),
      recordsShare: Math.round(share.perPostUs.withRecords - share.perPostUs.saveAlone),
    },
    diskPerDay: { revisionFiles: mb(disk.revisions), instructionsLmdb: mb(disk.instructions), otherLmdb: mb(disk.lmdbOther), total: mb(disk.perDay) },
    diskYear: { atDefaultRetention: gb(yearAtDefaults), everythingKeptAYear: gb(yearKeptWhole) },
    note: 'revision files kept publish.retentionDays (90), instructions inbound.retentionDays (90), other LMDB (revision index, receipts, audit) 90 days',
  }, null, 2))
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
