/**
 * Figures → a table on stdout, `bench/results/latest.json` (every figure, every ratio per
 * round, the machine, the `targets` array), `bench/results/latest.md` (latest-md.ts: the
 * figures as a page) and `bench/results/latest.svg` (measured / target per target,
 * hand-written SVG, no dependency).
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cpus } from 'node:os'
import { renderLatestMd, type LatestResults } from './latest-md.ts'

export type ServerName = 'A' | 'B' | 'D' | 'C' | 'E' | 'E-pg'
/** Every server, in the order of the table (D beside B, its peer doing epx's work; E-pg: E on the PostgreSQL store). */
export const SERVERS: readonly ServerName[] = ['A', 'B', 'D', 'C', 'E', 'E-pg']
/** The server whose cost includes another process's: PostgreSQL's CPU over the same window. */
export const E_PG = 'E-pg'
export const SCENARIOS = ['GET 200', 'GET 304', 'POST 1×96', 'POST 100×96'] as const
export type Scenario = typeof SCENARIOS[number]

/** One measurement window: one server, one scenario, one round. */
export interface Sample {
  readonly round: number
  readonly server: ServerName
  readonly scenario: Scenario
  readonly requests: number
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** Server CPU time (user + system, all threads) per request served in the window. */
  readonly cpuPerReqUs: number
  /**
   * E-pg: the CPU of the PostgreSQL cluster's processes over the same window, per request
   * (not in `cpuPerReqUs`, which is the server process's own). Absent for the others.
   */
  readonly dbCpuPerReqUs?: number
  /** E-pg: the database's counters per request over the window (postgres.ts `DbCounters`): write transactions, records, WAL bytes. */
  readonly dbPerReq?: { readonly transactions: number; readonly records: number; readonly walBytes: number }
  /** The system (kernel) part of it: syscalls, TLS socket writes, fsync. */
  readonly sysPerReqUs: number
  readonly maxStallMs: number
  readonly bytesPerResponse: number
  /** The main thread's CPU alone per request (Linux schedstat); null where unavailable. */
  readonly mainThreadPerReqUs: number | null
  /** CPU per request by thread (`main`, `epx-door`, `other`...: servers/harness.ts); null where unavailable. */
  readonly threadPerReqUs?: Record<string, number> | null
  /** Context switches per request by thread, voluntary and preempted (servers/harness.ts); null where unavailable. */
  readonly switchesPerReq?: Record<string, { voluntary: number; preempted: number }> | null
  /** Bytes allocated on the main thread's V8 heap per request: a count that does not depend on time. */
  readonly heapBytesPerReq: number
}

export interface Spread { readonly median: number; readonly min: number; readonly max: number; readonly n: number }

/** Where the median of the rounds lies, and how sure (`medianInterval`). */
export interface Interval { readonly lo: number; readonly hi: number; readonly coverage: number; readonly n: number }

export interface Target {
  readonly name: string
  /** Human form of the target, e.g. "≤ 1.2 × A". */
  readonly target: string
  readonly limit: number
  readonly unit: string
  readonly measured: number | null
  readonly met: boolean | null
  readonly note?: string
  readonly spread?: Spread
  /** Round-to-round interval of the median: met only when all of it is under the limit. */
  readonly interval?: Interval
  /** The interval straddles the limit: neither met nor missed (met is then null). */
  readonly unresolved?: boolean
}

/**
 * A distribution-free interval for the median of per-round values: the k-th smallest and
 * k-th largest, with the largest k whose coverage 1 − 2·P(Bin(n, ½) < k) is still ≥ 95 %.
 * Up to 8 rounds that is min–max (coverage 1 − 2^(1−n): 50 % for 2 rounds, 94 % for 5,
 * 97 % for 6), said beside it.
 */
export function medianInterval (values: readonly number[]): Interval | undefined {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b)
  const n = v.length
  if (!n) return undefined
  const below = (k: number) => {   // P(Bin(n, ½) ≤ k − 1)
    let p = 0
    let c = 1
    for (let j = 0; j < k; j++) { p += c; c = c * (n - j) / (j + 1) }
    return p / 2 ** n
  }
  let k = 1
  while (k + 1 <= n / 2 && 1 - 2 * below(k + 1) >= 0.95) k++
  return { lo: v[k - 1]!, hi: v[n - k]!, coverage: n === 1 ? 0 : 1 - 2 * below(k), n }
}

/** Met when the whole interval is under the limit, missed when all of it is over, else unresolved. */
export function judgeInterval (limit: number, i: Interval | undefined): { met: boolean | null; unresolved?: boolean } {
  if (!i) return { met: null }
  if (i.hi <= limit) return { met: true }
  if (i.lo > limit) return { met: false }
  return { met: null, unresolved: true }
}

export function fmtInterval (i: Interval | undefined, digits = 2): string {
  if (!i) return ''
  return i.n > 1 ? `[${i.lo.toFixed(digits)}–${i.hi.toFixed(digits)}, ${(i.coverage * 100).toFixed(0)}%, ${i.n} rounds]` : '[1 round: no interval]'
}

