/**
 * The console's server time at an operator's size (`--special console`): a store of 1,000
 * and of 10,000 sites, each with its Besoins agrégés published, one programme received
 * (96 quarter-hours) and a whole day of meter values, held by two companies. For each size,
 * an admin's first page of "Programmes", "Réalisé" and one site's "Besoins agrégés": the
 * page's model loaded from the store and rendered to HTML, as its route does, measured in
 * this process on real LMDB in a temporary folder (no TLS, no session: what the page itself
 * costs). A few runs after a warm-up; the median and the slowest are kept.
 * @module
 */
import { join } from 'node:path'
import { openStore } from '../src/store/open-store.ts'
import { openCompanies } from '../src/store/companies.ts'
import { openInstructions } from '../src/store/instructions.ts'
import { openInstructionFlags } from '../src/store/instruction-flags.ts'
import { openRevisions } from '../src/store/revisions.ts'
import { openMetering } from '../src/store/metering.ts'
import { openTenure } from '../src/store/tenure.ts'
import { createProgrammeCheck } from '../src/apply/check-programme.ts'
import { coverageOf } from '../src/contract/paris-day.ts'
import { formatUtcInstant } from '../src/contract/instants.ts'
import { simulatedSites } from '../src/host/simulated-sites.ts'
import { ManualClock } from '../src/host/reference-host.ts'
import type { Viewer } from '../src/console/viewer.ts'
import { loadProgrammes } from '../src/console/pages/programmes-list.ts'
import { renderProgrammes } from '../src/console/pages/programmes-view.ts'
import { loadRealiseDay } from '../src/console/pages/realise-list.ts'
import { renderRealiseDay } from '../src/console/pages/realise.ts'
import { loadBesoins } from '../src/console/pages/besoins-model.ts'
import { renderBesoins } from '../src/console/pages/besoins-view.ts'
import { serializeBesoinsAgreges } from '../src/contract/besoins-agreges.ts'
import { besoinsAgreges } from './fixtures.ts'
import type { Target } from './report.ts'
import { valueTarget } from './targets.ts'

export const CONSOLE_SIZES = [1_000, 10_000] as const
export const CONSOLE_PAGES = ['Programmes', 'Réalisé', 'Besoins agrégés'] as const
export type ConsolePageName = typeof CONSOLE_PAGES[number]

export interface ConsolePageTimes {
  readonly sites: number
  readonly seedMs: number
  /** Per page: the median and the slowest run, ms; the HTML's size. */
  readonly pages: Readonly<Record<ConsolePageName, { readonly medianMs: number; readonly maxMs: number; readonly runs: number; readonly bytes: number }>>
}

const DAY = '2026-11-22'
/** Programmes of this many sites each (the inbound check's `maxSites` here). */
const CHUNK = 1_000
const ADMIN: Viewer = { username: 'bench', admin: true, companyId: null, csrfToken: 'bench' }

/** A Programme_Soutirage of the sites `from` .. `from + count - 1`, 96 quarter-hours each. */
function programmeOf (from: number, count: number): string {
  const cov = coverageOf(DAY)
  const start = Date.parse(cov.startUtc)
  const at = (k: number) => formatUtcInstant(start + k * 900_000)
  const sites = simulatedSites(from + count).slice(from).map((s, n) => ({
    ...s, energie_programmee: Array.from({ length: cov.slots }, (_, k) => ({ debut_utc: at(k), fin_utc: at(k + 1), energie_kwh: k % 11 === 0 ? 0 : (n + k) % 7 + 1 })),
  }))
  return JSON.stringify({ schema_version: 'v0.2', type: 'programme_soutirage', emitted_by: 'Bench BSP', emitted_at: '2026-11-21T10:00:00Z', target_date: DAY, slot_duration_secs: 900, sites })
}

