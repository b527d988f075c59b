/**
 * The 08:00 publication pushed to the BSPs (`--special webhooks`; bench/README.md
 * "Webhooks at the 08:00 publication"; DECISIONS.md "Events for BSPs"): E, activated as
 * the other rows activate it (the reference host, mTLS, LMDB in a temporary folder) with
 * `webhooks.enabled`, `allowPrivateNetworks` and `caFile` the bench's CA, manages 10,000
 * sites held by ten companies of 1,000 sites each; each company has one endpoint,
 * registered by `epx webhook add` (the echo check answered), a BSP kit receiver on
 * 127.0.0.1 in a child process (webhook-receivers.ts). Each run publishes the day and waits
 * until every endpoint has its 1,000 `besoins_agreges.publie` events; it counts them (once
 * each, in id order), times them from the publication's start, reads the solver thread's
 * loop delay (the host probe at 1 ms) after the publication against the same probe quiet
 * just before, and E's CPU per delivered event (the same publication's CPU with no endpoint
 * registered taken out). Only the public activation and configuration: wherever the
 * deliverer runs, the row measures the same thing.
 * @module
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import type { Child } from '../test/helpers/child.ts'
import { cli } from './fairness.ts'
import { siteId } from './fixtures.ts'
import { DELAY_MAX_MS, DELAY_P99_OVER_QUIET_MS } from './host-probe.ts'
import { fmt, spread, type Target } from './report.ts'
import type { EndpointReport } from './webhook-receivers.ts'
import { valueTarget } from './targets.ts'

export const WEBHOOK_SITES = 10_000
export const WEBHOOK_ENDPOINTS = 10
/**
 * The receivers' nice value: a BSP's endpoint runs on another machine, so here it must not
 * take a core from the solver's thread at every delivery it wakes for (bench/README.md
 * "The load client's priority" says the same of the rounds' client).
 */
export const RECEIVERS_NICE = 10
/** The publication row's target (bench/README.md "Targets"), held with deliveries under way too. */
export const PUBLICATION_WALL_MS = 1500

interface Delay { readonly p99Ms: number; readonly maxMs: number }

export interface WebhookRun {
  readonly loadAvg: number
  /** The probe with nothing to do, just before the publication. */
  readonly quiet: Delay
  /** `handle.publish()`: wall, process CPU, the probe over it (deliveries already under way). */
  readonly publication: { readonly wallMs: number; readonly cpuMs: number; readonly delay: Delay; readonly failed: number }
  /** From the publication's end until every endpoint had every event: the deliveries alone. */
  readonly after: { readonly wallMs: number; readonly cpuMs: number; readonly delay: Delay }
  /** From the publication's start to the last event's arrival at its endpoint; undefined when some never came. */
  readonly deliveredMs?: number
  /** E's CPU per delivered event: the run's, less the publication's own (with no endpoint), µs. */
  readonly cpuUsPerEvent: number
  /** The same with the publication's CPU left in. */
  readonly rawCpuUsPerEvent: number
  /** Events missing, repeated, out of order, unexpected or refused, over every endpoint. */
  readonly faults: number
  readonly firstFault?: string
  readonly endpoints: readonly EndpointReport[]
}

export interface WebhookRow {
  readonly sites: number
  readonly endpoints: number
  readonly perEndpoint: number
  readonly latencyMs: number
  readonly receiversNice: number
  /** The publications before any endpoint was registered (the first one warms up); `after`, the probe over the seconds after each. */
  readonly baseline: ReadonlyArray<{ readonly wallMs: number; readonly cpuMs: number; readonly delay: Delay; readonly after: Delay }>
  /** `epx webhook add` of every endpoint, one after the other, each answering the echo check. */
  readonly registerMs: number
  readonly runs: readonly WebhookRun[]
}

export interface WebhookInput {
  /** Starts a bench child (`file` relative to bench/). */
  readonly start: (name: string, file: string, env: Record<string, string>) => Child
  /** E's built server (run.ts `E_SERVER`). */
  readonly eServer: string
  readonly tls: { readonly serverCertFile: string; readonly serverKeyFile: string; readonly clientCaFile: string; readonly caFile: string }
  readonly dataDir: string
  readonly targetDate: string
  readonly quick: boolean
  /** Sites in all, shared evenly by the companies (default 10,000). */
  readonly sites?: number
  /** The receivers' fixed latency before their 200, ms (default 0). */
  readonly latencyMs?: number
  /** The receivers' nice value (default RECEIVERS_NICE). */
  readonly nice?: number
}

const msg = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0]!.slice(0, 300)
const delayOf = (d: unknown): Delay => {
  const x = d as Delay | undefined
  if (!x) throw new Error('E sent no probe figures')
  return { p99Ms: x.p99Ms, maxMs: x.maxMs }
}