export function spread (values: readonly number[]): Spread | undefined {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (!v.length) return undefined
  const mid = v.length >> 1
  const median = v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2
  return { median, min: v[0]!, max: v.at(-1)!, n: v.length }
}

export function fmt (s: Spread | undefined, digits = 1): string {
  if (!s) return 'n/a'
  const f = (x: number) => x.toFixed(digits)
  return s.n > 1 ? `${f(s.median)} (${f(s.min)}–${f(s.max)})` : f(s.median)
}

/**
 * A sample's CPU per request: the server's process, and with `withDb` the database's
 * processes too (E-pg; the others have none).
 */
export const costOf = (s: Sample, withDb = true): number => s.cpuPerReqUs + (withDb ? s.dbCpuPerReqUs ?? 0 : 0)

/**
 * Per round, the subject's CPU per request (E unless said) over the baseline's, for the
 * same scenario; E-pg's with PostgreSQL's CPU unless `withDb` is false.
 */
export function ratios (samples: readonly Sample[], scenario: Scenario, base: ServerName, subject: ServerName = 'E', withDb = true): number[] {
  const out: number[] = []
  const rounds = new Set(samples.map(s => s.round))
  for (const r of rounds) {
    const e = samples.find(s => s.round === r && s.scenario === scenario && s.server === subject)
    const b = samples.find(s => s.round === r && s.scenario === scenario && s.server === base)
    if (e && b && b.cpuPerReqUs > 0) out.push(costOf(e, withDb) / costOf(b, withDb))
  }
  return out
}

export function verdict (t: Target): string {
  if (t.unresolved && t.interval) {
    return `UNRESOLVED (the interval ${t.interval.lo.toFixed(2)}–${t.interval.hi.toFixed(2)} holds the target ${t.limit}: more rounds or a quieter machine)`
  }
  if (t.measured === null || t.met === null) return `not measured${t.note ? ` (${t.note})` : ''}`
  // A count that must be none (events lost): no percentage of a zero limit.
  if (t.limit === 0) return t.met ? 'met' : `MISSED by ${t.measured} ${t.unit}`
  const pct = ((t.measured - t.limit) / t.limit) * 100
  const by = `${Math.abs(pct).toFixed(0)}% ${pct > 0 ? 'over' : 'under'} the target`
  // A ratio's excess is in points of the baseline ("+1.57 × A"), a figure's in its unit.
  const excess = t.unit === '×'
    ? `+${(t.measured - t.limit).toFixed(2)} × ${t.target.split(' ').pop()}`
    : `${(t.measured - t.limit).toFixed(0)} ${t.unit}`
  return t.met ? `met (${by})` : `MISSED by ${excess} (${by})`
}

const pad = (s: string, n: number) => s.length >= n ? s : s + ' '.repeat(n - s.length)

export function printTable (out: {
  samples: readonly Sample[]; servers: Partial<Record<ServerName, string>>; failures: Readonly<Record<string, string>>
  extra: string[]; targets: readonly Target[]
}): void {
  const lines: string[] = []
  lines.push('')
  lines.push(`${pad('scenario', 13)}${pad('server', 8)}${pad('req/s', 26)}${pad('p50 ms', 22)}${pad('p99 ms', 22)}${pad('CPU µs/req', 28)}ratio (E/A | E/B | E/C | E/D)`)
  for (const sc of SCENARIOS) {
    for (const sv of SERVERS) {
      const mine = out.samples.filter(s => s.scenario === sc && s.server === sv)
      if (!mine.length) {
        const why = out.servers[sv] === 'ok' ? out.failures[`${sc}|${sv}`] : out.servers[sv]?.startsWith('left out') ? undefined : out.servers[sv]
        if (why) lines.push(`${pad(sc, 13)}${pad(sv, 8)}unavailable (${why})`)
        continue
      }
      const ratio = sv === 'E'
        ? `${fmt(spread(ratios(out.samples, sc, 'A')), 2)} | ${fmt(spread(ratios(out.samples, sc, 'B')), 2)} | ${fmt(spread(ratios(out.samples, sc, 'C')), 2)} | ${fmt(spread(ratios(out.samples, sc, 'D')), 2)}`
        : sv === E_PG ? `÷B ${fmt(spread(ratios(out.samples, sc, 'B', E_PG)), 2)} | ÷E ${fmt(spread(ratios(out.samples, sc, 'E', E_PG)), 2)} | ÷C ${fmt(spread(ratios(out.samples, sc, 'C', E_PG)), 2)}`
          : ''
      lines.push(pad(sc, 13) + pad(sv, 8) +
        pad(fmt(spread(mine.map(s => s.rps)), 0), 26) +
        pad(fmt(spread(mine.map(s => s.p50Ms)), 2), 22) +
        pad(fmt(spread(mine.map(s => s.p99Ms)), 2), 22) +
        pad(fmt(spread(mine.map(s => costOf(s))), 0), 28) + ratio)
      if (sv === E_PG) {
        // Its cost with the database's CPU (above, the figure its ratios use) and without it.
        lines.push(pad('', 13) + pad('', 8) + pad(`of which PostgreSQL ${fmt(spread(mine.map(s => s.dbCpuPerReqUs ?? 0)), 0)} µs;`, 70) +
          pad(`without it ${fmt(spread(mine.map(s => costOf(s, false))), 0)}`, 28) +
          `÷B ${fmt(spread(ratios(out.samples, sc, 'B', E_PG, false)), 2)} | ÷E ${fmt(spread(ratios(out.samples, sc, 'E', E_PG, false)), 2)} | ÷C ${fmt(spread(ratios(out.samples, sc, 'C', E_PG, false)), 2)}`)
      }
    }
  }
  lines.push('')
  for (const e of out.extra) lines.push(e)
  lines.push('')
  lines.push('Targets:')
  for (const t of out.targets) {
    const m = t.measured === null ? 'n/a' : `${t.measured.toFixed(t.limit === 0 ? 0 : t.unit === '×' || t.measured < 10 ? 2 : 0)} ${t.unit}`
    const note = t.measured !== null && t.note ? ` — ${t.note}` : ''
    const within = t.interval && t.interval.n > 1 ? ` ${fmtInterval(t.interval)}` : ''
    lines.push(`  ${pad(t.name, 56)}${pad(t.target, 14)}${pad(m, 12)}${verdict(t)}${within}${note}`)
  }
  console.log(lines.join('\n'))
}

