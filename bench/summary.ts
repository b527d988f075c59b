/**
 * From raw samples and E's special figures to the targets (bench/README.md "Targets"), the stdout table,
 * and the machine-readable results (bench/README.md "How to read the figures").
 * @module
 */
import {
  costOf, E_PG, fmt, fmtInterval, machine, medianInterval, printTable, ratios, renderSvg, SCENARIOS, SERVERS, spread, writeResults,
  type Sample, type Scenario, type ServerName, type Target,
} from './report.ts'
import type { HostProbe } from './host-probe.ts'
import { countLines, hostLines, hostTargets } from './host-summary.ts'
import { roundsTarget, valueTarget } from './targets.ts'
import { HISTORY_DAYS, LARGE_PROGRAMME_SITES, PUBLICATION_SITES, SETTLE_MS, type RssReading, type Specials } from './specials.ts'
import { POST_P99_TARGET_MS, type Sustained } from './sustained.ts'
import type { OpsShare } from './ops-share.ts'
import { consoleTargets, type ConsolePageTimes } from './console-pages.ts'
import { webhookLines, webhookTargets, type WebhookRow } from './webhooks.ts'

export interface SummaryInput {
  readonly samples: readonly Sample[]
  readonly status: Record<ServerName, string>
  /** `${scenario}|${server}` → why that cell has no figures. */
  readonly failures: Readonly<Record<string, string>>
  readonly specials?: Specials
  /** The sustained scenario (open loop, latency tails), unless left out by --only. */
  readonly sustained?: Sustained
  /** The host's view: event-loop delay, main-thread CPU, handshakes (`host-probe.ts`). */
  readonly host?: HostProbe
  /** What operating epx adds: receipts per GET, records per POST (`ops-share.ts`). */
  readonly ops?: OpsShare | { readonly error: string }
  /** The console's pages at 1,000 and 10,000 sites (`console-pages.ts`). */
  readonly consolePages?: readonly ConsolePageTimes[] | { readonly error: string }
  /** The 08:00 publication pushed to ten endpoints (`webhooks.ts`). */
  readonly webhooks?: WebhookRow | { readonly error: string }
  readonly plan: Readonly<Record<string, unknown>> & { readonly quick: boolean }
  readonly documentBytes: number
  readonly documentSource: string
  readonly targetDate: string
}

const MB = 2 ** 20

/** " (anonymous N MB, file-backed N MB)" where Linux told them apart, else nothing. */
function rssSplit (r: RssReading): string {
  return r.rssAnonBytes === undefined ? '' : ` (anonymous ${(r.rssAnonBytes / MB).toFixed(0)} MB, file-backed ${((r.rssFileBytes ?? 0) / MB).toFixed(0)} MB)`
}

function rssText (r: RssReading): string {
  return `RSS ${(r.rssBytes / MB).toFixed(0)} MB${rssSplit(r)}, V8 heap ${(r.heapUsedBytes / MB).toFixed(0)} MB used`
}

/** Beside the memory target: the same process once V8 gave back its young generation, and the restart without the standby. */
function rssAside (r: NonNullable<Specials['rss']>): string {
  const settled = r.restarted?.settled ? `; ${(r.restarted.settled.rssBytes / MB).toFixed(0)} MB ${SETTLE_MS / 1000} s later` : ''
  const bare = r.noStandby ? `; without the door's standby ${(r.noStandby.rssBytes / MB).toFixed(0)} MB` : ''
  return settled + bare
}

