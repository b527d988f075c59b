/**
 * Row: the system tier at full size (docs/development.md "Test tiers"). `npm test` runs the
 * files that import test/helpers/long.ts small and without their `SYSTEM_ONLY` tests, and
 * leaves out the whole files `.taprc` excludes; `npm run test:system` runs all of them at
 * `npm test`'s size; this row runs them with `EPX_LONG=1` (150,000 records for the store's
 * scale and migration tests, more activations, every page through axe at a phone's width,
 * `npm run demo:ha`…). The door's faults are left to the `faults` row, which runs that file
 * at a larger size still. The files are found, not listed twice: importing helpers/long.ts
 * enrols one, the `.taprc` list the others.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { all, info, zero, type Figure } from './report.ts'

const root = resolve(import.meta.dirname, '../..')
/** Run by a row of its own at larger counts (door-faults.ts). */
const OWN_ROW = ['test/door/faults.test.ts']

export interface SystemResult {
  readonly files: readonly string[]
  readonly long: boolean
  /** Per file, as tap's TAP output says: passed or not. */
  readonly passed: readonly string[]
  readonly failed: readonly string[]
  /** Assertions, tap's summary line. */
  readonly pass: number
  readonly fail: number
  readonly exit: string
  readonly tail: string
}

/** The whole files `.taprc` excludes from `npm test`: the system tier's (its `exclude:` list). */
export function excludedTestFiles (): string[] {
  const taprc = readFileSync(join(root, '.taprc'), 'utf8')
  const list = /^exclude:\n((?:[ \t]+-[^\n]*\n|[ \t]*#[^\n]*\n)*)/m.exec(taprc)?.[1] ?? ''
  return [...list.matchAll(/^[ \t]+-[ \t]*"?([^"\n#]+?)"?[ \t]*$/gm)].map(m => m[1]!)
}

/**
 * The system tier's files (docs/development.md "Test tiers"): those that import
 * helpers/long.ts, and the whole files `.taprc` leaves out of `npm test`; with `ownRows`,
 * the door's faults too, which the campaign runs in a row of its own.
 */
export function systemTestFiles (o: { ownRows?: boolean } = {}): string[] {
  const walk = (dir: string): string[] => readdirSync(dir).flatMap(f => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.test.ts') ? [p] : []
  })
  const enrolled = walk(join(root, 'test'))
    .filter(f => /from '(?:\.\.\/)+helpers\/long\.ts'/.test(readFileSync(f, 'utf8')))
    .map(f => relative(root, f))
  return [...new Set([...enrolled, ...excludedTestFiles()])]
    .filter(f => o.ownRows || !OWN_ROW.includes(f))
    .sort()
}

/**
 * tap over `files` without coverage, with the system tier on (`EPX_SYSTEM=1`) and `env`
 * beside it: `npm run test:system` (its output inherited) and the campaign's row (read).
 */
export function spawnSystemTap (files: readonly string[], o: { args?: readonly string[]; env?: NodeJS.ProcessEnv; stdio: 'inherit' | 'pipe' }): ChildProcess {
  return spawn(process.execPath, [join(root, 'node_modules/tap/dist/esm/run.mjs'), '--disable-coverage', '--allow-incomplete-coverage', ...o.args ?? [], ...files], {
    cwd: root, stdio: o.stdio === 'inherit' ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...o.env, EPX_SYSTEM: '1' },
  })
}

/** Runs `files` (default: the system tier's) through tap, at full size unless `long` is false (then at npm test's size, the system tier's tests included). */
export async function systemTests (o: { long: boolean; budgetMs: number; files?: readonly string[] }): Promise<SystemResult> {
  const files = o.files ?? systemTestFiles()
  const child = spawnSystemTap(files, { args: ['--reporter=tap'], env: { EPX_LONG: o.long ? '1' : '' }, stdio: 'pipe' })
  let out = ''
  let tail = ''
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); tail = (tail + d.toString()).slice(-4000) })
  child.stderr!.on('data', (d: Buffer) => { tail = (tail + d.toString()).slice(-4000) })
  const timer = setTimeout(() => child.kill('SIGKILL'), o.budgetMs)
  const exit = await new Promise<string>(ok => child.once('close', (code, signal) => ok(signal ?? String(code))))
  clearTimeout(timer)
  // The top level's lines: `ok N - test/x.test.ts # time=…` or `not ok N - …`.
  const top = [...out.matchAll(/^(not ok|ok) \d+ - (\S+\.test\.ts)/gm)]
  const summary = /^# \{ total: (\d+), pass: (\d+)(?:, fail: (\d+))?/m.exec(out)
  return {
    files,
    long: o.long,
    passed: top.filter(m => m[1] === 'ok').map(m => m[2]!),
    failed: top.filter(m => m[1] === 'not ok').map(m => m[2]!),
    pass: Number(summary?.[2] ?? 0),
    fail: Number(summary?.[3] ?? 0),
    exit,
    tail,
  }
}

export function systemFigures (r: SystemResult): Figure[] {
  const figures = [
    info('files', r.files.join(', ')),
    info('size', r.long ? 'full (EPX_LONG=1)' : "npm test's"),
    all('files passed', r.passed.length, r.files.length),
    zero('failed assertions', r.fail),
    info('assertions passed', r.pass),
  ]
  if (r.failed.length) figures.push(info('failed files', r.failed.join(', ')))
  if (r.exit !== '0') figures.push(info("tap's exit and last lines", `${r.exit}: ${r.tail.trim().split('\n').slice(-5).join(' | ')}`))
  return figures
}
