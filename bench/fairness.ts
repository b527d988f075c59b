/**
 * `npm run bench -- --only fairness` (or `node --import=tsx bench/fairness.ts [--quick]`):
 * two rows on a real `epx start` (the reference host, the built CLI, LMDB in a temporary
 * data folder, the door in its worker), set up with the CLI as an operator would
 * (bench/README.md "Fairness and the storage quota"; DECISIONS.md "Rate limits and quotas"):
 *
 * (a) fairness: two BSP companies on the same door. `polite` polls GET besoins-agreges on
 *     one keep-alive connection at a steady rate within its budget; its latency is measured
 *     alone, then while `hammer` (in a child process, so the measuring loop is not its) sends
 *     GETs on 32 keep-alive connections at ten times its own budget. The host's event-loop
 *     delay is the plugin's own gauge (`epx_event_loop_delay_seconds`, since the previous
 *     scrape), read at the start and the end of each window.
 * (b) the storage quota: one company POSTs 1,000-site programmes as fast as it can, its
 *     quota a few programmes a day; the data folder's size is sampled every second.
 * @module
 */
import { execFile, fork, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { Agent, request } from 'undici'
import { addDays, parisDateOf } from '../src/contract/paris-day.ts'
import { INBOUND_PATH, OUTBOUND_PATH } from '../src/http/route.ts'
import { programme, siteId } from './fixtures.ts'

export const FAIRNESS = 'fairness'
const here = fileURLToPath(new URL('.', import.meta.url))
const BIN = resolve(here, '../bin/epx.js')

/** Targets of row (a): the polite p99 during the hammering within 2 ms or 1.2 × of alone. */
export const POLITE_P99_OVER_MS = 2
export const POLITE_P99_RATIO = 1.2

interface Bsp { readonly agent: Agent; readonly token: string }
interface Running { readonly child: ChildProcess; readonly api: URL; readonly metrics: URL }

/** `epx` (the built CLI) on the data folder `dir`: the last line of its standard output. */
export function cli (dir: string, ...argv: string[]): Promise<string> {
  return new Promise((ok, fail) => execFile(process.execPath, [BIN, '--data', dir, ...argv], { maxBuffer: 1 << 20 }, (err, out, errOut) =>
    err ? fail(new Error(`epx ${argv.join(' ')}: ${errOut || err.message}`)) : ok(out.trim().split('\n').at(-1)!)))
}

/** `epx init` in a new folder, then the plugin configuration merged over what it wrote. */
async function dataDir (name: string, host: Record<string, unknown>, plugin: Record<string, any>): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), `epx-${name}-`))
  await cli(dir, 'init')
  const file = join(dir, 'epx.config.json')
  const s = JSON.parse(readFileSync(file, 'utf8'))
  s.host = { ...s.host, ...host }
  for (const [k, v] of Object.entries(plugin)) s.plugin[k] = { ...s.plugin[k], ...v }
  s.plugin.metrics = { enabled: true, host: '127.0.0.1', port: 0 }
  writeFileSync(file, JSON.stringify(s, null, 2))
  return dir
}

/** A company with its certificate bundle and a token of both scopes. */
async function company (dir: string, id: string, sites: string, connections = 1): Promise<Bsp> {
  await cli(dir, 'company', 'add', id, '--name', id, '--sites', sites)
  const bundle = join(dir, `${id}-bundle`)
  await cli(dir, 'cert', 'issue', id, '--out', bundle)
  const token = await cli(dir, 'token', 'create', '--company', id, '--scope', 'outbound:besoins-agreges', '--scope', 'inbound:programme-soutirage')
  const read = (f: string) => readFileSync(join(bundle, f))
  return { token, agent: new Agent({ connections, pipelining: 1, connect: { ca: read('ca.crt'), cert: read('client.crt'), key: read('client.key'), servername: 'localhost' } }) }
}

function start (dir: string): Promise<Running> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [BIN, '--data', dir, 'start', '--port', '0', '--console-port', '0', '--cycle', '3600'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    const timer = setTimeout(() => fail(new Error(`epx start did not listen within 60 s: ${out.slice(-500)}`)), 60_000)
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d
      const api = /epx API listening on (https:\/\/\S+\/)/.exec(out)
      const metrics = /metrics, health and readiness on (http:\/\/\S+\/)metrics/.exec(out)
      if (api && metrics) {
        clearTimeout(timer)
        // Its request log is not ours to keep: drained, so its pipe never fills.
        child.stdout!.removeAllListeners('data').resume()
        ok({ child, api: new URL(api[1]!), metrics: new URL(metrics[1]!) })
      }
    })
    child.stderr!.resume()
    child.on('exit', code => { clearTimeout(timer); fail(new Error(`epx start exited (${code}): ${out.slice(-500)}`)) })
  })
}

