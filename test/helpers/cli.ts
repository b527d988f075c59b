/**
 * Runs `epx` for a test, always the built CLI (dist/cli.js, what bin/epx.js loads; tap
 * rebuilds it before every run): in-process through its `runCli` (fast, most cases), or
 * as the real binary `node bin/epx.js` in a child process (exit codes, stdout as a user
 * sees it).
 *
 *   const dir = await initializedDataDir(t)          // test PKI + `epx init` (config only)
 *   const r = await epx(dir, 'company', 'add', 'acme', '--name', 'ACME')
 *   r.code, r.out, r.err, r.lines (stdout lines)
 *   const p = await spawnEpx(['--data', dir, 'token', 'create', ...])   // { code, stdout, stderr }
 *   await spawnEpx([...], { closedStdout: true })   // as `epx ... | head` once head is done
 *   const run = await startEpx(['--data', dir, 'start', '--port', '0'], /listening on (\S+)/)
 *   run.match[1]; run.child.kill('SIGTERM'); await run.exited; run.output()
 * @module
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import type { Readable } from 'node:stream'
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { pkiPaths } from '../../src/auth/pki.ts'
import type * as Cli from '../../src/cli/main.ts'
import { testPki, writePki } from './certs.ts'

export const BIN = fileURLToPath(new URL('../../bin/epx.js', import.meta.url))
export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

let built: Promise<typeof Cli> | undefined
/**
 * The built CLI (dist/cli.js), typed as the sources: the CLI tests test what a user runs.
 * Imported on first use, so a script that builds first (the fault campaign) gets its build.
 */
export function builtCli (): Promise<typeof Cli> {
  built ??= import(new URL('../../dist/cli.js', import.meta.url).href) as Promise<typeof Cli>
  return built
}

export interface CliResult {
  readonly code: number
  readonly out: string
  readonly err: string
  readonly lines: readonly string[]
}

/** `epx --data <dataDir> ...argv` (`epx ...argv` for `epx bsp`), in-process. */
export async function epx (dataDir: string, ...argv: string[]): Promise<CliResult> {
  const out: string[] = []
  const err: string[] = []
  const { runCli } = await builtCli()
  // `epx bsp` reads no data folder and refuses --data.
  const code = await runCli([...(argv[0] === 'bsp' ? [] : ['--data', dataDir]), ...argv], { out: l => out.push(l), err: l => err.push(l) })
  const text = out.join('\n')
  return { code, out: text, err: err.join('\n'), lines: text === '' ? [] : text.split('\n') }
}

/**
 * A data folder as `epx init` leaves it, with the memoized test PKI in place first, so
 * only the configuration is written (RSA key generation is the slow part of init).
 */
export async function initializedDataDir (t: Test): Promise<string> {
  const dir = t.testdir()
  writePki(dir)
  writeFileSync(pkiPaths(dir).caKey, testPki().serverCa.keyPem, { mode: 0o600 })
  const r = await epx(dir, 'init')
  if (r.code !== 0) throw new Error(`epx init failed: ${r.err}`)
  return dir
}

/**
 * The real binary in a child process; resolves when it exits. `closedStdout`: its stdout
 * is a pipe whose reader is gone before it writes (what `epx … | head` becomes once head
 * has its lines, or `| grep -q` once it matched).
 */
export function spawnEpx (argv: readonly string[], opts: { cwd?: string; closedStdout?: boolean } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...argv], { cwd: opts.cwd ?? ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    if (opts.closedStdout) child.stdout.destroy()
    else child.stdout.setEncoding('utf8').on('data', d => { stdout += d })
    child.stderr.setEncoding('utf8').on('data', d => { stderr += d })
    child.on('error', reject)
    child.on('close', code => resolve({ code, stdout, stderr }))
  })
}

export interface RunningEpx {
  readonly child: ChildProcessByStdio<null, Readable, Readable>
  /** The match of `ready` in stdout. */
  readonly match: RegExpExecArray
  /** Everything written to stdout so far. */
  output(): string
  /** Resolves to the exit code. */
  readonly exited: Promise<number | null>
}

/**
 * Spawns a long-running `epx ...argv` (start, demo) and resolves once its stdout
 * matches `ready`; rejects if it exits first. The caller stops it with a signal.
 */
export function startEpx (argv: readonly string[], ready: RegExp, opts: { cwd?: string } = {}): Promise<RunningEpx> {
  const child = spawn(process.execPath, [BIN, ...argv], { cwd: opts.cwd ?? ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  const exited = new Promise<number | null>(resolve => child.on('close', code => resolve(code)))
  return new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', d => { stderr += d })
    child.stdout.setEncoding('utf8').on('data', d => {
      stdout += d
      const match = ready.exec(stdout)
      if (match) resolve({ child, match, output: () => stdout, exited })
    })
    exited.then(code => reject(new Error(`epx exited (${code}) before it was ready:\n${stdout}\n${stderr}`)))
  })
}