/** The CPU-per-request ratios bench/README.md "Targets" sets (whole process, all threads). */
export const RATIO_TARGETS: ReadonlyArray<{ scenario: Scenario; base: 'A' | 'B' | 'C'; limit: number; name: string }> = [
  { scenario: 'GET 200', base: 'A', limit: 1.3, name: 'GET 200: CPU/request E ÷ A' },
  { scenario: 'GET 200', base: 'A', limit: 1.2, name: 'GET 200: CPU/request E ÷ A (stretch)' },
  { scenario: 'GET 304', base: 'A', limit: 1.3, name: 'GET 304: CPU/request E ÷ A' },
  { scenario: 'GET 304', base: 'A', limit: 1.25, name: 'GET 304: CPU/request E ÷ A (stretch)' },
  { scenario: 'POST 1×96', base: 'C', limit: 1.0, name: 'POST 1 site × 96, durable: CPU/req E ÷ C' },
  { scenario: 'POST 1×96', base: 'B', limit: 1.0, name: 'POST 1 site × 96, durable: CPU/req E ÷ B' },
  { scenario: 'POST 100×96', base: 'C', limit: 1.0, name: 'POST 100 sites × 96, durable: E ÷ C' },
  { scenario: 'POST 100×96', base: 'B', limit: 1.15, name: 'POST 100 sites × 96, durable: E ÷ B' },
]

/**
 * The scenarios whose ratio interval is still a tenth of its target wide or more: the
 * ones another round is for (bench/README.md "Ratios judged on their interval").
 */
export function scenariosToNarrow (samples: readonly Sample[], scenarios: readonly Scenario[]): Scenario[] {
  const wide = RATIO_TARGETS.filter(t => scenarios.includes(t.scenario)).filter(t => {
    const i = medianInterval(ratios(samples, t.scenario, t.base))
    return i !== undefined && (i.n < 2 || i.hi - i.lo >= t.limit / 10)
  }).map(t => t.scenario)
  return [...new Set(wide)]
}


/**
 * E-pg's GETs are served from its replica (the local LMDB), as E's: its CPU a request,
 * the database's included, within E's spread over the rounds (at most E's slowest round).
 */
function withinESpread (samples: readonly Sample[], scenario: Scenario): Target {
  const name = `${scenario}: E-pg's CPU/request (PostgreSQL's included) within E's spread`
  const e = spread(samples.filter(s => s.server === 'E' && s.scenario === scenario).map(s => costOf(s)))
  const pg = samples.filter(s => s.server === E_PG && s.scenario === scenario)
  const mine = spread(pg.map(s => costOf(s)))
  if (!e || !mine) return { name, target: "≤ E's max", limit: 1, unit: 'µs', measured: null, met: null, note: `${e ? E_PG : 'E'} did not run this scenario` }
  const vsE = ratios(samples, scenario, 'E', E_PG)
  const without = spread(pg.map(s => costOf(s, false)))!
  return {
    name, target: `≤ ${e.max.toFixed(0)} µs`, limit: e.max, unit: 'µs', measured: mine.median, met: mine.median <= e.max, spread: mine,
    note: `E ${fmt(e, 0)} µs; E-pg ÷ E ${fmt(spread(vsE), 2)} ${fmtInterval(medianInterval(vsE))}; ` +
      `of which PostgreSQL ${fmt(spread(pg.map(s => s.dbCpuPerReqUs ?? 0)), 0)} µs, E-pg without it ${fmt(without, 0)} µs`,
  }
}

function ratioTarget (samples: readonly Sample[], t: typeof RATIO_TARGETS[number]): Target {
  const values = ratios(samples, t.scenario, t.base)
  return roundsTarget(t.name, t.limit, '×', values, `≤ ${t.limit} × ${t.base}`, values.length ? undefined : 'E or the baseline did not run this scenario')
}