/** The host's event-loop delay since the previous read (the plugin's gauge), ms. */
async function loopDelay (r: Running): Promise<{ p99Ms: number; maxMs: number }> {
  const text = await (await request(new URL('/metrics', r.metrics))).body.text()
  const q = (name: string) => Number(new RegExp(`^epx_event_loop_delay_seconds\\{quantile="${name}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000
  return { p99Ms: q('0.99'), maxMs: q('max') }
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN

/** `polite` GETs at `perSecond` for `ms`: each answer's latency, in ms, sorted. */
async function poll (r: Running, who: Bsp, path: string, perSecond: number, ms: number): Promise<{ latencies: number[]; statuses: Record<number, number> }> {
  const latencies: number[] = []
  const statuses: Record<number, number> = {}
  const url = new URL(path, r.api)
  const started = performance.now()
  for (let k = 0; performance.now() - started < ms; k++) {
    // A steady schedule: the k-th request is due at k / perSecond, whatever the ones before took.
    const due = started + k * 1000 / perSecond
    const wait = due - performance.now()
    if (wait > 0) await new Promise(ok => setTimeout(ok, wait))
    const t0 = performance.now()
    const res = await request(url, { dispatcher: who.agent, headers: { authorization: `Bearer ${who.token}` } })
    await res.body.dump()
    latencies.push(performance.now() - t0)
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
  }
  return { latencies: latencies.sort((a, b) => a - b), statuses }
}

/** The hammering child: GETs at `perSecond` over `connections` keep-alive connections until told to stop; its statuses. */
async function hammerChild (o: { api: string; path: string; token: string; bundle: string; perSecond: number; connections: number }): Promise<void> {
  const read = (f: string) => readFileSync(join(o.bundle, f))
  const agent = new Agent({ connections: o.connections, connect: { ca: read('ca.crt'), cert: read('client.crt'), key: read('client.key'), servername: 'localhost' } })
  const statuses: Record<number, number> = {}
  let stop = false
  process.on('message', () => { stop = true })
  const url = new URL(o.path, o.api)
  const started = performance.now()
  let k = 0
  const inflight = new Set<Promise<void>>()
  while (!stop) {
    const due = started + k++ * 1000 / o.perSecond
    const wait = due - performance.now()
    if (wait > 0) await new Promise(ok => setTimeout(ok, wait))
    // Open loop at its rate; a connection busy queues in undici, at most 4 × connections in flight.
    if (inflight.size >= 4 * o.connections) await Promise.race(inflight)
    const p: Promise<void> = request(url, { dispatcher: agent, headers: { authorization: `Bearer ${o.token}` } })
      .then(async res => { await res.body.dump(); statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1 }, () => { statuses[0] = (statuses[0] ?? 0) + 1 })
      .finally(() => inflight.delete(p))
    inflight.add(p)
  }
  await Promise.allSettled(inflight)
  process.send!({ statuses, seconds: (performance.now() - started) / 1000 })
  await agent.close()
  process.exit(0)
}

export interface FairnessRow {
  readonly polite: { readonly perSecond: number; readonly alone: Latency; readonly hammered: Latency }
  readonly hammer: { readonly budgetPerSecond: number; readonly sentPerSecond: number; readonly connections: number; readonly statuses: Record<number, number> }
  readonly loop: { readonly alone: { p99Ms: number; maxMs: number }; readonly hammered: { p99Ms: number; maxMs: number } }
  readonly met: boolean
}
interface Latency { readonly n: number; readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number; readonly statuses: Record<number, number> }

const latencyOf = (r: { latencies: number[]; statuses: Record<number, number> }): Latency =>
  ({ n: r.latencies.length, p50Ms: quantile(r.latencies, 0.5), p99Ms: quantile(r.latencies, 0.99), maxMs: r.latencies.at(-1) ?? NaN, statuses: r.statuses })

/** Row (a). */
export async function measureFairness (quick: boolean): Promise<FairnessRow> {
  const politeRate = 20
  const budget = { perSecond: 50, burst: 100 }
  const windowMs = quick ? 10_000 : 30_000
  const targetDate = addDays(parisDateOf(new Date()), 1)
  const dir = await dataDir('fairness', { sites: 2 }, {})
  try {
    const polite = await company(dir, 'polite', siteId(0))
    const hammer = await company(dir, 'hammer', siteId(1))
    await cli(dir, 'company', 'limits', 'hammer', '--get', `${budget.perSecond}/${budget.burst}`)
    await cli(dir, 'publish', '--date', targetDate)
    const r = await start(dir)
    try {
      const path = (site: string) => `${OUTBOUND_PATH}?site_id=${site}&target_date=${targetDate}`
      await poll(r, polite, path(siteId(0)), politeRate, 2000)   // warm-up: connection, JIT
      await loopDelay(r)
      const alone = latencyOf(await poll(r, polite, path(siteId(0)), politeRate, windowMs))
      const loopAlone = await loopDelay(r)
      const child = fork(fileURLToPath(import.meta.url), [], {
        execArgv: ['--import=tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: { ...process.env, EPX_FAIRNESS_HAMMER: JSON.stringify({ api: r.api.href, path: path(siteId(1)), token: hammer.token, bundle: join(dir, 'hammer-bundle'), perSecond: 10 * budget.perSecond, connections: 32 }) },
      })
      const done = new Promise<{ statuses: Record<number, number>; seconds: number }>(ok => child.once('message', m => ok(m as never)))
      await new Promise(ok => setTimeout(ok, 3000))   // the child's start and its connections' handshakes
      await loopDelay(r)
      const hammered = latencyOf(await poll(r, polite, path(siteId(0)), politeRate, windowMs))
      const loopHammered = await loopDelay(r)
      child.send('stop')
      const h = await done
      const sent = Object.values(h.statuses).reduce((a, b) => a + b, 0)
      await Promise.all([polite.agent.close(), hammer.agent.close()])
      return {
        polite: { perSecond: politeRate, alone, hammered },
        hammer: { budgetPerSecond: budget.perSecond, sentPerSecond: sent / h.seconds, connections: 32, statuses: h.statuses },
        loop: { alone: loopAlone, hammered: loopHammered },
        met: hammered.p99Ms <= alone.p99Ms + POLITE_P99_OVER_MS || hammered.p99Ms <= alone.p99Ms * POLITE_P99_RATIO,
      }
    } finally {
      r.child.kill('SIGTERM')
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export interface QuotaRow {
  readonly quotaBytes: number
  readonly programmeBytes: number
  readonly statuses: Record<number, number>
  /** The data folder's bytes on disk (allocated blocks), sampled every second from the first POST. */
  readonly sizes: ReadonlyArray<{ readonly s: number; readonly bytes: number }>
  /** Growth after the first 429, bytes. */
  readonly grewAfterQuota: number
  readonly firstRefusalS: number | undefined
}

/** Bytes the files under `dir` hold on disk (allocated blocks: LMDB's file is sparse). */
function diskBytes (dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) n += diskBytes(p)
    else if (e.isFile()) n += statSync(p).blocks * 512
  }
  return n
}

/** Row (b). */
export async function measureQuota (quick: boolean): Promise<QuotaRow> {
  const targetDate = addDays(parisDateOf(new Date()), 1)
  // Each POST a new programme (a later emitted_at: new instruction ids, the earlier ones kept
  // as superseded), so each accepted one adds its records; every emitted_at has one length.
  const base = Math.floor(Date.now() / 1000) * 1000 - 3_600_000
  const stamp = (k: number) => new Date(base + k * 1000).toISOString().replace('.000Z', 'Z')
  const template = programme(targetDate, 1000, stamp(0)).body
  const bodyOf = (k: number) => template.replace(`"emitted_at":"${stamp(0)}"`, `"emitted_at":"${stamp(k)}"`)
  const programmeBytes = Buffer.byteLength(template)
  const quotaBytes = 4 * programmeBytes + Math.floor(programmeBytes / 2)
  const dir = await dataDir('quota', { sites: 1000 }, {})
  try {
    const flood = await company(dir, 'flood', 'all', 2)
    await cli(dir, 'company', 'limits', 'flood', '--quota-bytes', String(quotaBytes), '--post', '1000/1000')
    const r = await start(dir)
    try {
      const statuses: Record<number, number> = {}
      const sizes: Array<{ s: number; bytes: number }> = []
      const started = performance.now()
      let firstRefusalS: number | undefined
      const sampler = setInterval(() => sizes.push({ s: Math.round((performance.now() - started) / 1000), bytes: diskBytes(dir) }), 1000)
      sizes.push({ s: 0, bytes: diskBytes(dir) })
      const until = started + (quick ? 20_000 : 60_000)
      const url = new URL(INBOUND_PATH, r.api)
      let sent = 0
      // Two at a time, as fast as answers come.
      await Promise.all([0, 1].map(async () => {
        while (performance.now() < until) {
          const res = await request(url, { method: 'POST', dispatcher: flood.agent, headers: { authorization: `Bearer ${flood.token}`, 'content-type': 'application/json' }, body: bodyOf(++sent) })
            .catch(() => undefined)
          if (!res) { statuses[0] = (statuses[0] ?? 0) + 1; continue }
          await res.body.dump()
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
          if (res.statusCode === 429 && firstRefusalS === undefined) firstRefusalS = (performance.now() - started) / 1000
        }
      }))
      clearInterval(sampler)
      sizes.push({ s: Math.round((performance.now() - started) / 1000), bytes: diskBytes(dir) })
      await flood.agent.close()
      const atRefusal = firstRefusalS === undefined ? undefined : sizes.find(x => x.s >= Math.ceil(firstRefusalS!))
      return { quotaBytes, programmeBytes, statuses, sizes, firstRefusalS, grewAfterQuota: atRefusal ? sizes.at(-1)!.bytes - atRefusal.bytes : NaN }
    } finally {
      r.child.kill('SIGTERM')
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`

/** Both rows, printed. */
export async function runFairness (quick: boolean): Promise<void> {
  console.log(`\nload average at the start: ${loadavg().map(x => x.toFixed(1)).join(', ')} (2 cores here: figures of a loaded machine are not a quiet one's)`)
  const a = await measureFairness(quick)
  console.log('\nFairness (two companies on one door, GET besoins-agreges)')
  console.log(`  polite, ${a.polite.perSecond}/s on 1 connection, alone:     p50 ${a.polite.alone.p50Ms.toFixed(2)} ms, p99 ${a.polite.alone.p99Ms.toFixed(2)} ms, max ${a.polite.alone.maxMs.toFixed(1)} ms (${a.polite.alone.n} requests, ${JSON.stringify(a.polite.alone.statuses)})`)
  console.log(`  polite, during the hammering:        p50 ${a.polite.hammered.p50Ms.toFixed(2)} ms, p99 ${a.polite.hammered.p99Ms.toFixed(2)} ms, max ${a.polite.hammered.maxMs.toFixed(1)} ms (${a.polite.hammered.n} requests, ${JSON.stringify(a.polite.hammered.statuses)})`)
  console.log(`  hammer: budget ${a.hammer.budgetPerSecond}/s, sent ${a.hammer.sentPerSecond.toFixed(0)}/s on ${a.hammer.connections} connections: ${JSON.stringify(a.hammer.statuses)}`)
  console.log(`  host loop delay (the plugin's gauge): alone p99 ${a.loop.alone.p99Ms.toFixed(2)} ms, max ${a.loop.alone.maxMs.toFixed(1)} ms; hammered p99 ${a.loop.hammered.p99Ms.toFixed(2)} ms, max ${a.loop.hammered.maxMs.toFixed(1)} ms`)
  console.log(`  target (p99 within ${POLITE_P99_OVER_MS} ms or ${POLITE_P99_RATIO} × of alone): ${a.met ? 'met' : 'MISSED'}`)
  const b = await measureQuota(quick)
  console.log(`\nStorage quota (1,000-site programmes of ${mb(b.programmeBytes)}, as fast as answers come; quota ${mb(b.quotaBytes)} a day)`)
  console.log(`  answers: ${JSON.stringify(b.statuses)}; first 429 after ${b.firstRefusalS?.toFixed(1) ?? '–'} s`)
  console.log(`  data folder on disk: ${b.sizes.map(x => `${x.s}s ${mb(x.bytes)}`).join(', ')}`)
  console.log(`  grew after the first 429: ${mb(b.grewAfterQuota)}`)
}

if (process.env.EPX_FAIRNESS_HAMMER) {
  await hammerChild(JSON.parse(process.env.EPX_FAIRNESS_HAMMER))
} else if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await runFairness(process.argv.includes('--quick'))
  process.exit(0)
}
