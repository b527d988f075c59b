/**
 * `npm run bench [-- --quick]`: A (bare node:https), B (Fastify), D (Fastify doing epx's
 * work per request: log, caller's check, store reads), C (Fastify + a durable
 * LMDB commit), E (epx through the reference host) and E-pg (the same on the PostgreSQL
 * store, a throwaway cluster: `postgres.ts`) side by side in one run, each in its own process, loaded in alternation
 * by a separate load process; then E alone for publication, a large programme and memory.
 * Exit 0 whenever the bench itself worked (a missed target is a measurement), 1 if it broke.
 * Then the sustained scenario (open loop at a fixed rate, latency tails; `sustained.ts`).
 * Then the host probe (event-loop delay, main-thread CPU, handshakes; `host-probe.ts`).
 * Options: --quick, --rounds N, --max-rounds N, --budget S, --duration MS, --first-warmup MS,
 * --only "GET 200,POST 1×96,sustained,host" (or none; "fairness": bench/fairness.ts's two rows alone; "E-pg": E-pg's rows alone, with the servers they compare with), --no-special, --special "publication,programme,rss,ops,console"
 * (E's special measurements to run, default all), --servers A,B,C,D,E,E-pg, --connections N,
 * --profile (each window profiled inside its server, its worker threads too; bench/results/profiles/<server>-<window>[-workerN].cpuprofile),
 * --client-nice N (the rounds' load client's nice value; default E's door's, api.workerNice),
 * --webhook-sites N, --webhook-latency MS, --webhook-nice N (`--special webhooks`: sites in all, 10,000 by default; the receivers'
 * latency before each 200, 0 by default; their nice value, 10 by default).
 * @module
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { request } from 'undici'
import { ensureDevPki, issueCert, pkiPaths, readClientCa } from '../src/auth/pki.ts'
import { INBOUND_PATH, OUTBOUND_PATH } from '../src/http/route.ts'
import { configSchema } from '../src/config-schema.ts'
import { besoinsAgreges, benchEmittedAt, benchTargetDate, programme, siteId, siteIds } from './fixtures.ts'
import { Child } from '../test/helpers/child.ts'
import { E_PG, SCENARIOS, SERVERS, type Sample, type Scenario, type ServerName } from './report.ts'
import { countersPerRequest, startBenchPostgres, type BenchPostgres } from './postgres.ts'
import { measureSpecials, SPECIAL_PARTS, type SpecialPart, type Specials } from './specials.ts'
import { measureOpsShare, type OpsShare } from './ops-share.ts'
import { measureConsolePages } from './console-pages.ts'
import { measureWebhooks, type WebhookRow } from './webhooks.ts'
import { measureSustained, SUSTAINED, type Sustained } from './sustained.ts'
import { FAIRNESS, runFairness } from './fairness.ts'
import { buildOutput, scenariosToNarrow } from './summary.ts'
import { HOST, measureHost, servedIn, type HostProbe, type ProbeServer } from './host-probe.ts'
import type { RunSpec, LoadResult } from './load.ts'
import type { RateStream } from './open-loop.ts'

const here = fileURLToPath(new URL('.', import.meta.url))
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    'max-rounds': { type: 'string' },
    budget: { type: 'string' },
    duration: { type: 'string' },
    'first-warmup': { type: 'string' },
    only: { type: 'string' },
    'no-special': { type: 'boolean', default: false },
    special: { type: 'string' },
    profile: { type: 'boolean', default: false },
    connections: { type: 'string' },
    servers: { type: 'string', default: SERVERS.join(',') },
    'client-nice': { type: 'string' },
    'webhook-sites': { type: 'string' },
    'webhook-latency': { type: 'string' },
    'webhook-nice': { type: 'string' },
  },
})
const quick = args.quick!
// `--only fairness`: the fairness and storage-quota rows alone, on `epx start` servers of their own (bench/fairness.ts).
if (args.only?.trim() === FAIRNESS) {
  await runFairness(quick)
  process.exit(0)
}
// `--only none`: E's special measurements alone. An unknown name is a mistake, not an empty run.
const only = args.only?.split(',').map(x => x.trim()).filter(Boolean)
const unknown = only?.filter(x => x !== 'none' && x !== SUSTAINED && x !== HOST && x !== E_PG && !(SCENARIOS as readonly string[]).includes(x)) ?? []
if (unknown.length) {
  console.error(`bench: unknown scenario ${unknown.map(x => `"${x}"`).join(', ')} in --only; the scenarios are ${[...SCENARIOS, SUSTAINED, HOST].map(x => `"${x}"`).join(', ')}, "none" for E's special measurements alone, or "${E_PG}" for E-pg's rows alone`)
  process.exit(2)
}
/**
 * `--only E-pg`: E-pg's rows alone: the scenarios named beside it (all four and the
 * sustained one when none is), on E-pg and the servers its rows compare with (B, C and E;
 * A is no baseline of E-pg's), without the host probe and E's specials (unless --special).
 */
