/**
 * Row `replica`: the property of the PostgreSQL store's replicas
 * (test/store/postgres/replica-property.test.ts, kept there and only there) at thousands of
 * steps: two instances on one database under writes, feed cuts, database restarts, kills
 * (a SIGKILLed writer process among them) and reloads from scratch, every replica checked
 * against the database and the writes that resolved every 60 steps and at the end. Runs
 * tap on that file with EPX_PROPERTY_STEPS (and EPX_PROPERTY_SEED with --seed).
 * @module
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { info, zero, type Figure } from './report.ts'

export interface ReplicaOptions {
  readonly steps: number
  readonly seed?: number
  readonly budgetMs: number
}

export interface ReplicaResult {
  readonly steps: number
  readonly seed?: number
  /** Assertions of the run (the checks of both replicas against the database and the model). */
  readonly checks: number
  readonly failed: number
  /** What each kind of step was drawn, as the test counts them. */
  readonly drawn: string
  /** Known defects the file marks todo, still failing. */
  readonly todo: string[]
  readonly exitCode: number | null
  /** The first failures and the last steps before them, for the report. */
  readonly examples: string[]
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const FILE = 'test/store/postgres/replica-property.test.ts'

export async function replicaProperty (o: ReplicaOptions): Promise<ReplicaResult> {
  const env = { ...process.env, EPX_PROPERTY_STEPS: String(o.steps), ...(o.seed === undefined ? {} : { EPX_PROPERTY_SEED: String(o.seed) }) }
  const child = spawn('npx', ['tap', FILE, '--disable-coverage', '--allow-incomplete-coverage', '--reporter=tap', `--timeout=${Math.ceil(o.budgetMs / 1000)}`],
    { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { out += d })
  const exitCode = await new Promise<number | null>(resolve => child.on('exit', code => resolve(code)))
  const seed = /# seed (\d+)/.exec(out)?.[1]
  // A known defect's assertion is marked todo: shown, not counted as a check.
  const checks = [...out.matchAll(/^ {8}(not )?ok \d+ - (?!.*# TODO)/gm)]
  const todo = [...out.matchAll(/^ {8}not ok \d+ - .*# TODO (.*)$/gm)].map(m => m[1]!)
  const failed = checks.filter(m => m[1]).length
  const examples = [...out.matchAll(/^ {8}not ok \d+ - ((?!.*# TODO).*)$/gm)].slice(0, 3).map(m => m[1]!)
  const last = /the last steps:\n((?:.*\n){0,12})/.exec(out)?.[1]
  if (last) examples.push(`last steps: ${last.trim().split('\n').join(' | ')}`)
  return {
    steps: o.steps,
    ...(seed === undefined ? {} : { seed: Number(seed) }),
    checks: checks.length,
    failed,
    drawn: /# steps: (.*)/.exec(out)?.[1] ?? '',
    todo,
    exitCode,
    examples,
  }
}

export function replicaFigures (r: ReplicaResult, steps: number): Figure[] {
  const expected = 5 * Math.ceil(steps / 60)
  return [
    { name: 'checks of both replicas against the database', value: r.checks, target: `≥ ${expected}`, met: r.checks >= expected },
    zero('failed checks', r.failed),
    { name: 'tap\'s exit code', value: String(r.exitCode), target: '= 0', met: r.exitCode === 0 },
    info('steps drawn', r.drawn),
    ...r.todo.map((d, i) => info(`known defect ${i + 1} (todo)`, d)),
    info('seed (replay: --seed)', String(r.seed ?? 'none')),
    ...r.examples.map((e, i) => info(`failure ${i + 1}`, e)),
  ]
}