export function targetsOf (i: SummaryInput): Target[] {
  const sp = i.specials
  const pubRuns = sp?.publication?.runs ?? []
  const pubWall = spread(pubRuns.map(r => r.wallMs))
  const pubStall = pubRuns.length ? Math.max(...pubRuns.map(r => r.maxStallMs)) : undefined
  const pubFailed = pubRuns.some(r => r.failed > 0)
  const why = (specific?: string) => specific ?? sp?.error ?? (sp ? undefined : 'E unavailable or --no-special')
  const rssDays = sp?.rss?.days
  return [
    ...RATIO_TARGETS.map(t => ratioTarget(i.samples, t)),
    withinESpread(i.samples, 'GET 200'),
    withinESpread(i.samples, 'GET 304'),
    valueTarget(`Publication of ${PUBLICATION_SITES.toLocaleString('en')} sites: wall time (median)`, 1500, 'ms', pubWall?.median,
      pubFailed ? `some sites failed: ${sp?.publication?.firstFailure}` : why(sp?.publicationError), pubWall),
    valueTarget('Publication: longest event-loop stall', 50, 'ms', pubStall, why(sp?.publicationError)),
    valueTarget(`${LARGE_PROGRAMME_SITES.toLocaleString('en')}-site programme: longest stall`, 50, 'ms', sp?.largeProgramme?.maxStallMs, why(sp?.largeProgrammeError)),
    valueTarget(`Meter values of ${PUBLICATION_SITES.toLocaleString('en')} sites × 1 day at once: longest stall`, 50, 'ms', sp?.metering?.maxStallMs, why(sp?.meteringError)),
    roundsTarget('GET realise: CPU/request ÷ GET besoins-agreges\'s', 1, '×', sp?.metering?.realiseRatios ?? [], '≤ 1 × besoins',
      sp?.metering?.realiseRatios?.length
        ? `${sp.metering.realiseCpuPerReqUs!.toFixed(0)} µs (${sp.metering.realiseBytes!.toFixed(0)} B) against ${sp.metering.besoinsCpuPerReqUs!.toFixed(0)} µs (${sp.metering.besoinsBytes!.toFixed(0)} B), paired windows in E`
        : why(sp?.meteringError ?? (sp?.metering ? 'no publication to compare with (--special without publication)' : undefined))),
    // A BSP polls every site it holds, not one: what that adds is epx's (its caches, the receipts per site).
    roundsTarget(`GET 304 of ${PUBLICATION_SITES.toLocaleString('en')} sites in turn: CPU/request ÷ one site's`, 1.3, '×', sp?.polling?.ratios ?? [], '≤ 1.3 × one site',
      sp?.polling ? `${sp.polling.everyCpuPerReqUs.toFixed(1)} µs against ${sp.polling.oneCpuPerReqUs.toFixed(1)} µs, paired windows in E, each site with its ETag`
        : why(sp?.pollingError ?? sp?.publicationError)),
    valueTarget(`RSS, ${PUBLICATION_SITES.toLocaleString('en')} sites × ${HISTORY_DAYS} days stored`, 150, 'MB',
      // The steady state over the stored history (a restart, then one daily run); the
      // figure of the process that wrote all 30 days is printed beside it.
      sp?.rss ? (sp.rss.restarted ?? sp.rss).rssBytes / MB : undefined,
      sp?.rss && rssDays !== HISTORY_DAYS ? `--quick: ${rssDays} days stored, not ${HISTORY_DAYS}`
        : sp?.rss ? (sp.rss.restarted ? `after a restart over the history and one daily publication; ${(sp.rss.rssBytes / MB).toFixed(0)} MB in the process that wrote it` + rssAside(sp.rss) : 'no restart measured: the process that wrote the history') : why(sp?.rssError)),
    sustainedTarget(i.sustained),
    sustainedTarget(i.sustained, E_PG),
    ...hostTargets(i.host),
    valueTarget('Delivery receipts: CPU per GET', 1, 'µs', i.ops && 'receiptNsPerGet' in i.ops ? i.ops.receiptNsPerGet / 1000 : undefined,
      i.ops && 'error' in i.ops ? i.ops.error : i.ops ? 'in one process, 10,000 sites polled round-robin (bench/ops-share.ts)' : 'E unavailable or --no-special'),
    ...consoleTargets(i.consolePages),
    ...webhookTargets(i.webhooks),
  ]
}


/** Absolute, not a ratio: a 202 is durable, and B persists nothing; B's figure is the note. */
function sustainedTarget (su: Sustained | undefined, server: 'E' | 'E-pg' = 'E'): Target {
  const e = su?.servers[server]
  const b = su?.servers.B
  const name = `Sustained ${su?.postRate ?? 200} POST/s + ${su?.getRate ?? 200} GET/s: ${server}'s POST p99`
  if (!e) return valueTarget(name, POST_P99_TARGET_MS, 'ms', undefined, su ? su.failures[server] ?? `${server} did not run it` : 'left out (--only)')
  const vsB = b ? `${(e.post.p99Ms / b.post.p99Ms).toFixed(1)} × B's ${b.post.p99Ms.toFixed(1)} ms` : 'B not measured'
  const disk = su!.fsync ? `; the disk's fdatasync p99 ${su!.fsync.p99Ms.toFixed(1)} ms` : ''
  return valueTarget(name, POST_P99_TARGET_MS, 'ms', e.post.p99Ms, `${vsB}${disk}`)
}