const onlyEpg = only?.includes(E_PG) ?? false
const onlyNamed = only?.filter(x => x !== E_PG)
const scenarioOnly = onlyEpg && !onlyNamed!.length ? undefined : onlyNamed
const wantedServers = args.servers!.split(',').map(x => x.trim()).filter(x => !(onlyEpg && x === 'A'))
const unknownServer = wantedServers.filter(x => !(SERVERS as readonly string[]).includes(x))
if (unknownServer.length) {
  console.error(`bench: unknown server ${unknownServer.map(x => `"${x}"`).join(', ')} in --servers; they are ${SERVERS.join(', ')}`)
  process.exit(2)
}
if (onlyEpg && !wantedServers.includes(E_PG)) wantedServers.push(E_PG)
// `--only none --special rss`: the memory row alone (a minute and a half, not a whole run).
const specialParts = args['no-special'] || (onlyEpg && args.special === undefined) ? [] : args.special?.split(',').map(x => x.trim()).filter(Boolean) ?? [...SPECIAL_PARTS]
const unknownPart = specialParts.filter(x => !(SPECIAL_PARTS as readonly string[]).includes(x))
if (unknownPart.length) {
  console.error(`bench: unknown special ${unknownPart.map(x => `"${x}"`).join(', ')} in --special; they are ${SPECIAL_PARTS.map(x => `"${x}"`).join(', ')}`)
  process.exit(2)
}
const plan = {
  rounds: Number(args.rounds ?? (quick ? 2 : 5)),
  // Rounds are added while a ratio's interval is a tenth of its target wide or more,
  // up to this many in all and within this many seconds after the planned ones.
  // `--only E-pg`: the planned rounds alone unless asked (the added rounds narrow E's targets, not E-pg's rows).
  maxRounds: Number(args['max-rounds'] ?? (quick ? 2 : onlyEpg ? Number(args.rounds ?? 5) : 20)),
  budgetS: Number(args.budget ?? (quick || onlyEpg ? 0 : 600)),
  durationMs: Number(args.duration ?? (quick ? 700 : 2000)),
  warmupMs: quick ? 250 : 700,
  // A server's first window of a scenario warms up longer: its JIT (and the load client's)
  // takes seconds of load to settle, and those seconds are not what a daemon serving for
  // days costs. Measured in round 1 alone, they widened every interval.
  firstWarmupMs: Number(args['first-warmup'] ?? (quick ? 2500 : 5000)),
  connections: Number(args.connections ?? 8),
  eSites: 1000,
  scenarios: scenarioOnly ? SCENARIOS.filter(s => scenarioOnly.includes(s)) : [...SCENARIOS],
  sustained: !scenarioOnly || scenarioOnly.includes(SUSTAINED),
  host: !only || (!onlyEpg && only.includes(HOST)),
  servers: wantedServers,
}
const maxRequests: Record<Scenario, number> = { 'GET 200': 300_000, 'GET 304': 300_000, 'POST 1×96': 100_000, 'POST 100×96': 5_000 }
const CLIENT_SUBJECT = 'CN=bench-bsp,O=Bench'
const children: Child[] = []
const tmp = mkdtempSync(join(tmpdir(), 'epx-bench-'))
/** E-pg's database cluster, destroyed with the run. */
let pgCluster: BenchPostgres | undefined

