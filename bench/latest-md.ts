/**
 * `bench/results/latest.md`: the figures of `latest.json` as a page a reader can scan (the
 * targets with their verdicts and intervals, CPU a request per server and scenario, E's by
 * thread, the machine and the date), so bench/README.md explains the method and the
 * decisions and never restates a figure that the next run changes. `npm run bench` writes it
 * beside `latest.json`; `node --import=tsx bench/latest-md.ts` writes it again from the
 * committed `latest.json`.
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Interval, Sample, Spread } from './report.ts'

/** What this page reads of `latest.json` (summary.ts `buildOutput` writes all of it). */
export interface LatestResults {
  readonly machine: { readonly node: string; readonly platform: string; readonly cpu: string; readonly cores: number; readonly date: string }
  readonly plan: {
    readonly quick: boolean
    readonly argv?: readonly string[]
    readonly roundsRun?: number
    readonly clientNice?: number
    readonly roundsLoadAvg?: { readonly start: number; readonly end: number }
  }
  readonly servers: Readonly<Record<string, string>>
  readonly scenarios: Readonly<Record<string, { readonly servers: Readonly<Record<string, { readonly cpuPerReqUs: Spread; readonly withDbCpuPerReqUs?: Spread }>> }>>
  readonly samples: readonly Sample[]
  readonly targets: ReadonlyArray<{
    readonly name: string; readonly target: string; readonly measured: number | null; readonly unit: string
    readonly verdict: string; readonly interval?: Interval; readonly note?: string
  }>
}

const SERVER_ORDER = ['A', 'B', 'D', 'C', 'E', 'E-pg']
/** E's threads as servers/harness.ts names them, in the order the page prints them. */
const THREADS: ReadonlyArray<[key: string, shown: string]> = [['epx-door', 'door'], ['main', "main (the solver's)"], ['other', 'other']]

const cell = (s: string): string => s.replace(/\|/g, '\\|')

/**
 * One figure, to as many digits as it deserves: in the tables 0.38, 3.5, 60, 5,332; against
 * a limit (with its unit) one more, so that 2.04 ms does not read as the 2 ms it misses; a
 * ratio 1.47; a count of events whole.
 */
export function figure (v: number, unit = ''): string {
  if (unit === '×') return v.toFixed(2)
  if (unit === 'events') return v.toLocaleString('en')
  const a = Math.abs(v)
  const digits = unit ? (a < 10 ? 2 : a < 100 ? 1 : 0) : (a < 1 ? 2 : a < 10 ? 1 : 0)
  return v.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

const spreadOf = (s: Spread): string => s.n > 1 ? `${figure(s.median)} (${figure(s.min)}–${figure(s.max)})` : figure(s.median)

export function intervalOf (i: Interval | undefined, unit = ''): string {
  if (!i || i.n < 2) return ''
  return `[${figure(i.lo, unit)}–${figure(i.hi, unit)}], ${Math.round(i.coverage * 100)} %, ${i.n} rounds`
}

const median = (xs: readonly number[]): number => {
  const v = [...xs].sort((a, b) => a - b)
  const mid = v.length >> 1
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2
}

/** The page, from the results of one run. */
export function renderLatestMd (r: LatestResults): string {
  const m = r.machine
  const when = m.date.replace('T', ' ').replace(/:\d\d\.\d+Z$/, ' UTC')
  const command = `npm run bench${r.plan.argv?.length ? ' -- ' + r.plan.argv.map(a => /[\s"]/.test(a) ? JSON.stringify(a) : a).join(' ') : ''}`
  const lines = [
    '# Latest bench results',
    '',
    'Written by `npm run bench` (`bench/latest-md.ts`) from `latest.json` beside it: not edited by hand.',
    'What each figure is and how it is judged: [bench/README.md](../README.md).',
    '',
    `- Run: \`${command}\`${r.plan.quick ? ' (quick: indicative only)' : ''}, finished ${when}`,
    `- Machine: ${m.cpu} × ${m.cores}, ${m.platform}, Node ${m.node}`,
  ]
  if (r.plan.roundsRun !== undefined) {
    const load = r.plan.roundsLoadAvg
    lines.push(`- Rounds: ${r.plan.roundsRun}, the load client at nice ${r.plan.clientNice ?? 0}` +
      (load ? `; load average ${load.start.toFixed(1)} at their start, ${load.end.toFixed(1)} at their end` : ''))
  }
  const absent = Object.entries(r.servers).filter(([, s]) => s !== 'ok').map(([name, s]) => `${name} ${s}`)
  if (absent.length) lines.push(`- Not run: ${absent.join('; ')}`)

  lines.push('', '## Targets', '',
    'A per-round figure is the median of its rounds, with the interval of that median; the rest are single figures against their limit.', '',
    '| Target | Limit | Measured | Interval | Verdict | Note |', '|---|---|---|---|---|---|')
  for (const t of r.targets) {
    const measured = t.measured === null ? '–' : `${figure(t.measured, t.unit)} ${t.unit}`
    lines.push(`| ${cell(t.name)} | ${cell(t.target)} | ${measured} | ${intervalOf(t.interval, t.unit)} | ${t.verdict} | ${cell(t.note ?? '')} |`)
  }

  const scenarios = Object.entries(r.scenarios).filter(([, s]) => Object.keys(s.servers).length)
  if (scenarios.length) {
    const servers = SERVER_ORDER.filter(sv => scenarios.some(([, s]) => s.servers[sv]))
    lines.push('', '## CPU a request (µs), median (min–max) of the rounds', '',
      `| Scenario | ${servers.join(' | ')} |`, `|---|${servers.map(() => '---|').join('')}`)
    for (const [name, s] of scenarios) {
      lines.push(`| ${name} | ${servers.map(sv => {
        const x = s.servers[sv]
        return x ? spreadOf(x.withDbCpuPerReqUs ?? x.cpuPerReqUs) : ''
      }).join(' | ')} |`)
    }
    const byThread = scenarios.map(([name]) => {
      const mine = r.samples.filter(x => x.server === 'E' && x.scenario === name && x.threadPerReqUs)
      return [name, THREADS.map(([key]) => mine.map(x => x.threadPerReqUs![key]).filter((v): v is number => v !== undefined))] as const
    }).filter(([, per]) => per.some(vs => vs.length))
    if (byThread.length) {
      lines.push('', "## E's CPU a request by thread (µs), median of the rounds", '',
        "`other` is V8's collector and compiler helpers, libuv's pool and lmdb-js's commits.", '',
        `| Scenario | ${THREADS.map(([, shown]) => shown).join(' | ')} |`, `|---|${THREADS.map(() => '---|').join('')}`)
      for (const [name, per] of byThread) lines.push(`| ${name} | ${per.map(vs => vs.length ? figure(median(vs)) : '').join(' | ')} |`)
    }
  }
  return lines.join('\n') + '\n'
}

// `node --import=tsx bench/latest-md.ts`: latest.md again from the committed latest.json.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const results = new URL('./results/', import.meta.url)
  const json = JSON.parse(readFileSync(new URL('latest.json', results), 'utf8')) as LatestResults
  writeFileSync(new URL('latest.md', results), renderLatestMd(json))
  console.log('wrote bench/results/latest.md')
}