/** What went wrong at the endpoints, counted; the first fault said. */
export function faultsOf (endpoints: readonly EndpointReport[], perEndpoint: number): { faults: number; first?: string } {
  let faults = 0
  let first: string | undefined
  endpoints.forEach((e, k) => {
    const missing = Math.max(0, perEndpoint - e.distinct)
    const n = missing + e.repeated + e.outOfOrder + e.unexpected + e.refused
    faults += n
    if (n && !first) {
      first = `endpoint ${k + 1}: ${e.distinct} of ${perEndpoint} events, ${e.repeated} repeated, ${e.outOfOrder} out of order, ${e.unexpected} unexpected, ${e.refused} refused` +
        (e.firstRefusal ? ` (${e.firstRefusal})` : '')
    }
  })
  return { faults, ...(first ? { first } : {}) }
}

export async function measureWebhooks (i: WebhookInput): Promise<WebhookRow> {
  const sites = i.sites ?? WEBHOOK_SITES
  const perEndpoint = Math.floor(sites / WEBHOOK_ENDPOINTS)
  // At most the reference host's 10,000 (`host.sites` of the epx.config.json the CLI reads).
  if (!(perEndpoint >= 1 && sites <= WEBHOOK_SITES)) throw new Error(`--webhook-sites ${sites}: from ${WEBHOOK_ENDPOINTS} to ${WEBHOOK_SITES}, a tenth of them to each endpoint`)
  const latencyMs = i.latencyMs ?? 0
  const nice = i.nice ?? RECEIVERS_NICE
  const total = perEndpoint * WEBHOOK_ENDPOINTS
  // Company k holds the k-th tenth of the sites.
  const companies = Array.from({ length: WEBHOOK_ENDPOINTS }, (_, k) => ({ id: `bsp-${String(k + 1).padStart(2, '0')}`, firstSite: k * perEndpoint, sites: perEndpoint }))
  const webhooks = { enabled: true, allowPrivateNetworks: true, caFile: i.tls.caFile }
  // `epx webhook add`, another process, reads the plugin's settings from the data folder, as the demo writes them.
  mkdirSync(i.dataDir, { recursive: true })
  writeFileSync(join(i.dataDir, 'epx.config.json'), JSON.stringify({ host: { sites: total }, plugin: { store: { path: 'epx.lmdb' }, webhooks } }, null, 2))

  const receivers = i.start('webhook receivers', 'webhook-receivers.ts', { BENCH_RECEIVERS_NICE: String(nice) })
  let e: Child | undefined
  try {
    await receivers.next('ready', 60_000)
    const { ports } = await receivers.ask({ type: 'listen', count: WEBHOOK_ENDPOINTS, certFile: i.tls.serverCertFile, keyFile: i.tls.serverKeyFile, latencyMs }, 'listening', 30_000) as unknown as { ports: number[] }
    e = i.start('E (webhooks)', i.eServer, {
      BENCH_CONFIG: JSON.stringify({ serverCertFile: i.tls.serverCertFile, serverKeyFile: i.tls.serverKeyFile, clientCaFile: i.tls.clientCaFile, documentFile: '', etag: '', lastModified: '' }),
      BENCH_E: JSON.stringify({ dataDir: i.dataDir, sites: total, clientSubject: 'CN=unused,O=Bench', publishSiteIds: [], targetDate: i.targetDate, companies, webhooks }),
    })
    await e.next('ready', 120_000)
    const publish = async (hold: boolean, siteIds?: readonly string[]) => {
      const r = await e!.ask({ type: 'publish', targetDate: i.targetDate, probe: true, hold, ...(siteIds ? { siteIds } : {}) }, 'published', 300_000)
      if (Number(r.failed)) throw new Error(`the publication failed for ${Number(r.failed)} sites: ${String(r.firstFailure)}`)
      return { startedAtMs: Number(r.startedAtMs), wallMs: Number(r.wallMs), cpuMs: Number(r.cpuUs) / 1000, delay: delayOf(r.delay), failed: Number(r.failed) }
    }

    // 1. The same publication with no endpoint yet: its own CPU, taken out of each run's, and
    //    the loop's delay over the seconds after it (its collections, the machine's share).
    const baseline: WebhookRow['baseline'][number][] = []
    for (let n = 0; n < (i.quick ? 1 : 2); n++) {
      const b = await publish(true)
      await new Promise(resolve => setTimeout(resolve, i.quick ? 2000 : 5000))
      const after = delayOf((await e.ask({ type: 'stop' }, 'window', 10_000)).delay)
      baseline.push({ wallMs: b.wallMs, cpuMs: b.cpuMs, delay: b.delay, after })
      process.stderr.write(`  webhooks: publication of ${total} sites with no endpoint: ${b.wallMs.toFixed(0)} ms, CPU ${b.cpuMs.toFixed(0)} ms, loop delay p99 ${b.delay.p99Ms.toFixed(1)} ms, ` +
        `max ${b.delay.maxMs.toFixed(1)} ms; after it p99 ${after.p99Ms.toFixed(1)} ms, max ${after.maxMs.toFixed(1)} ms\n`)
    }

    // 2. One endpoint per company, as an operator registers it (from the company's next event on).
    const t0 = performance.now()
    const secrets: string[] = []
    for (const [k, c] of companies.entries()) {
      // Its secret alone on the last line, as the demo hands it to its receiver.
      secrets.push(await cli(i.dataDir, 'webhook', 'add', c.id, `https://127.0.0.1:${ports[k]}/epx/webhooks`))
    }
    const registerMs = performance.now() - t0
    await receivers.ask({ type: 'secrets', secrets }, 'secretsSet', 10_000)
    // A daemon at 08:00 has delivered before: one event to each endpoint first (the HTTP client
    // loaded with the first endpoint, each endpoint's lease claimed, its first connection made).
    await receivers.ask({ type: 'expect', perEndpoint: 1, targetDate: i.targetDate }, 'expecting', 10_000)
    await publish(false, companies.map(c => siteId(c.firstSite)))
    await receivers.next('delivered', 60_000)
    const warm = faultsOf((await receivers.ask({ type: 'report' }, 'report', 10_000) as unknown as { endpoints: EndpointReport[] }).endpoints, 1)
    if (warm.faults) throw new Error(`the first delivery to each endpoint: ${warm.first}`)

    // 3. The day's publication, each run a new revision of every site: every event to its endpoint.
    const runs: WebhookRun[] = []
    for (let n = 0; n < (i.quick ? 1 : 3); n++) {
      await e.ask({ type: 'start', label: 'quiet', probe: true }, 'started', 10_000)
      await new Promise(resolve => setTimeout(resolve, i.quick ? 1000 : 3000))
      const quiet = delayOf((await e.ask({ type: 'stop' }, 'window', 10_000)).delay)
      await receivers.ask({ type: 'expect', perEndpoint, targetDate: i.targetDate }, 'expecting', 10_000)
      const loadAvg = loadavg()[0]!
      const pub = await publish(true)
      const delivered = await receivers.next('delivered', i.quick ? 180_000 : 300_000).catch((err: unknown) => { process.stderr.write(`  webhooks: ${msg(err)}\n`); return undefined })
      const w = await e.ask({ type: 'stop' }, 'window', 10_000)
      const { endpoints } = await receivers.ask({ type: 'report' }, 'report', 10_000) as unknown as { endpoints: EndpointReport[] }
      const { faults, first } = faultsOf(endpoints, perEndpoint)
      const events = perEndpoint * WEBHOOK_ENDPOINTS
      const cpuMs = pub.cpuMs + (Number(w.cpuUserUs) + Number(w.cpuSystemUs)) / 1000
      const run: WebhookRun = {
        loadAvg, quiet,
        publication: { wallMs: pub.wallMs, cpuMs: pub.cpuMs, delay: pub.delay, failed: pub.failed },
        after: { wallMs: Number(w.wallMs), cpuMs: cpuMs - pub.cpuMs, delay: delayOf(w.delay) },
        ...(delivered ? { deliveredMs: Number(delivered.lastAtMs) - pub.startedAtMs } : {}),
        cpuUsPerEvent: (cpuMs - baseline.at(-1)!.cpuMs) * 1000 / events,
        rawCpuUsPerEvent: cpuMs * 1000 / events,
        faults, ...(first ? { firstFault: first } : {}), endpoints,
      }
      runs.push(run)
      process.stderr.write(`  webhooks run ${n + 1}: ${run.deliveredMs === undefined ? 'not all delivered' : `every event at its endpoint ${run.deliveredMs.toFixed(0)} ms after the publication's start`} ` +
        `(publication ${pub.wallMs.toFixed(0)} ms), ${run.cpuUsPerEvent.toFixed(0)} µs of E's CPU an event, loop delay after the publication p99 ${run.after.delay.p99Ms.toFixed(1)} ms ` +
        `(quiet ${quiet.p99Ms.toFixed(1)}), max ${run.after.delay.maxMs.toFixed(1)} ms; ${faults} faults${first ? `: ${first}` : ''} (load ${loadAvg.toFixed(1)})\n`)
      if (!delivered) break
    }
    return { sites: total, endpoints: WEBHOOK_ENDPOINTS, perEndpoint, latencyMs, receiversNice: nice, baseline, registerMs, runs }
  } finally {
    await e?.stop()
    await receivers.stop()
    rmSync(i.dataDir, { recursive: true, force: true })
  }
}