// Never hang: the whole run has a deadline, and every child dies with it (E-pg, a fifth
// server in every round and in the sustained scenario, takes a quarter more time; the
// webhook row, its own E over 10,000 sites, a minute in --quick and two in a full run).
const extraMs = plan.budgetS * 1000 + (specialParts.includes('webhooks') ? (quick ? 3 : 5) * 60_000 : 0)
const watchdog = setTimeout(() => {
  console.error('bench: watchdog expired, killing every child')
  for (const c of children) c.kill()
  pgCluster?.cluster.destroy()
  process.exit(1)
}, (quick ? 8 * 60_000 : 38 * 60_000) + extraMs)
watchdog.unref()
const childDeadline = String((quick ? 9 * 60_000 : 39 * 60_000) + extraMs)

function startChild (name: string, file: string, env: Record<string, string>, execArgv: string[] = []): Child {
  const built = file.endsWith('.js')
  const c = new Child(name, join(here, file), { env: { BENCH_CHILD_DEADLINE_MS: childDeadline, ...env }, execArgv, tsx: !built })
  children.push(c)
  return c
}

/**
 * E runs as a solver daemon does: plain JavaScript, no TypeScript loader in the process
 * (tsx's loader thread alone is ~37 MB of RSS). Its harness and the reference host are
 * built here; the plugin itself is loaded through its manifest, from dist/ (scripts/build.mjs).
 */
const E_SERVER = '.build/epx-server.js'
function buildEServer (): void {
  const build = join(here, '../scripts/build.mjs')
  execFileSync(process.execPath, [build], { stdio: 'inherit' })
  execFileSync(process.execPath, [build, '--out', join(here, '.build'), '--entry', 'epx-server=bench/servers/epx.ts'], { stdio: 'inherit' })
}

