/**
 * Row: the door's thread dies under load, the host lives (README "Plugin contract"). Runs
 * test/door/faults.test.ts in a child process with 20 faults of each kind (an
 * exception on the door's event loop, one thrown by a request handler inside the HTTP
 * parser's call, an unhandled rejection, `terminate()`, the heap's limit), first with the
 * API door alone, then with the console and the metrics listener in the same thread, while
 * keep-alive clients GET and POST, each fault once the door's standby is open (a new incident,
 * not a crash loop; the wait is reported). The child is the host: a fault that took it down ends
 * the row (its signal is the row's error). Each kind's figures come from the test's report.
 * @module
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { tempDir } from './daemon.ts'
import { all, info, zero, type Figure } from './report.ts'

const root = resolve(import.meta.dirname, '../..')
/** README, "Plugin contract": the door back within a second. */
export const DOOR_BACK_MS = 1000

export interface KindResult {
  readonly kind: string
  readonly side: boolean
  readonly faults: number
  readonly backMs: readonly number[]
  readonly acks: number
  readonly lost: number
  readonly errorLines: number
  /** Faulted workers that did not end within their bound and were terminated. */
  readonly stuck?: number
  /** Before each fault, how long the test waited for the door's standby to be open. */
  readonly standbyMs?: readonly number[]
}
export interface DoorFaultsResult {
  readonly kinds: readonly KindResult[]
  readonly faults: number
  readonly exit: string
  readonly tail: string
  /** The machine's load average (1, 5, 15 min) at the row's start and end: the figures' context. */
  readonly load: { readonly start: readonly number[]; readonly end: readonly number[] }
}

/** p50 / p95 / max of the times from a fault to the door answering again (nearest rank). */
export function restartTimes (backMs: readonly number[]): string {
  if (!backMs.length) return 'none'
  const sorted = [...backMs].sort((a, b) => a - b)
  const rank = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]
  return `${rank(0.5)} / ${rank(0.95)} / ${sorted[sorted.length - 1]}`
}

/** A load average as the figures print it. */
export const loadText = (l: readonly number[]): string => l.map(x => x.toFixed(1)).join(' ')

export async function doorFaults (o: { faults: number; budgetMs: number }): Promise<DoorFaultsResult> {
  const report = join(tempDir('door-faults'), 'report.jsonl')
  const loadStart = loadavg()
  const child = spawn(process.execPath, [
    '--import=./test/helpers/ts-loader.mjs', '--import=./test/helpers/built-workers.mjs', 'test/door/faults.test.ts',
  ], {
    cwd: root, stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env, EPX_SYSTEM: '1', EPX_DOOR_FAULTS: String(o.faults), EPX_DOOR_SIDE_FAULTS: String(o.faults),
      EPX_DOOR_BACK_MS: String(DOOR_BACK_MS), EPX_DOOR_FAULTS_REPORT: report,
    },
  })
  let tail = ''
  const keep = (d: Buffer) => { tail = (tail + d.toString()).slice(-4000) }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const timer = setTimeout(() => child.kill('SIGKILL'), o.budgetMs)
  const exit = await new Promise<string>(ok => child.once('close', (code, signal) => ok(signal ?? String(code))))
  clearTimeout(timer)
  let kinds: KindResult[] = []
  try { kinds = readFileSync(report, 'utf8').trim().split('\n').filter(Boolean).map(l => JSON.parse(l) as KindResult) } catch { /* none: the child died first */ }
  return { kinds, faults: o.faults, exit, tail, load: { start: loadStart, end: loadavg() } }
}

export function doorFaultsFigures (r: DoorFaultsResult): Figure[] {
  const figures: Figure[] = []
  for (const k of r.kinds) {
    const where = k.side ? ' (console and metrics too)' : ''
    const within = k.backMs.filter(ms => ms < DOOR_BACK_MS).length
    // A kind reports only once its faults are over: the host lived through every one.
    figures.push(all(`${k.kind}${where}: faults the host lived through`, k.faults, r.faults))
    figures.push(all(`${k.kind}${where}: door back within ${DOOR_BACK_MS} ms`, within, r.faults))
    figures.push(info(`${k.kind}${where}: back after (ms, p50 / p95 / max)`, restartTimes(k.backMs)))
    figures.push(zero(`${k.kind}${where}: 202s not in the store (of ${k.acks})`, k.lost))
    figures.push(zero(`${k.kind}${where}: faulted workers stuck (terminated after their bound)`, k.stuck ?? 0))
    if (k.standbyMs) figures.push(info(`${k.kind}${where}: waited for the standby before a fault (ms, p50 / p95 / max)`, restartTimes(k.standbyMs)))
  }
  const expected = 10
  figures.push(all('fault kinds run to their end (the host never died)', r.kinds.length, expected))
  const every = r.kinds.flatMap(k => k.backMs)
  figures.push(info(`every kind: door back within ${DOOR_BACK_MS} ms`, `${every.filter(ms => ms < DOOR_BACK_MS).length}/${every.length}`))
  figures.push(info('every kind: back after (ms, p50 / p95 / max)', restartTimes(every)))
  figures.push(info('load average (1, 5, 15 min) at start / end', `${loadText(r.load.start)} / ${loadText(r.load.end)}`))
  if (r.exit !== '0') figures.push(info('the test process ended with', `${r.exit}: ${r.tail.replace(/\s+/g, ' ').slice(-300)}`))
  return figures
}