function sustainedLines (su: Sustained): string[] {
  const ms = (x: { p50Ms: number; p99Ms: number; maxMs: number }) => `${x.p50Ms.toFixed(1)} / ${x.p99Ms.toFixed(1)} / ${x.maxMs.toFixed(0)}`
  const lines = [`Sustained, open loop: ${su.postRate} POST/s (1 site × 96, each a new programme) + ${su.getRate} GET/s, ` +
    `${su.rounds} × ${(su.durationMs / 1000).toFixed(0)} s per server (order rotated, latencies pooled); load average ${su.loadAvg.start.toFixed(1)} → ${su.loadAvg.end.toFixed(1)}`]
  lines.push(`  server  POST p50 / p99 / max ms     GET p50 / p99 / max ms      CPU µs/req  stall ms  client lag ms`)
  for (const name of ['A', 'B', 'E', E_PG] as const) {
    const x = su.servers[name]
    if (!x) { if (su.failures[name]) lines.push(`  ${name.padEnd(8)}unavailable (${su.failures[name]})`); continue }
    // E-pg: its process's CPU + the database's (the sum is its cost).
    const cpu = x.dbCpuPerReqUs === undefined ? x.cpuPerReqUs.toFixed(0) : `${x.cpuPerReqUs.toFixed(0)} + ${x.dbCpuPerReqUs.toFixed(0)} db`
    lines.push(`  ${name.padEnd(8)}${ms(x.post).padEnd(28)}${ms(x.get).padEnd(28)}${cpu.padEnd(12)}` +
      `${x.maxStallMs.toFixed(1).padEnd(10)}${x.maxSendLagMs.toFixed(1)}`)
  }
  const e = su.servers.E
  const b = su.servers.B
  if (e && b) lines.push(`  E ÷ B, p99: POST ${(e.post.p99Ms / b.post.p99Ms).toFixed(2)} ×, GET ${(e.get.p99Ms / b.get.p99Ms).toFixed(2)} ×`)
  const pg = su.servers[E_PG]
  if (pg?.postsPerDbCommit !== undefined) lines.push(`  E-pg: ${pg.postsPerDbCommit.toFixed(2)} POSTs answered per write transaction of the database (the few other writes count too)`)
  if (su.fsync) {
    lines.push(`  The disk, in E's store folder (write 4 KiB + fdatasync, ${su.fsync.n} times): ` +
      `p50 ${su.fsync.p50Ms.toFixed(2)} ms, p99 ${su.fsync.p99Ms.toFixed(2)} ms, max ${su.fsync.maxMs.toFixed(1)} ms`)
  }
  return lines
}

/** What E-pg's database did per request: how its group commit batched, what each request wrote. */
function dbLines (samples: readonly Sample[]): string[] {
  const per = SCENARIOS.map(sc => {
    const mine = samples.filter(s => s.scenario === sc && s.server === E_PG && s.dbPerReq)
    if (!mine.length) return undefined
    const of = (k: 'transactions' | 'records' | 'walBytes') => spread(mine.map(s => s.dbPerReq![k]))
    const tx = of('transactions')!
    return `  ${sc}: ${fmt(tx, 3)} write transactions a request (${tx.median > 0 ? (1 / tx.median).toFixed(1) : '∞'} requests a COMMIT), ` +
      `${fmt(of('records'), 1)} records, ${fmt(spread(mine.map(s => s.dbPerReq!.walBytes / 1024)), 1)} KiB of WAL`
  }).filter((x): x is string => x !== undefined)
  return per.length ? ["E-pg's database per request over the windows (transaction ids, the change sequence, the WAL position):", ...per] : []
}