async function main (): Promise<void> {
  buildEServer()
  // One PKI for every server: the same certificates, the same TLS work.
  ensureDevPki(tmp)
  const pki = pkiPaths(tmp)
  const client = issueCert(readClientCa(tmp)!, { subject: CLIENT_SUBJECT })
  const tls = { ca: readFileSync(pki.caCert, 'utf8'), cert: client.certPem, key: client.keyPem }
  const tlsFiles = { serverCertFile: pki.serverCert, serverKeyFile: pki.serverKey, clientCaFile: pki.clientCaCert }

  const targetDate = benchTargetDate()
  const emittedAt = benchEmittedAt()
  const bodies: Partial<Record<Scenario, string>> = {
    'POST 1×96': programme(targetDate, 1, emittedAt).body,
    'POST 100×96': programme(targetDate, 100, emittedAt).body,
  }
  const status: Record<ServerName, string> = { A: 'ok', B: 'ok', D: 'ok', C: 'ok', E: 'ok', 'E-pg': 'ok' }
  // --profile: each measurement window is profiled inside its server (servers/harness.ts).
  const profileEnv: Record<string, string> = args.profile ? { BENCH_PROFILE_DIR: join(here, 'results', 'profiles') } : {}

  // E first: A and B then serve the very bytes E publishes.
  const eDir = join(tmp, 'e')
  let e: Child | undefined = startChild('E', E_SERVER, {
    BENCH_CONFIG: JSON.stringify({ ...tlsFiles, documentFile: '', etag: '', lastModified: '' }),
    BENCH_E: JSON.stringify({ dataDir: eDir, sites: plan.eSites, clientSubject: CLIENT_SUBJECT, publishSiteIds: [siteId(0)], targetDate }),
    ...profileEnv,
  })
  let eReady: Record<string, any> = {}
  try {
    eReady = await e.next('ready', 90_000)
  } catch (err) {
    status.E = firstLine((err as Error).message)
    e.kill()
    e = undefined
  }
  const secrets = e ? eReady.secrets as { outbound: string; inbound: string } : { outbound: 'epx_' + 'x'.repeat(43), inbound: 'epx_' + 'y'.repeat(43) }
  /** Servers with tokens of their own (E-pg's store is not E's); the others take E's. */
  const eSecrets: Partial<Record<ServerName, typeof secrets>> = {}
  const getPath = `${OUTBOUND_PATH}?site_id=${siteId(0)}&target_date=${targetDate}`

  let docBytes = Buffer.from(JSON.stringify(besoinsAgreges(targetDate)))
  let lastModified = new Date().toUTCString()
  let documentSource = 'bench fixture'
  if (e && !eReady.publishError) {
    const got = await fetchDocument(`https://127.0.0.1:${eReady.port}`, getPath, secrets.outbound, tls)
    // A failing GET does not stop E: its other scenarios still run; this one is reported.
    if (got.status === 200) { docBytes = got.body; lastModified = got.lastModified ?? lastModified; documentSource = "E's published revision, served by A and B too" }
  }
  const docFile = join(tmp, 'document.json')
  writeFileSync(docFile, docBytes)
  const baseCfg = JSON.stringify({ ...tlsFiles, documentFile: docFile, etag: 'W/"bench-baseline"', lastModified })

  const servers: Partial<Record<ServerName, { child: Child; port: number; etag: string }>> = {}
  if (e) servers.E = { child: e, port: Number(eReady.port), etag: String(eReady.etag) }
  const publishErrors: Partial<Record<ServerName, string>> = { E: eReady.publishError }
  // E-pg: the same server on a PostgreSQL store, in a cluster of its own (postgres.ts).
  if (wantedServers.includes(E_PG)) {
    try {
      pgCluster = await startBenchPostgres()
      const c = startChild(E_PG, E_SERVER, {
        BENCH_CONFIG: JSON.stringify({ ...tlsFiles, documentFile: '', etag: '', lastModified: '' }),
        BENCH_SERVER_NAME: E_PG,
        BENCH_E: JSON.stringify({ dataDir: join(tmp, 'e-pg'), sites: plan.eSites, clientSubject: CLIENT_SUBJECT, publishSiteIds: [siteId(0)], targetDate, postgres: { connectionString: pgCluster.url } }),
        ...profileEnv,
      })
      try {
        const r = await c.next('ready', 90_000)
        // Its own tokens: a store of its own.
        eSecrets[E_PG] = r.secrets as typeof secrets
        servers[E_PG] = { child: c, port: Number(r.port), etag: String(r.etag) }
        publishErrors[E_PG] = r.publishError as string | undefined
      } catch (err) {
        c.kill()
        throw err
      }
    } catch (err) {
      status[E_PG] = firstLine((err as Error).message)
    }
  } else status[E_PG] = 'left out (--servers)'
  // D: E's tokens and the GET's document in its own store (servers/fastify-full.ts).
  const dEnv = JSON.stringify({ dir: join(tmp, 'd'), clientCertPem: client.certPem, secrets, siteId: siteId(0), targetDate })
  for (const [name, file] of [['A', 'servers/bare.ts'], ['B', 'servers/fastify.ts'], ['D', 'servers/fastify-full.ts'], ['C', 'servers/fastify-lmdb.ts']] as const) {
    // C and D only where they are measured: their POSTs write to disk.
    if ((name === 'C' || name === 'D') && !wantedServers.includes(name)) { status[name] = 'left out (--servers)'; continue }
    if (name === 'A' && onlyEpg) { status.A = `left out (--only ${E_PG})`; continue }
    const c = startChild(name, file, { BENCH_CONFIG: baseCfg, BENCH_C_DIR: join(tmp, 'c'), BENCH_D: dEnv, ...profileEnv })
    try {
      const r = await c.next('ready', 60_000)
      servers[name] = { child: c, port: Number(r.port), etag: 'W/"bench-baseline"' }
    } catch (err) {
      status[name] = firstLine((err as Error).message)
      c.kill()
    }
  }
  if (!servers.A && !servers.B && !servers.E && !servers[E_PG]) throw new Error(`no server started: ${JSON.stringify(status)}`)

  const load = startChild('load', 'load.ts', {})
  await load.next('ready', 30_000)
  // The rounds' client, the same for every server, never outranks the thread that serves:
  // E's door is niced (api.workerNice) so that the solver's thread goes first, and a client
  // of a higher priority would take the door's core back at every answer it wakes for
  // (bench/README.md "The load client's priority"), which a BSP's client, on another
  // machine, never does. A, B and C serve from threads of nice 0.
  const clientNice = args['client-nice'] === undefined ? servingNice() : Number(args['client-nice'])
  const roundsLoad = clientNice === 0 ? load : startChild('load (rounds)', 'load.ts', { BENCH_LOAD_NICE: String(clientNice) })
  if (roundsLoad !== load) await roundsLoad.next('ready', 30_000)

  const samples: Sample[] = []
  const failures: Record<string, string> = {}
  const skip = new Set<string>()
  for (const name of ['E', E_PG] as const) {
    if (!servers[name] || !publishErrors[name]) continue
    for (const sc of ['GET 200', 'GET 304'] as const) { failures[`${sc}|${name}`] = String(publishErrors[name]); skip.add(`${sc}|${name}`) }
  }
  const order: readonly ServerName[] = SERVERS
  const runRound = async (round: number, scenarios: readonly Scenario[]) => {
    for (const scenario of scenarios) {
      // Rotate the order each round, so no server always runs first (or right after E).
      const rotated = order.map((_, i) => order[(i + round - 1) % order.length]!)
      for (const name of rotated) {
        const s = servers[name]
        if (!s || skip.has(`${scenario}|${name}`) || !wantedServers.includes(name)) continue
        const tokens = eSecrets[name] ?? secrets
        const spec: RunSpec = {
          type: 'run', origin: `https://127.0.0.1:${s.port}`, tls, connections: plan.connections,
          method: scenario.startsWith('GET') ? 'GET' : 'POST',
          path: scenario.startsWith('GET') ? getPath : INBOUND_PATH,
          headers: scenario.startsWith('GET')
            ? { authorization: `Bearer ${tokens.outbound}`, accept: 'application/json', ...(scenario === 'GET 304' ? { 'if-none-match': s.etag } : {}) }
            : { authorization: `Bearer ${tokens.inbound}`, 'content-type': 'application/json' },
          body: bodies[scenario],
          expect: scenario === 'GET 200' ? 200 : scenario === 'GET 304' ? 304 : 202,
          warmupMs: round === 1 ? plan.firstWarmupMs : plan.warmupMs, durationMs: plan.durationMs, maxRequests: maxRequests[scenario],
        }
        const sample = await measure(roundsLoad, s.child, spec, round, name, scenario, name === E_PG ? pgCluster : undefined).catch((err: Error) => {
          failures[`${scenario}|${name}`] ??= `round ${round}: ${firstLine(err.message)}`
          return undefined
        })
        if (sample) samples.push(sample)
        process.stderr.write(sample
          ? `  round ${round} ${pad(scenario, 12)} ${name}: ${sample.rps.toFixed(0)} req/s, ${sample.cpuPerReqUs.toFixed(0)} µs CPU/req (${sample.sysPerReqUs.toFixed(0)} system)` +
            `${sample.dbCpuPerReqUs === undefined ? '' : ` + PostgreSQL ${sample.dbCpuPerReqUs.toFixed(0)} µs`}; load ${loadavg()[0]!.toFixed(1)}\n`
          : `  round ${round} ${pad(scenario, 12)} ${name}: failed\n`)
      }
    }
  }
  // The machine's 1-minute load average around the rounds: on shared cores, read the figures with it.
  const loadAvg = { start: loadavg()[0]!, end: NaN }
  let rounds = 0
  while (rounds < plan.rounds) await runRound(++rounds, plan.scenarios)
  // More rounds, only of the scenarios whose interval is still too wide to judge.
  const extraUntil = Date.now() + plan.budgetS * 1000
  let narrow: Scenario[] = []
  while (rounds < plan.maxRounds && Date.now() < extraUntil && (narrow = scenariosToNarrow(samples, plan.scenarios)).length) {
    process.stderr.write(`  round ${rounds + 1}: the interval of ${narrow.join(', ')} is still a tenth of its target wide or more\n`)
    await runRound(++rounds, narrow)
  }
  loadAvg.end = loadavg()[0]!
  let sustained: Sustained | undefined
  if (plan.sustained) {
    sustained = await measureSustained({
      load, tls, quick, storeDir: eDir, ...(pgCluster ? { db: pgCluster } : {}),
      servers: Object.fromEntries(Object.entries(servers).filter(([n]) => wantedServers.includes(n))),
      stream: (kind, server): Omit<RateStream, 'name' | 'ratePerSec'> => kind === 'GET'
        ? { method: 'GET', path: getPath, headers: { authorization: `Bearer ${(eSecrets[server] ?? secrets).outbound}`, accept: 'application/json' }, expect: 200 }
        : {
            method: 'POST', path: INBOUND_PATH, expect: 202,
            headers: { authorization: `Bearer ${(eSecrets[server] ?? secrets).inbound}`, 'content-type': 'application/json' },
            // Each POST a new programme (later emitted_at, sites in turn), as a BSP's day would be.
            body: bodies['POST 1×96'], vary: { emittedAt, siteId: siteId(0), siteIds: siteIds(plan.eSites) },
          },
    })
  }
  let host: HostProbe | undefined
  if (plan.host) {
    const probeServer = (name: 'A' | 'E'): ProbeServer | undefined => servers[name] && { child: servers[name]!.child, port: servers[name]!.port, secrets }
    host = await measureHost({
      // The rounds' client, for the reason it is theirs: a BSP's client, on another machine,
      // never takes a core from the solver's thread (bench/README.md "The host's view").
      load: roundsLoad, clientNice, tls, quick, rounds: plan.rounds, getPath,
      servers: { A: probeServer('A'), E: probeServer('E') },
      post: { path: INBOUND_PATH, body: bodies['POST 1×96']!, large: programme(targetDate, plan.eSites, emittedAt).body },
      // A second E, the request log off, for the main thread's own figure without it.
      eNoLog: async () => {
        if (!servers.E) return undefined
        const c = startChild('E (log off)', E_SERVER, {
          BENCH_CONFIG: JSON.stringify({ ...tlsFiles, documentFile: '', etag: '', lastModified: '' }),
          BENCH_E: JSON.stringify({ dataDir: join(tmp, 'e-nolog'), sites: plan.eSites, clientSubject: CLIENT_SUBJECT, publishSiteIds: [siteId(0)], targetDate }),
          BENCH_E_API: JSON.stringify({ logRequests: false }),
        })
        const r = await c.next('ready', 90_000)
        if (r.publishError) throw new Error(String(r.publishError))
        return { child: c, port: Number(r.port), secrets: r.secrets as ProbeServer['secrets'] }
      },
    })
  }
  if (roundsLoad !== load) await roundsLoad.stop()
  for (const name of SERVERS) await servers[name]?.child.stop()
  await pgCluster?.destroy()

  let specials: Specials | undefined
  const eParts = specialParts.filter((x): x is Exclude<SpecialPart, 'ops' | 'console' | 'webhooks'> => x !== 'ops' && x !== 'console' && x !== 'webhooks')
  if (eParts.length && servers.E) {
    specials = await measureSpecials({
      parts: eParts,
      start: (env) => startChild('E*', E_SERVER, { ...env, ...profileEnv }, ['--expose-gc']),
      load, tls, quick, targetDate, emittedAt, clientSubject: CLIENT_SUBJECT,
      dataDir: join(tmp, 'e-special'), baseConfig: { ...tlsFiles, documentFile: '', etag: '', lastModified: '' },
    }).catch((err: Error) => ({ error: firstLine(err.message) }))
  }
  await load.stop()
  // The 08:00 publication pushed to ten BSPs' endpoints: an E of its own, its receivers in a child.
  const webhooks: WebhookRow | { error: string } | undefined = !specialParts.includes('webhooks') ? undefined
    : await measureWebhooks({
      start: (name, file, env) => startChild(name, file, { ...env, ...profileEnv }), eServer: E_SERVER,
      tls: { ...tlsFiles, caFile: pki.caCert }, dataDir: join(tmp, 'webhooks'), targetDate, quick,
      ...(args['webhook-sites'] ? { sites: Number(args['webhook-sites']) } : {}),
      ...(args['webhook-latency'] ? { latencyMs: Number(args['webhook-latency']) } : {}),
      ...(args['webhook-nice'] ? { nice: Number(args['webhook-nice']) } : {}),
    }).catch((err: Error) => ({ error: firstLine(err.message) }))
  // What operating epx adds: what the receipts add to a GET and the records to a POST, servers stopped.
  const ops: OpsShare | { error: string } | undefined = !specialParts.includes('ops') ? undefined
    : await measureOpsShare(join(tmp, 'ops-share')).catch((err: Error) => ({ error: firstLine(err.message) }))
  const consolePages = !specialParts.includes('console') ? undefined
    : await measureConsolePages(join(tmp, 'console-pages'), quick).catch((err: Error) => ({ error: firstLine(err.message) }))

  // The baselines are the bench's own servers: if they gave nothing, the bench is broken.
  if (plan.rounds > 0 && plan.scenarios.length > 0 && !samples.some(x => x.server === 'A' || x.server === 'B') && wantedServers.some(x => x === 'A' || x === 'B')) {
    throw new Error(`no baseline measurement succeeded: ${Object.entries(failures).map(([k, v]) => `${k}: ${v}`).join('; ')}`)
  }
  const output = buildOutput({ samples, status, failures, specials, sustained, host, ops, consolePages, webhooks, plan: { ...plan, clientNice, roundsLoadAvg: loadAvg, roundsRun: rounds, quick, argv: process.argv.slice(2) }, documentBytes: docBytes.length, documentSource, targetDate })
  output.print()
  if (rounds > 0 && plan.scenarios.length > 0) console.log(`\nRounds: ${rounds}, load client at nice ${clientNice}; load average ${loadAvg.start.toFixed(1)} at their start, ${loadAvg.end.toFixed(1)} at their end`)
  // A profiled run's figures carry the sampler's cost: they must not replace the results.
  if (args.profile) console.log('\n--profile: bench/results/latest.* left as they were; profiles in bench/results/profiles/')
  else output.write(join(here, 'results'))
}