async function seeded (dir: string, n: number) {
  const store = openStore(dir)
  const companies = openCompanies(store)
  const instructions = openInstructions(store)
  const revisions = openRevisions(store, { retentionDays: 400 })
  const clock = new ManualClock('2026-11-23T08:00:00Z')
  const metering = openMetering(store, { now: () => clock.now().getTime(), retentionDays: 400 })
  const sites = simulatedSites(n)
  const half = sites.slice(0, n / 2).map(s => s.site_id)
  await companies.add({ id: 'acme', name: 'Acme', status: 'active', certSubject: 'CN=acme,O=Acme', perimeter: half, createdAt: '2026-11-01T00:00:00.000Z' })
  await companies.add({ id: 'beta', name: 'Beta', status: 'active', certSubject: 'CN=beta,O=Beta', perimeter: sites.slice(n / 2).map(s => s.site_id), createdAt: '2026-11-01T00:00:00.000Z' })
  const check = createProgrammeCheck({ maxSites: CHUNK, requireContiguous: false })
  const cov = coverageOf(DAY)
  const start = Date.parse(cov.startUtc)
  for (let from = 0; from < n; from += CHUNK) {
    const companyId = from < n / 2 ? 'acme' : 'beta'
    const r = check(Buffer.from(programmeOf(from, CHUNK)), { perimeter: 'all', provenance: { receivedAt: '2026-11-21T12:00:00.000Z', companyId, tokenId: `tok_${companyId}`, certFingerprint256: 'AB:CD' } })
    if (!r.ok) throw new Error(`bench programme refused: ${JSON.stringify(r.details)}`)
    await instructions.save(r.batch, '2026-11-21T12:00:00.000Z')
    const chunk = sites.slice(from, from + CHUNK)
    await revisions.publish(chunk.map(s => ({ siteId: s.site_id, targetDate: DAY, render: (emittedAt: string) => serializeBesoinsAgreges({ ...besoinsAgreges(DAY, s.site_id, new Date(emittedAt)), emitted_at: emittedAt } as Parameters<typeof serializeBesoinsAgreges>[0]) })), Date.parse('2026-11-21T08:00:00Z'))
    const readings = chunk.flatMap((s, i) => Array.from({ length: cov.slots }, (_, k) => ({
      siteId: s.site_id, startUtc: formatUtcInstant(start + k * 900_000), endUtc: formatUtcInstant(start + (k + 1) * 900_000), kwh: (i + k) % 9,
    })))
    const report = await metering.report(readings)
    if (report.accepted !== readings.length) throw new Error(`bench meter values refused: ${readings.length - report.accepted}`)
  }
  const hostSites = async () => sites
  // Who held each site when, as the console's server.ts reads it (DECISIONS.md "Tenure").
  const tenure = openTenure(store)
  return {
    close: async () => { revisions.close(); await metering.close(); await store.close() },
    programmes: { instructions, companies, sites: hostSites, clock, flags: openInstructionFlags(store), revisions },
    realise: {
      realisation: { instructions, metering, tolerance: { toleranceKwh: 0.1, tolerancePercent: 1 }, holders: (siteId: string, fromMs: number, untilMs: number) => tenure.holdersDuring(siteId, fromMs, untilMs) },
      clock, companies, sites: hostSites,
    },
    besoins: { revisions, instructions, companies, sites: hostSites, clock },
    site: sites[Math.floor(n * 0.7)]!.site_id,
  }
}

/** Milliseconds of one call. */
async function timed (f: () => Promise<string>): Promise<{ ms: number; bytes: number }> {
  const t0 = process.hrtime.bigint()
  const html = await f()
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, bytes: Buffer.byteLength(html) }
}

const ok = <T>(r: { status: number; model?: T }): T => {
  if (r.status !== 200 || r.model === undefined) throw new Error(`page answered ${r.status}`)
  return r.model
}

export async function measureConsolePages (dir: string, quick: boolean): Promise<ConsolePageTimes[]> {
  const out: ConsolePageTimes[] = []
  for (const n of CONSOLE_SIZES) {
    const t0 = Date.now()
    const s = await seeded(join(dir, `sites-${n}`), n)
    const seedMs = Date.now() - t0
    try {
      const pages: Record<ConsolePageName, () => Promise<string>> = {
        Programmes: async () => renderProgrammes(ok(await loadProgrammes(s.programmes, ADMIN, { target_date: DAY }))).toString(),
        Réalisé: async () => renderRealiseDay(ok(await loadRealiseDay(s.realise, ADMIN, { target_date: DAY }))).toString(),
        'Besoins agrégés': async () => renderBesoins(ok(await loadBesoins(s.besoins, ADMIN, { site_id: s.site, target_date: DAY }))).toString(),
      }
      const runs = quick ? 3 : 7
      const result = {} as Record<ConsolePageName, ConsolePageTimes['pages'][ConsolePageName]>
      for (const name of CONSOLE_PAGES) {
        await pages[name]()
        const times: number[] = []
        let bytes = 0
        for (let k = 0; k < runs; k++) {
          const r = await timed(pages[name])
          times.push(r.ms)
          bytes = r.bytes
        }
        times.sort((a, b) => a - b)
        result[name] = { medianMs: times[Math.floor(times.length / 2)]!, maxMs: times.at(-1)!, runs, bytes }
        process.stderr.write(`  console, ${n} sites, ${name}: median ${result[name].medianMs.toFixed(0)} ms, slowest ${result[name].maxMs.toFixed(0)} ms (${bytes} B)\n`)
      }
      out.push({ sites: n, seedMs, pages: result })
    } finally {
      await s.close()
    }
  }
  return out
}

/** Target (bench/README.md "Targets"): each page under a second of server time. */
export const CONSOLE_PAGE_TARGET_MS = 1000

/** One row per size: its slowest page's median, every page's in the note. */
export function consoleTargets (c: readonly ConsolePageTimes[] | { readonly error: string } | undefined): Target[] {
  return CONSOLE_SIZES.map(n => {
    const name = `Console at ${n.toLocaleString('en')} sites: slowest page's server time (median)`
    const at = c && !('error' in c) ? c.find(x => x.sites === n) : undefined
    if (!at) return valueTarget(name, CONSOLE_PAGE_TARGET_MS, 'ms', undefined, c && 'error' in c ? c.error : 'left out (--special)')
    const slowest = Math.max(...CONSOLE_PAGES.map(p => at.pages[p].medianMs))
    return valueTarget(name, CONSOLE_PAGE_TARGET_MS, 'ms', slowest,
      `${CONSOLE_PAGES.map(p => `${p} ${at.pages[p].medianMs.toFixed(0)} ms`).join(', ')}; model and HTML of an admin's first page, in one process (bench/console-pages.ts)`)
  })
}