/** The worst run's figure: the targets hold for every run. */
const worst = (runs: readonly WebhookRun[], f: (r: WebhookRun) => number): number | undefined => runs.length ? Math.max(...runs.map(f)) : undefined

/** bench/README.md "Targets": every event once, in order; the solver's loop while they go; the publication's wall time. */
export function webhookTargets (w: WebhookRow | { readonly error: string } | undefined): Target[] {
  const why = w === undefined ? 'left out (--special)' : 'error' in w ? w.error : undefined
  const row = w && !('error' in w) ? w : undefined
  const runs = row?.runs ?? []
  const size = `${(row?.sites ?? WEBHOOK_SITES).toLocaleString('en')} sites to ${row?.endpoints ?? WEBHOOK_ENDPOINTS} endpoints`
  const delivered = spread(runs.map(r => r.deliveredMs ?? NaN))
  const cpu = spread(runs.map(r => r.cpuUsPerEvent))
  const wall = spread(runs.map(r => r.publication.wallMs))
  const base = row?.baseline.at(-1)
  const first = runs.find(r => r.firstFault)?.firstFault
  return [
    valueTarget(`Webhooks, ${size}: events missing, repeated or out of order`, 0, 'events', runs.length ? runs.reduce((n, r) => n + r.faults, 0) : undefined,
      why ?? (first ?? `every event once, in id order; delivered ${fmt(delivered, 0)} ms after the publication's start, E's CPU ${fmt(cpu, 0)} µs an event`)),
    valueTarget('Webhooks: loop delay after the publication, p99 − quiet p99 (worst run)', DELAY_P99_OVER_QUIET_MS, 'ms', worst(runs, r => r.after.delay.p99Ms - r.quiet.p99Ms),
      why ?? `p99 ${runs.map(r => r.after.delay.p99Ms.toFixed(1)).join(', ')} ms, quiet ${runs.map(r => r.quiet.p99Ms.toFixed(1)).join(', ')} ms`),
    valueTarget('Webhooks: loop delay after the publication, max (worst run)', DELAY_MAX_MS, 'ms', worst(runs, r => r.after.delay.maxMs),
      why ?? `during the publication ${runs.map(r => r.publication.delay.maxMs.toFixed(1)).join(', ')} ms; with no endpoint ${base?.delay.maxMs.toFixed(1)} ms, after it ${base?.after.maxMs.toFixed(1)} ms`),
    valueTarget(`Webhooks: publication of ${(row?.sites ?? WEBHOOK_SITES).toLocaleString('en')} sites with deliveries under way, wall (median)`, PUBLICATION_WALL_MS, 'ms', wall?.median,
      why ?? `with no endpoint ${base?.wallMs.toFixed(0)} ms`, wall),
  ]
}

