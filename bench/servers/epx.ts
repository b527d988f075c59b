/**
 * Server E, epx itself, the way a solver runs it: the reference host loads the plugin
 * through its manifest (`loadPlugin`), with a real LMDB store in a temporary data folder
 * (E-pg: the same server on a PostgreSQL store, `postgres` in its options),
 * a company bound to the bench's client certificate, real tokens, and a published
 * revision for the GET scenarios. Default configuration (the request log as it ships,
 * written by pino to a file, as a daemon would), schedules off so nothing runs unasked.
 *
 * Extra messages: `publish` (one publication, timed with the window tools: wall, CPU,
 * longest stall), `metering` (a whole day of meter values of every site in one
 * `reportMetering`, timed the same way) and `rss` (resident memory after a collection and
 * a pause). One site's needs are padded so its Besoins_Agreges is as large as a realise
 * answer (`SAME_SIZE_SITE`).
 * @module
 */
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { addDays, parisDateOf, parisDayMs } from '../../src/contract/paris-day.ts'
import pino from 'pino'
import { createReferenceHost } from '../../src/host/reference-host.ts'
import { loadPlugin } from '../../src/host/load-plugin.ts'
import type { Host, Logger, MeterReading, SolverInput } from '../../src/host/contract.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openTokens } from '../../src/store/tokens.ts'
import { hashToken, newTokenId, newTokenSecret } from '../../src/auth/tokens.ts'
import type { Scope } from '../../src/contract/scopes.ts'
import { canonicalSubject } from '../../src/auth/subject.ts'
import { SAME_SIZE_SITE, siteIds } from '../fixtures.ts'
import { failStart, send, serveControl, serverConfig, type ControlMessage } from './harness.ts'

export interface EpxBenchOptions {
  readonly dataDir: string
  /** Simulated sites the reference host manages. */
  readonly sites: number
  /** Subject of the bench's client certificate, bound to the bench company. */
  readonly clientSubject: string
  /** Published at start for the GET scenarios (site 0), unless empty. */
  readonly publishSiteIds: readonly string[]
  readonly targetDate: string
  /**
   * E-pg: the store is PostgreSQL's (`store.kind: "postgres"`), this database, migrated;
   * the data folder's LMDB is then the instance's replica of it. Absent: E, LMDB alone.
   */
  readonly postgres?: { readonly connectionString: string }
  /**
   * The companies and their perimeters, `sites` sites from `firstSite` on (bench/webhooks.ts:
   * ten BSPs of a tenth of the sites each); absent, `bench-bsp` holds every site and has the tokens.
   */
  readonly companies?: ReadonlyArray<{ readonly id: string; readonly firstSite: number; readonly sites: number }>
  /** The plugin's `webhooks` section (bench/webhooks.ts), when not its defaults. */
  readonly webhooks?: Readonly<Record<string, unknown>>
}

/**
 * Linux splits RSS into anonymous memory (heap, malloc: the process's own) and file pages
 * (here mostly LMDB's memory map: page cache the kernel can reclaim). Empty elsewhere.
 */
function linuxRss (): { rssAnon?: number; rssFile?: number; rssShmem?: number } {
  try {
    const status = readFileSync('/proc/self/status', 'utf8')
    const kb = (key: string) => {
      const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)
      return m ? Number(m[1]) * 1024 : undefined
    }
    return { rssAnon: kb('RssAnon'), rssFile: kb('RssFile'), rssShmem: kb('RssShmem') }
  } catch {
    return {}
  }
}

/**
 * The daemon's log destination buffers lines up to this many bytes per write (pino's
 * `minLength`), as docs/plugin-contract.md recommends: unbuffered, every request's line is
 * its own write(2). Not more: sonic-boom measures its whole pending text again on every
 * line, so 16 KB cost ~5 µs a line against ~3.6 µs at 1–4 KiB (measured in one process).
 */
const LOG_BUFFER_BYTES = 4096

/** Milestones (~105 B each) added to SAME_SIZE_SITE's needs: its document ≈ a realise answer of 96 slots. */
const SAME_SIZE_EXTRA_MILESTONES = 57

/** `E`, or `E-pg` (its profiles and messages must not take E's names). */
const SERVER_NAME = process.env.BENCH_SERVER_NAME ?? 'E'

