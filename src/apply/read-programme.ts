/**
 * Reads a programme body into an instruction batch: inline for a small body, in a
 * worker thread above `offThreadBytes` so that parsing and validating megabytes never
 * stalls the event loop the solver shares (bench/README.md#targets). One worker, started on first
 * use, unref'd while idle, replaced if it dies.
 * @module
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { EpxError } from '../errors.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import { createProgrammeCheck, type CheckContext, type CheckOptions, type CheckResult } from './check-programme.ts'
import type { CheckJob } from './programme-worker.ts'

/**
 * Above this, a body is parsed off the request's thread (~115 sites of 96 slots). Below
 * it, parsing and checking take ~5 ms at most, a tenth of the 50 ms stall budget, and
 * inline costs less CPU than the hand-over (~0.4 ms for a 100-site programme, bench/README.md#targets).
 */
const OFF_THREAD_BYTES = 1024 * 1024

export interface ProgrammeReader {
  /** The batch, or a 400 INVALID_PROGRAMME_SOUTIRAGE_REQUEST with every violation. */
  read(bytes: Buffer, ctx: CheckContext): Promise<InstructionBatch>
  close(): Promise<void>
}

type Reply = { id: number; result: CheckResult } | { id: number; crash: string }

/**
 * Where the worker's code is. Built (`dist/index.js` that a solver loads, and the CLI's
 * `dist/cli.js`): the JS file beside the bundle. From the sources (tests): the bundle of
 * those same sources when `EPX_BUILT_WORKERS` names its folder (test/helpers/
 * built-workers.mjs sets it when dist/ is newer than every file of src/: a worker through
 * tsx costs ~0.5 s of CPU more per start, compiling the door's sources), else the
 * TypeScript file, with tsx registered inside the worker, since hooks registered in this
 * thread (tap's `--import=tsx`) are not inherited by workers on Node 20. Never the host's
 * flags either: a relative `--import=tsx` would resolve against a cwd that may have
 * changed since start. `source`: the TypeScript file beside `here` when its name is not
 * the bundle's (`dist/door-worker.js` is built from `src/door/worker.ts`).
 */
export function workerSource (here: string, name: string, source = `./${name}.ts`): [string | URL, { eval?: boolean; execArgv: string[] }] {
  if (!here.endsWith('.ts')) return [new URL(`./${name}.js`, here), { execArgv: [] }]
  const built = process.env.EPX_BUILT_WORKERS
  if (built) return [pathToFileURL(join(built, `${name}.js`)), { execArgv: [] }]
  const tsx = import.meta.resolve('tsx/esm/api')
  const entry = new URL(source, here).href
  return [`import(${JSON.stringify(tsx)}).then(m => { m.register(); return import(${JSON.stringify(entry)}) })`, { eval: true, execArgv: [] }]
}

export function createProgrammeReader (opts: CheckOptions & { offThreadBytes?: number }): ProgrammeReader {
  const check = createProgrammeCheck(opts)
  const limit = opts.offThreadBytes ?? OFF_THREAD_BYTES
  const pending = new Map<number, { resolve: (r: CheckResult) => void; reject: (e: unknown) => void }>()
  let worker: Worker | undefined
  let nextId = 0

  const failAll = (why: string) => {
    for (const p of pending.values()) p.reject(new EpxError('INTERNAL', [], { cause: new Error(why) }))
    pending.clear()
    worker = undefined
  }

  const start = (): Worker => {
    const [source, how] = workerSource(import.meta.url, 'programme-worker')
    const w = new Worker(source, {
      ...how,
      workerData: { maxSites: opts.maxSites, requireContiguous: opts.requireContiguous, maxClockSkewSeconds: opts.maxClockSkewSeconds, maxDaysAhead: opts.maxDaysAhead, maxSiteKw: opts.maxSiteKw } satisfies CheckOptions,
    })
    w.on('message', (reply: Reply) => {
      const p = pending.get(reply.id)
      pending.delete(reply.id)
      if (pending.size === 0) w.unref()
      if (!p) return
      if ('crash' in reply) p.reject(new EpxError('INTERNAL', [], { cause: new Error(reply.crash) }))
      else p.resolve(reply.result)
    })
    w.on('error', err => { if (worker === w) failAll(`programme worker failed: ${err.message}`) })
    w.on('exit', code => { if (worker === w) failAll(`programme worker exited with ${code}`) })
    return w
  }

  const offThread = (bytes: Buffer, ctx: CheckContext): Promise<CheckResult> => {
    worker ??= start()
    worker.ref()
    const id = nextId++
    // Transfer, not copy; a body that shares its ArrayBuffer is copied out first.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes)
    const job: CheckJob = { id, bytes: own, ctx }
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject })
      worker!.postMessage(job, [own.buffer as ArrayBuffer])
    })
  }

  return {
    async read (bytes, ctx) {
      const result = bytes.length > limit ? await offThread(bytes, ctx) : check(bytes, ctx)
      if (!result.ok) throw new EpxError('INVALID_PROGRAMME_SOUTIRAGE_REQUEST', [result.message], { details: result.details })
      return result.batch
    },
    async close () {
      const w = worker
      worker = undefined
      failAll('epx is closing')
      if (w) await w.terminate()
    },
  }
}