/** The nice value of the thread that serves E's requests: its door's (api.workerNice), or the solver's. */
function servingNice (): number {
  const api = JSON.parse(process.env.BENCH_E_API ?? '{}') as { inWorker?: boolean; workerNice?: number }
  if (api.inWorker === false) return 0
  const schema = configSchema.properties.api.properties.workerNice
  return Math.min(19, api.workerNice ?? schema.default)
}

/**
 * One window: warm up, start the server's window, load, stop the window. `dbCpuNs` (E-pg):
 * the database's processes' CPU, read just inside the server's window, counted per request.
 */
async function measure (load: Child, server: Child, spec: RunSpec, round: number, name: ServerName, scenario: Scenario, db?: BenchPostgres): Promise<Sample> {
  const budget = spec.durationMs + 60_000
  try {
    const warmed = await load.ask(spec, 'warmed', spec.warmupMs + 60_000)
    if (warmed.errors || warmed.firstUnexpected) throw new Error(String(warmed.firstUnexpected ?? warmed.firstError))
    const c0 = await db?.counters()
    await server.ask({ type: 'start', label: `${scenario} r${round}` }, 'started', 10_000)
    const db0 = db?.cpuNs()
    const r = await load.ask({ type: 'go' }, 'result', budget) as unknown as LoadResult
    const db1 = db?.cpuNs()
    const w = await server.ask({ type: 'stop' }, 'window', 10_000)
    const c1 = await db?.counters()
    if (r.errors || Object.keys(r.unexpected).length) throw new Error(r.firstUnexpected ?? r.firstError ?? 'errors')
    const served = servedIn(w as { requests?: unknown }, r)
    return {
      round, server: name, scenario,
      requests: r.requests, rps: r.rps, p50Ms: r.p50Ms, p99Ms: r.p99Ms,
      cpuPerReqUs: (Number(w.cpuUserUs) + Number(w.cpuSystemUs)) / Math.max(1, served),
      // Never below 0: a process that ends in the window moves from schedstat's ns to its parent's ticks.
      ...(db0 !== undefined && db1 !== undefined ? { dbCpuPerReqUs: Math.max(0, db1 - db0) / 1000 / Math.max(1, served) } : {}),
      ...(c0 && c1 ? { dbPerReq: countersPerRequest(c0, c1, r.requests) } : {}),
      sysPerReqUs: Number(w.cpuSystemUs) / Math.max(1, served),
      maxStallMs: Number(w.maxStallMs), bytesPerResponse: r.bytesPerResponse,
      mainThreadPerReqUs: w.mainThreadCpuUs === null ? null : Number(w.mainThreadCpuUs) / Math.max(1, served),
      heapBytesPerReq: Number(w.heapAllocatedBytes) / Math.max(1, served),
      threadPerReqUs: perRequest(w.threadCpuUs as Record<string, number> | null, served),
      switchesPerReq: switchesPerRequest(w.threadSwitches as Record<string, { voluntary: number; preempted: number }> | null, served),
    }
  } finally {
    await load.ask({ type: 'close' }, 'closed', 15_000).catch(() => {})
  }
}