function extraLines (i: SummaryInput): string[] {
  const lines: string[] = []
  const status = SERVERS.map(s => `${s}: ${i.status[s] === 'ok' ? 'ok' : `unavailable (${i.status[s]})`}`)
  lines.push(`Servers: ${status.join('; ')}`)
  lines.push(`GET document: ${i.documentBytes} bytes (${i.documentSource}), target date ${i.targetDate}`)
  const eStalls = i.samples.filter(s => s.server === 'E')
  if (eStalls.length) {
    const per = SCENARIOS.map(sc => {
      const m = eStalls.filter(s => s.scenario === sc).map(s => s.maxStallMs)
      return m.length ? `${sc} ${Math.max(...m).toFixed(1)} ms` : undefined
    }).filter(Boolean)
    lines.push(`E longest event-loop stall under load: ${per.join(', ')}`)
  }
  const sp = i.specials
  if (sp?.publication) {
    const runs = sp.publication.runs
    const wall = spread(runs.map(r => r.wallMs))
    const perSite = spread(runs.map(r => r.wallMs * 1000 / PUBLICATION_SITES))
    lines.push(`Publication of ${PUBLICATION_SITES} sites × 1 day: wall ${fmt(wall, 0)} ms, ${fmt(perSite, 1)} µs/site, ` +
      `CPU ${fmt(spread(runs.map(r => r.cpuMs)), 0)} ms, longest stall ${fmt(spread(runs.map(r => r.maxStallMs)), 1)} ms, ` +
      `published ${runs.map(r => r.published).join('/')}, failed ${runs.map(r => r.failed).join('/')}`)
  }
  if (sp?.largeProgramme) {
    const l = sp.largeProgramme
    lines.push(`${l.sites}-site programme (${(l.bodyBytes / MB).toFixed(1)} MB) ×${l.requests}: latency p50 ${l.p50Ms.toFixed(0)} ms, ` +
      `CPU ${l.cpuPerReqMs.toFixed(0)} ms/request, longest stall ${l.maxStallMs.toFixed(1)} ms`)
  }
  if (sp?.rss) {
    const r = sp.rss
    lines.push(`Memory with ${r.sites} sites × ${r.days} days stored (seeded in ${(r.seedWallMs / 1000).toFixed(0)} s): RSS ${(r.rssBytes / MB).toFixed(0)} MB${rssSplit(r)}, ` +
      `V8 heap ${(r.heapUsedBytes / MB).toFixed(0)} MB used of ${(r.heapTotalBytes / MB).toFixed(0)} MB, external ${(r.externalBytes / MB).toFixed(0)} MB${r.gcExposed ? '' : ' (no gc exposed)'}` +
      (r.baseline ? `; at start, nothing stored: RSS ${(r.baseline.rssBytes / MB).toFixed(0)} MB${rssSplit(r.baseline)}` : ''))
    if (r.restarted) lines.push(`Memory after a restart over that history and one daily publication: ${rssText(r.restarted)}`)
    if (r.restarted?.settled) lines.push(`The same process ${SETTLE_MS / 1000} s later: ${rssText(r.restarted.settled)}`)
    if (r.noStandby) lines.push(`A restart without the door's standby (api.standbyWorker false), after one more daily publication: ${rssText(r.noStandby)}`)
  }
  lines.push(...countLines(i.samples))
  lines.push(...dbLines(i.samples))
  if (i.ops && 'perPostUs' in i.ops) {
    const p = i.ops.perPostUs
    lines.push(`Operations per accepted POST 1×96 (bench/ops-share.ts, one process, 8 clients): the save alone ${p.saveAlone.toFixed(0)} µs of CPU; ` +
      `+${(p.withAudit - p.saveAlone).toFixed(0)} µs with its audit record; +${(p.withRecords - p.saveAlone).toFixed(0)} µs with all its records ` +
      '(the check against the needs, the audit record, the flags of every slot over the power, the warn line)')
  }
  if (i.sustained) lines.push(...sustainedLines(i.sustained))
  if (i.host) lines.push(...hostLines(i.host))
  if (i.webhooks) lines.push(...webhookLines(i.webhooks))
  if (sp?.metering) {
    const m = sp.metering
    lines.push(`Meter values, ${m.readings} readings (${PUBLICATION_SITES} sites × 1 day) in one reportMetering, ${m.runs}×: wall ${m.wallMs.toFixed(0)} ms, CPU ${m.cpuMs.toFixed(0)} ms (the largest), longest stall ${m.stallsMs.map(x => x.toFixed(1)).join(', ')} ms (load average ${m.loadAvg.map(x => x.toFixed(1)).join(', ')})`)
  }
  for (const [k, v] of Object.entries({ error: sp?.error, publication: sp?.publicationError, programme: sp?.largeProgrammeError, metering: sp?.meteringError, rss: sp?.rssError, operations: i.ops && 'error' in i.ops ? i.ops.error : undefined })) {
    if (v) lines.push(`E special (${k}) failed: ${v}`)
  }
  return lines
}