const repoRoot = resolve(fileURLToPath(import.meta.url), '../../..')

/** Company and tokens written before epx opens the store, as `epx companies add` would; no tokens for `companies`. */
async function seed (o: EpxBenchOptions): Promise<Record<'outbound' | 'inbound' | 'realise', string> | undefined> {
  const store = openStore(join(o.dataDir, 'epx.lmdb'), o.postgres ? { postgres: { pool: { connectionString: o.postgres.connectionString } } } : {})
  try {
    await store.opened
    const now = new Date().toISOString()
    // Since a year: the company holds every site on the days the bench reads (realise of
    // yesterday is its own only if it held the site then: DECISIONS.md "Tenure").
    const since = new Date(Date.now() - 365 * 86_400_000).toISOString()
    // A restart over an existing data folder (the memory measurement) keeps the company.
    const companies = openCompanies(store, { now: () => Date.parse(since) })
    if (o.companies) {
      for (const c of o.companies) {
        await companies.add({ id: c.id, name: c.id, status: 'active', certSubject: `CN=${c.id},O=Bench`, perimeter: siteIds(c.firstSite + c.sites).slice(c.firstSite), createdAt: since })
      }
      return undefined
    }
    if (!companies.get('bench-bsp')) {
      await companies.add({
        id: 'bench-bsp', name: 'Bench BSP', status: 'active',
        certSubject: canonicalSubject(o.clientSubject), perimeter: 'all', createdAt: since,
      })
    }
    const tokens = openTokens(store)
    const make = async (scope: Scope) => {
      const secret = newTokenSecret()
      await tokens.add({ id: newTokenId(), hash: hashToken(secret), companyId: 'bench-bsp', scopes: [scope], createdAt: now })
      return secret
    }
    return { outbound: await make('outbound:besoins-agreges'), inbound: await make('inbound:programme-soutirage'), realise: await make('outbound:realise') }
  } finally {
    await store.close()
  }
}

