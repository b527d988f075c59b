/**
 * Reads `.cpuprofile` files (from `npm run bench -- --profile`) and prints where the time
 * went: self time by function and by area (epx's own files, each dependency, node
 * internals, GC, idle).
 * `node --import=tsx bench/profile-summary.ts <file.cpuprofile> [top] [requests in the window]`
 * @module
 */
import { readFileSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { fileURLToPath } from 'node:url'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }
  children?: number[]
}
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

/** Source maps of built files (dist/, bench/.build/), so their frames count under their src/ file. */
const maps = new Map<string, SourceMap | null>()
function mapOf (url: string): SourceMap | null {
  let m = maps.get(url)
  if (m === undefined) {
    try {
      m = new SourceMap(JSON.parse(readFileSync(fileURLToPath(url) + '.map', 'utf8')))
    } catch {
      m = null
    }
    maps.set(url, m)
  }
  return m
}

function areaOf (url: string, fn: string, line = 0, column = 0): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)'
  if (/\/(dist|bench\/\.build)\/[^/]+\.js$/.test(url)) {
    const entry = mapOf(url)?.findEntry(line, column) as { originalSource?: string; originalLine?: number } | undefined
    if (entry?.originalSource) return areaOf(entry.originalSource, fn) + `:${(entry.originalLine ?? 0) + 1}`
  }
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (nm) return nm[1]!
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0]
  const src = /\/(src|bench)\/(.*)$/.exec(url)
  if (src) return `${src[1]}/${src[2]}`
  return url
}

/** With `requests`, figures are µs per request instead of percentages of busy time. */
export function summarize (path: string, top = 25, requests?: number): string {
  const p = JSON.parse(readFileSync(path, 'utf8')) as Profile
  const byId = new Map(p.nodes.map(n => [n.id, n]))
  const self = new Map<number, number>()
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i + 1] ?? 0
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + dt)
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0)
  const byFn = new Map<string, number>()
  const byArea = new Map<string, number>()
  for (const [id, us] of self) {
    const n = byId.get(id)!
    const f = n.callFrame
    const area = areaOf(f.url, f.functionName, f.lineNumber, f.columnNumber)
    const key = `${f.functionName || '(anonymous)'}  ${area}${f.url && !/:\d+$/.test(area) ? ':' + (f.lineNumber + 1) : ''}`
    byFn.set(key, (byFn.get(key) ?? 0) + us)
    const file = area.replace(/:\d+$/, '')
    byArea.set(file, (byArea.get(file) ?? 0) + us)
  }
  const busy = total - (byArea.get('(idle)') ?? 0)
  const pct = requests
    ? (us: number) => `${(us / requests).toFixed(1).padStart(6)} µs`
    : (us: number) => `${(us / busy * 100).toFixed(1).padStart(5)}%`
  const unit = requests ? `µs per request over ${requests} requests` : 'percentages of busy'
  const lines = [`${path}: ${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms busy (${unit})`, '', 'By area:']
  for (const [k, us] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 15)) if (k !== '(idle)') lines.push(`  ${pct(us)}  ${k}`)
  // Inclusive time of epx's own functions (and the loggers/stores they call): where a
  // request's time goes, subtree by subtree. A function on the stack twice counts once.
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const incl = new Map<string, number>()
  for (const [id, us] of self) {
    const seen = new Set<string>()
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame
      const area = areaOf(f.url, f.functionName, f.lineNumber, f.columnNumber).replace(/:\d+$/, '')
      if (!/^(src\/|pino|sonic-boom|lmdb|msgpackr|ajv|secure-json-parse|fast-json-stringify)/.test(area)) continue
      const key = `${f.functionName || '(anonymous)'}  ${area}`
      if (seen.has(key)) continue
      seen.add(key)
      incl.set(key, (incl.get(key) ?? 0) + us)
    }
  }
  lines.push('', 'Inclusive (epx files and the libraries they call):')
  for (const [k, us] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${k}`)
  lines.push('', 'By function (self time):')
  for (const [k, us] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top)) if (!k.startsWith('(idle)')) lines.push(`  ${pct(us)}  ${k}`)
  return lines.join('\n')
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const [file, top, requests] = process.argv.slice(2)
  if (!file) { console.error('usage: bench/profile-summary.ts <file.cpuprofile> [top] [requests]'); process.exit(2) }
  console.log(summarize(file, Number(top ?? 25), requests ? Number(requests) : undefined))
}