export function buildOutput (i: SummaryInput) {
  const targets = targetsOf(i)
  const scenarios: Record<string, unknown> = {}
  for (const sc of SCENARIOS) {
    const perServer: Record<string, unknown> = {}
    for (const sv of SERVERS) {
      const mine = i.samples.filter(s => s.scenario === sc && s.server === sv)
      if (!mine.length) continue
      const of = (k: keyof Sample) => spread(mine.map(s => s[k] as number))
      perServer[sv] = {
        rps: of('rps'), p50Ms: of('p50Ms'), p99Ms: of('p99Ms'), cpuPerReqUs: of('cpuPerReqUs'), sysPerReqUs: of('sysPerReqUs'),
        ...(sv === E_PG ? { dbCpuPerReqUs: of('dbCpuPerReqUs'), withDbCpuPerReqUs: spread(mine.map(s => costOf(s))) } : {}),
        maxStallMs: of('maxStallMs'), bytesPerResponse: of('bytesPerResponse'), requests: of('requests'),
      }
    }
    const ratio = (base: ServerName, subject: ServerName = 'E', withDb = true) => {
      const r = ratios(i.samples, sc, base, subject, withDb)
      return { perRound: r, ...spread(r), ...(r.length ? { interval: medianInterval(r) } : {}) }
    }
    scenarios[sc] = {
      servers: perServer,
      ratios: {
        'E/A': ratio('A'), 'E/B': ratio('B'), 'E/C': ratio('C'), 'E/D': ratio('D'),
        // E-pg's with PostgreSQL's CPU (what its targets use), then without it.
        'E-pg/B': ratio('B', E_PG), 'E-pg/E': ratio('E', E_PG), 'E-pg/C': ratio('C', E_PG),
        'E-pg/B without PostgreSQL': ratio('B', E_PG, false), 'E-pg/E without PostgreSQL': ratio('E', E_PG, false), 'E-pg/C without PostgreSQL': ratio('C', E_PG, false),
      },
    }
  }
  const json = {
    machine: machine(),
    plan: i.plan,
    servers: i.status,
    documentBytes: i.documentBytes,
    documentSource: i.documentSource,
    targetDate: i.targetDate,
    scenarios,
    specials: i.specials ?? null,
    sustained: i.sustained ?? null,
    host: i.host ?? null,
    ops: i.ops ?? null,
    consolePages: i.consolePages ?? null,
    webhooks: i.webhooks ?? null,
    failures: i.failures,
    samples: i.samples,
    targets: targets.map(t => ({
      name: t.name, target: t.target, measured: t.measured, met: t.met, unit: t.unit,
      verdict: t.unresolved ? 'unresolved' : t.met === null ? 'not measured' : t.met ? 'met' : 'missed',
      ...(t.interval ? { interval: t.interval } : {}), ...(t.note ? { note: t.note } : {}),
    })),
  }
  const m = machine()
  return {
    targets,
    print: () => printTable({ samples: i.samples, servers: i.status, failures: i.failures, extra: extraLines(i), targets }),
    write: (dir: string) => writeResults(dir, json,
      renderSvg(targets, `epx bench${i.plan.quick ? ' (quick)' : ''}: ${m.node}, ${m.cpu} ×${m.cores}, ${m.date.slice(0, 10)}`)),
  }
}