async function main (): Promise<void> {
  const cfg = serverConfig()
  const o = JSON.parse(process.env.BENCH_E ?? '{}') as EpxBenchOptions
  const secrets = await seed(o)

  const logger = pino({ level: 'info' }, pino.destination({ dest: join(o.dataDir, 'epx.log'), sync: true, minLength: LOG_BUFFER_BYTES })) as unknown as Logger
  const ref = createReferenceHost({ dataDir: o.dataDir, logger, sites: o.sites, cycleSeconds: 0 })
  // The solver side of the queue: keep the latest input per (site, day), as a solver
  // would, and drain it between windows (`runCycle` is the solver's cost, not epx's).
  let queued = 0
  const latest = new Map<string, SolverInput>()
  const host: Host = {
    ...ref.host,
    solver: {
      ...ref.host.solver,
      // One site's Besoins_Agreges as large as a realise answer of a 96-slot day (~15 KB), so
      // the two GETs are compared at the same size (bench/README.md, "GET realise").
      async needs (siteId, coverage) {
        const needs = await ref.host.solver.needs(siteId, coverage)
        if (siteId !== SAME_SIZE_SITE) return needs
        const at = (slot: number) => new Date(Date.parse(coverage.startUtc) + slot * 900_000).toISOString().replace('.000Z', 'Z')
        const extra = Array.from({ length: SAME_SIZE_EXTRA_MILESTONES }, (_, k) => ({
          startUtc: at(k % (coverage.slots - 4)), deadlineUtc: at(k % (coverage.slots - 4) + 4), energyKwh: 1.5, powerKw: 1.5,
        }))
        return { ...needs, milestones: [...needs.milestones, ...extra] }
      },
      enqueueNextCycle (inputs) {
        queued += inputs.length
        for (const i of inputs) latest.set(`${i.siteId}/${i.targetDate}`, i)
      },
    },
  }
  const config = {
    api: {
      host: '127.0.0.1', port: 0,
      tls: { certFile: cfg.serverCertFile, keyFile: cfg.serverKeyFile, clientCaFile: cfg.clientCaFile },
      // One company stands for every BSP at thousands of requests a second: its budget is
      // never spent, and the check still runs on every request (its cost is measured).
      rateLimit: { get: { perSecond: 1_000_000, burst: 1_000_000 }, post: { perSecond: 1_000_000, burst: 1_000_000 } },
    },
    publish: { schedule: false },
    // Likewise its storage quota: the POST rows send gigabytes a run (1 PiB a day, the bound).
    inbound: { maxBytesPerCompanyPerDay: 2 ** 50 },
    ...(o.postgres ? { store: { kind: 'postgres', postgres: { connectionString: o.postgres.connectionString } } } : {}),
    ...(o.webhooks ? { webhooks: o.webhooks } : {}),
  }
  // For experiments only (e.g. BENCH_E_API='{"logRequests":false}'): the bench's figures use the defaults.
  if (process.env.BENCH_E_API) Object.assign(config.api, JSON.parse(process.env.BENCH_E_API))
  const { handle } = await loadPlugin(repoRoot, host, config)

  const control = serveControl(SERVER_NAME, async (msg: ControlMessage) => {
    if (msg.type === 'publish') {
      // Every site, or `siteIds`. `probe`: the 1 ms loop-delay probe over the publication; `hold`: a
      // window with the probe opens as it ends, for what follows it (webhook deliveries), closed by `stop`.
      await control.begin(`publish ${String(msg.targetDate)}`, msg.probe === true || msg.hold === true)
      const startedAtMs = Date.now()
      const report = await handle.publish({ targetDate: msg.targetDate as string, ...(msg.siteIds ? { siteIds: msg.siteIds as string[] } : {}) })
      const w = await control.end()
      if (msg.hold === true) await control.begin('after the publication', true)
      send({
        type: 'published', startedAtMs, wallMs: w.wallMs, cpuUs: w.cpuUserUs + w.cpuSystemUs, maxStallMs: w.maxStallMs, delay: w.delay,
        published: report.published.length, failed: report.failed.length, firstFailure: report.failed[0]?.reason,
        ...(msg.etags === true ? { etags: report.published.map(p => [p.siteId, p.etag]) } : {}),
        rss: process.memoryUsage.rss(), ...linuxRss(),
      })
    } else if (msg.type === 'metering') {
      // A whole day of every site at once (the heaviest way a host reports), for the day before.
      const day = addDays(parisDateOf(new Date()), -1)
      const { startMs, endMs } = parisDayMs(day)
      const readings: MeterReading[] = []
      for (let ms = startMs; ms < endMs; ms += 900_000) {
        const startUtc = new Date(ms).toISOString()
        const endUtc = new Date(ms + 900_000).toISOString()
        for (const site of ref.sites) readings.push({ siteId: site.site_id, startUtc, endUtc, kwh: 2 + (ms / 900_000 % 7) / 10 })
      }
      await control.begin('metering')
      const report = await handle.reportMetering(readings)
      const w = await control.end()
      send({ type: 'metered', targetDate: day, readings: readings.length, accepted: report.accepted, wallMs: w.wallMs, cpuUs: w.cpuUserUs + w.cpuSystemUs, maxStallMs: w.maxStallMs })
    } else if (msg.type === 'rss') {
      const gc = (globalThis as { gc?: () => void }).gc
      for (let i = 0; i < 3; i++) { gc?.(); await new Promise(r => setTimeout(r, 300)) }
      send({ type: 'rss', ...process.memoryUsage(), ...linuxRss(), gcExposed: Boolean(gc) })
    } else if (msg.type === 'drain') {
      latest.clear()
      send({ type: 'drained', queued })
    }
  })
  process.on('SIGTERM', () => { void handle.close().finally(() => process.exit(0)) })

  // A failed publication does not stop E: the POST scenarios can still run.
  let etag = ''
  let publishError: string | undefined
  if (o.publishSiteIds.length) {
    try {
      const report = await handle.publish({ targetDate: o.targetDate, siteIds: o.publishSiteIds })
      if (report.failed.length || !report.published.length) throw new Error(report.failed[0]?.reason ?? 'nothing published')
      etag = report.published[0]!.etag
    } catch (err) {
      publishError = `publication failed: ${(err as Error).message}`
    }
  }
  send({ type: 'ready', port: Number(handle.apiUrl.port), secrets, etag, publishError })
}

main().catch(err => failStart(SERVER_NAME, err))