export function machine () {
  const c = cpus()
  return { node: process.version, platform: `${process.platform} ${process.arch}`, cpu: c[0]?.model ?? 'unknown', cores: c.length, date: new Date().toISOString() }
}

/** The chart: one row per target, a bar of measured ÷ target, the target at 1. */
export function renderSvg (targets: readonly Target[], title: string): string {
  const rowH = 34
  const left = 330
  const width = 820
  const scaleMax = 2
  const plotW = width - left - 120
  const x = (v: number) => left + Math.min(v, scaleMax) / scaleMax * plotW
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  const height = 70 + targets.length * rowH + 30
  const rows = targets.map((t, i) => {
    const y = 60 + i * rowH
    const label = `<text x="${left - 10}" y="${y + 17}" text-anchor="end">${esc(t.name)}</text>`
    if (t.measured === null) {
      return `${label}<text x="${left + 4}" y="${y + 17}" fill="#777">not measured${t.note ? ' — ' + esc(t.note) : ''}</text>`
    }
    const r = t.limit === 0 ? (t.measured > 0 ? Infinity : 0) : t.measured / t.limit
    const colour = t.unresolved ? '#d4a017' : t.met ? '#2e8b57' : '#c0392b'
    const band = t.interval && t.interval.n > 1 ? { min: t.interval.lo, max: t.interval.hi } : t.spread && t.spread.n > 1 ? t.spread : undefined
    const whisker = band
      ? `<line x1="${x(band.min / t.limit)}" x2="${x(band.max / t.limit)}" y1="${y + 12}" y2="${y + 12}" stroke="#222" stroke-width="1.5"/>`
      : ''
    const value = `${t.measured.toFixed(t.unit === '×' ? 2 : 0)} ${t.unit} (target ${t.target})`
    return `${label}<rect x="${left}" y="${y + 3}" width="${(x(r) - left).toFixed(1)}" height="18" fill="${colour}"/>${whisker}` +
      `<text x="${x(r) + 6}" y="${y + 17}">${esc(value)}</text>`
  }).join('\n')
  const axis = [0, 0.5, 1, 1.5, 2].map(v =>
    `<line x1="${x(v)}" x2="${x(v)}" y1="52" y2="${height - 30}" stroke="${v === 1 ? '#000' : '#ddd'}" stroke-dasharray="${v === 1 ? '5,3' : ''}"/>` +
    `<text x="${x(v)}" y="${height - 14}" text-anchor="middle" fill="#555">${v}${v === scaleMax ? '+' : ''}</text>`).join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="#fff"/>
<text x="16" y="24" font-size="15" font-weight="bold">${esc(title)}</text>
<text x="16" y="42" fill="#555">bar = measured ÷ target (1 = the target, dashed); green met, red missed, amber unresolved; whisker = the rounds' interval of the median</text>
${axis}
${rows}
</svg>
`
}

export function writeResults (dir: string, json: object, svg: string): void {
  mkdirSync(dir, { recursive: true })
  const text = JSON.stringify(json, null, 2) + '\n'
  writeFileSync(join(dir, 'latest.json'), text)
  // From the text written, so that the page is what latest-md.ts makes of the file.
  writeFileSync(join(dir, 'latest.md'), renderLatestMd(JSON.parse(text) as LatestResults))
  writeFileSync(join(dir, 'latest.svg'), svg)
}
