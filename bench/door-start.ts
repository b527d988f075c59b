/**
 * `node --import=tsx bench/door-start.ts [--cycles N]`: how long the built plugin's API
 * door takes to start in its worker thread (a killed worker is back after its
 * 100 ms backoff plus this), measured as the activation time of the built plugin
 * (`dist/`, loaded through its manifest, as a solver does) with `api.inWorker` on, minus
 * the same activation with the door on the host's thread, alternated, median of N.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { execFileSync } from 'node:child_process'
import { parseArgs } from 'node:util'
import pino from 'pino'
import { createReferenceHost } from '../src/host/reference-host.ts'
import { loadPlugin } from '../src/host/load-plugin.ts'

const { values: args } = parseArgs({ options: { cycles: { type: 'string', default: '7' } } })
const root = resolve(import.meta.dirname, '..')
const dir = mkdtempSync(join(tmpdir(), 'epx-door-start-'))
try {
  execFileSync(process.execPath, [join(root, 'scripts/build.mjs')], { stdio: 'ignore' })
  execFileSync(process.execPath, [join(root, 'bin/epx.js'), 'init', '--data', dir], { stdio: 'ignore' })
  const ref = createReferenceHost({ dataDir: dir, logger: pino({ level: 'silent' }), sites: 3, cycleSeconds: 0 })
  const activation = async (inWorker: boolean): Promise<number> => {
    const t0 = performance.now()
    const { handle } = await loadPlugin(root, ref.host, { api: { host: '127.0.0.1', port: 0, inWorker }, publish: { schedule: false } })
    const ms = performance.now() - t0
    await handle.close()
    return ms
  }
  await activation(true)   // warm: the OS's file cache, lmdb-js's own threads
  const worker: number[] = []
  const main: number[] = []
  for (let i = 0; i < Number(args.cycles); i++) {
    worker.push(await activation(true))
    main.push(await activation(false))
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
  const startMs = Math.max(0, median(worker) - median(main))
  console.log(JSON.stringify({
    activationMs: { inWorker: Math.round(median(worker)), mainThread: Math.round(median(main)) },
    workerStartMs: Math.round(startMs),
    backAfterKillMs: Math.round(100 + startMs),
  }))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