export function webhookLines (w: WebhookRow | { readonly error: string }): string[] {
  if ('error' in w) return [`Webhooks at the publication failed: ${w.error}`]
  const d = (x: Delay) => `${x.p99Ms.toFixed(1)} / ${x.maxMs.toFixed(1)}`
  const lines = [
    `Webhooks at the publication: ${w.sites} sites, ${w.endpoints} companies of ${w.perEndpoint} sites, one endpoint each (BSP kit receivers in a child process at nice ${w.receiversNice}, ${w.latencyMs} ms before each 200); ` +
      `${w.endpoints} × epx webhook add in ${w.registerMs.toFixed(0)} ms`,
    `  with no endpoint: publication ${w.baseline.map(b => `${b.wallMs.toFixed(0)} ms (CPU ${b.cpuMs.toFixed(0)} ms, loop p99 / max ${d(b.delay)} ms, after it ${d(b.after)} ms)`).join(', ')}`,
  ]
  for (const [k, r] of w.runs.entries()) {
    lines.push(`  run ${k + 1} (load ${r.loadAvg.toFixed(1)}): delivered ${r.deliveredMs === undefined ? 'NOT ALL' : `${r.deliveredMs.toFixed(0)} ms`} after the publication's start; ` +
      `publication ${r.publication.wallMs.toFixed(0)} ms (CPU ${r.publication.cpuMs.toFixed(0)} ms, loop p99 / max ${d(r.publication.delay)} ms); ` +
      `after it ${r.after.wallMs.toFixed(0)} ms (CPU ${r.after.cpuMs.toFixed(0)} ms, loop p99 / max ${d(r.after.delay)} ms; quiet ${d(r.quiet)} ms); ` +
      `E's CPU ${r.cpuUsPerEvent.toFixed(0)} µs an event (${r.rawCpuUsPerEvent.toFixed(0)} with the publication's); ${r.faults} faults${r.firstFault ? `: ${r.firstFault}` : ''}`)
  }
  return lines
}
