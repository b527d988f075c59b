/**
 * A campaign row is a set of figures; those with a target say met or missed, and a row is
 * met when every one of its targets is. Printed like the bench's "Targets:" block and
 * written as JSON (`test/campaign/results.json`).
 * @module
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { dirname } from 'node:path'

export interface Figure {
  readonly name: string
  readonly value: number | string
  /** Human form of the target ("= 0", "all", "≤ +10 %"); none for a figure shown for context. */
  readonly target?: string
  readonly met?: boolean
}

export interface Row {
  /** The row's short name (`kill`, `fuzz`, … as `--only` takes them), once measured. */
  readonly id?: string
  readonly name: string
  readonly figures: readonly Figure[]
  /** Why the row could not measure (the child died, a build failed): a missed row. */
  readonly error?: string
  readonly wallMs: number
  /** The row's own result, every number of it, for the JSON. */
  readonly raw?: unknown
}

/** Shorthands for the figures rows report. */
export const zero = (name: string, value: number): Figure => ({ name, value, target: '= 0', met: value === 0 })
export const all = (name: string, value: number, of: number): Figure => ({ name, value: `${value}/${of}`, target: 'all', met: of > 0 && value === of })
export const atLeast = (name: string, value: number, min: number): Figure => ({ name, value, target: `≥ ${min}`, met: value >= min })
export const info = (name: string, value: number | string): Figure => ({ name, value })

export const rowMet = (r: Row): boolean => !r.error && r.figures.every(f => f.met !== false) && r.figures.some(f => f.met !== undefined)

/** Runs a row, turning a crash of the row itself into a missed row that says why. */
export async function measureRow<R> (name: string, run: () => Promise<R>, figuresOf: (r: R) => Figure[]): Promise<Row> {
  const t0 = performance.now()
  try {
    const raw = await run()
    return { name, figures: figuresOf(raw), raw, wallMs: performance.now() - t0 }
  } catch (err) {
    return { name, figures: [], error: String((err as Error)?.message ?? err).split('\n')[0]!.slice(0, 300), wallMs: performance.now() - t0 }
  }
}

const pad = (s: string, n: number) => s.length >= n ? s + ' ' : s + ' '.repeat(n - s.length)
const W = 56
const show = (v: number | string) => typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString('en') : v.toFixed(2)) : v

export function printRows (rows: readonly Row[], out: (line: string) => void = console.log): void {
  out('')
  out(`${pad('row / figure', W)}${pad('target', 16)}${pad('measured', 24)}verdict`)
  for (const r of rows) {
    out(`${pad(r.name, W)}${pad('', 16)}${pad(`${(r.wallMs / 1000).toFixed(1)} s`, 24)}${rowMet(r) ? 'met' : 'MISSED'}`)
    if (r.error) out(`  ${pad('could not measure', W - 2)}${pad('', 16)}${pad('', 24)}MISSED: ${r.error}`)
    for (const f of r.figures) {
      // Context figures (no target) can be long sentences: they take the rest of the line.
      // The JSON keeps them whole (a 5xx example's body); the table, a line's worth.
      if (f.met === undefined) { out(`  ${pad(f.name, W - 2)}${String(show(f.value)).slice(0, 400)}`); continue }
      out(`  ${pad(f.name, W - 2)}${pad(f.target ?? '', 16)}${pad(show(f.value), 24)}${f.met ? 'met' : 'MISSED'}`)
    }
  }
  out('')
  out(`${rows.filter(rowMet).length} of ${rows.length} rows met`)
}

/**
 * Writes the rows just measured into `file`, each stamped with when and on what machine;
 * rows of an earlier run that this one did not measure (`--only`) are kept as they were.
 */
/** Where a run ran: the figures' context (the bench's results say the same of theirs). */
function machine () {
  const c = cpus()
  return { node: process.version, platform: `${process.platform} ${process.arch}`, cpu: c[0]?.model ?? 'unknown', cores: c.length, date: new Date().toISOString() }
}

export function writeRows (file: string, rows: readonly Row[], plan: object): void {
  mkdirSync(dirname(file), { recursive: true })
  const stamp = { measuredAt: new Date().toISOString(), machine: machine(), plan }
  const fresh = rows.map(r => ({ ...r, met: rowMet(r), ...stamp }))
  let kept: Array<{ id?: string; met: boolean }> = []
  try {
    const before = JSON.parse(readFileSync(file, 'utf8')) as { results?: Array<{ id?: string; met: boolean }> }
    kept = (before.results ?? []).filter(r => r.id !== undefined && !rows.some(n => n.id === r.id))
  } catch { /* no earlier results */ }
  const results = [...kept, ...fresh]
  const json = { updatedAt: stamp.measuredAt, met: results.filter(r => r.met).length, rows: results.length, results }
  writeFileSync(file, JSON.stringify(json, null, 2) + '\n')
}