async function fetchDocument (origin: string, path: string, token: string, tls: { ca: string; cert: string; key: string }) {
  const { Agent } = await import('undici')
  const dispatcher = new Agent({ connect: { ...tls, servername: 'localhost' } })
  try {
    const res = await request(origin + path, { dispatcher, headers: { authorization: `Bearer ${token}` } })
    const body = Buffer.from(await res.body.arrayBuffer())
    const lm = res.headers['last-modified']
    return { status: res.statusCode, body, lastModified: typeof lm === 'string' ? lm : undefined }
  } finally {
    await dispatcher.close()
  }
}

const perRequest = (byThread: Record<string, number> | null, served: number) =>
  byThread && Object.fromEntries(Object.entries(byThread).map(([k, v]) => [k, v / Math.max(1, served)]))
const switchesPerRequest = (byThread: Record<string, { voluntary: number; preempted: number }> | null, served: number) =>
  byThread && Object.fromEntries(Object.entries(byThread).map(([k, v]) => [k, { voluntary: v.voluntary / Math.max(1, served), preempted: v.preempted / Math.max(1, served) }]))
const firstLine = (s: string) => s.split('\n').find(l => l.trim())?.slice(0, 300) ?? s
const pad = (s: string, n: number) => s.padEnd(n)

process.once('SIGINT', () => {
  for (const c of children) c.kill()
  pgCluster?.cluster.destroy()
  rmSync(tmp, { recursive: true, force: true })
  process.exit(130)
})

main()
  .catch(err => {
    console.error(`bench: broken: ${(err as Error)?.stack ?? err}`)
    process.exitCode = 1
  })
  .finally(() => {
    for (const c of children) c.kill()
    pgCluster?.cluster.destroy()
    rmSync(tmp, { recursive: true, force: true })
    clearTimeout(watchdog)
  })
