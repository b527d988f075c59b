/**
 * What every bench server process shares: the measurement window driven over IPC. Between
 * `start` and `stop` it counts responses finished (node's `http.server.response.finish`
 * diagnostics channel, so A, B and E are counted the same way without touching their
 * code), the process's own CPU time (`process.cpuUsage()`: every thread, user + system,
 * so LMDB's writer and fsync are included) and the longest event-loop stall
 * (`perf_hooks.monitorEventLoopDelay`). The process dies with its parent and on a deadline.
 * @module
 */
import dc from 'node:diagnostics_channel'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { ServerResponse } from 'node:http'
import { Session } from 'node:inspector'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { GCProfiler } from 'node:v8'
import { constants } from 'node:crypto'
import { join } from 'node:path'

export interface WindowReport {
  readonly type: 'window'
  readonly requests: number
  readonly cpuUserUs: number
  readonly cpuSystemUs: number
  readonly wallMs: number
  readonly maxStallMs: number
  /** Responses by status code: a 401 is cheap, and must not pass for a 200. */
  readonly statuses: Record<string, number>
  readonly rssBytes: number
  /**
   * CPU time of the main thread alone (the host's event loop), from Linux's
   * `/proc/self/task/<pid>/schedstat` (ns on the CPU, user + system): node 20 has no
   * `process.threadCpuUsage`. Null where that file is missing.
   */
  readonly mainThreadCpuUs: number | null
  /**
   * Time the main thread was ready to run and waited for a core (the second field of the
   * same schedstat: the run queue's delay), and how many times it was put on one; null
   * where that file is missing. What the host-probe rows' loop delay is made of when the
   * thread itself has little to do (bench/README.md#the-hosts-view-event-loop-delay-main-thread-cpu-handshakes-host-probets).
   */
  readonly mainThreadWait: { readonly us: number; readonly runs: number } | null
  /**
   * The process's CPU time split by thread (Linux schedstat, µs): `main`, each thread
   * epx names (`epx-door`, `epx-programme`: src/os-thread.ts), and `other` (V8's
   * collector and compiler helpers, libuv's pool, lmdb-js's writer). Null where /proc is missing.
   */
  readonly threadCpuUs: Record<string, number> | null
  /**
   * Context switches over the window by thread (Linux `/proc/self/task/<tid>/status`):
   * `voluntary` (the thread waited: epoll, a lock) and `preempted` (the kernel took the CPU
   * from it, e.g. for a thread it woke of higher priority). A count that does not depend on time.
   */
  readonly threadSwitches: Record<string, { voluntary: number; preempted: number }> | null
  /**
   * Bytes allocated on the main thread's V8 heap over the window: the heap's growth plus
   * what each collection freed (`v8.GCProfiler`). A count that does not depend on time.
   */
  readonly heapAllocatedBytes: number
  /** With `probe` on `start`: the event-loop delay at 1 ms resolution, in ms. */
  readonly delay?: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number; readonly meanMs: number; readonly n: number }
}

export type ControlMessage =
  | { type: 'start'; label?: string; probe?: boolean }
  | { type: 'stop' }
  | { type: 'exit' }
  | { type: string; [k: string]: unknown }

/** Resolution of the stall monitor: fine enough for a 50 ms target, cheap enough to leave on. */
const STALL_RESOLUTION_MS = 5

export function send (msg: object): void {
  if (process.send) process.send(msg)
}

/** What the orchestrator hands every server: TLS files, the document, the validators. */
export interface ServerConfig {
  readonly serverCertFile: string
  readonly serverKeyFile: string
  readonly clientCaFile: string
  /** The exact bytes the GET 200 scenario serves (E's own revision when E is up). */
  readonly documentFile: string
  readonly etag: string
  readonly lastModified: string
}

export function serverConfig (): ServerConfig {
  const raw = process.env.BENCH_CONFIG
  if (!raw) throw new Error('BENCH_CONFIG is not set: servers are started by bench/run.ts')
  return JSON.parse(raw) as ServerConfig
}

/**
 * The TLS options of A and B: those of epx's listener (client certificate asked, checked by
 * the app, no tickets). epx also resumes TLS 1.2 sessions from its own cache; only the host
 * probe's handshake rows offer one (load connections are opened before each window).
 */
export function tlsOptions (cfg: ServerConfig) {
  return {
    cert: readFileSync(cfg.serverCertFile),
    key: readFileSync(cfg.serverKeyFile),
    ca: readFileSync(cfg.clientCaFile),
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.2' as const,
    secureOptions: constants.SSL_OP_NO_TICKET,
  }
}

/**
 * Wires the window protocol; `extra` handles server-specific messages and may answer.
 * Returns `measure`, so a server can time its own work (publication) with the same tools.
 */
export function serveControl (name: string, extra?: (msg: ControlMessage) => Promise<void> | void) {
  const deadlineMs = Number(process.env.BENCH_CHILD_DEADLINE_MS ?? 20 * 60_000)
  setTimeout(() => { console.error(`${name}: deadline reached, exiting`); process.exit(3) }, deadlineMs).unref()
  process.on('disconnect', () => process.exit(0))   // the orchestrator died: never linger

  let counting = false
  let requests = 0
  let statuses: Record<string, number> = {}
  dc.subscribe('http.server.response.finish', (m) => {
    if (!counting) return
    requests++
    const code = String((m as { response: ServerResponse }).response.statusCode)
    statuses[code] = (statuses[code] ?? 0) + 1
  })

  const stall = monitorEventLoopDelay({ resolution: STALL_RESOLUTION_MS })
  stall.enable()
  // The host's view (bench/README.md): a probe at 1 ms, on only in the windows that ask for it
  // (its timer costs the loop a wake-up every millisecond).
  const probe = monitorEventLoopDelay({ resolution: 1 })
  let probing = false
  let cpu0 = process.cpuUsage()
  let threads0 = threadCpuNs()
  let t0 = performance.now()
  let gc: GCProfiler | undefined
  let heap0 = 0

  const profiler = windowProfiler(name)
  const begin = async (label = 'window', withProbe = false) => {
    await profiler?.start(label)
    requests = 0
    statuses = {}
    stall.reset()
    probing = withProbe
    if (probing) { probe.reset(); probe.enable() }
    counting = true
    gc = new GCProfiler()
    gc.start()
    heap0 = process.memoryUsage().heapUsed
    cpu0 = process.cpuUsage()
    threads0 = threadCpuNs()
    t0 = performance.now()
  }
  const end = async (): Promise<WindowReport> => {
    const cpu = process.cpuUsage(cpu0)
    const threads1 = threadCpuNs()
    const threadCpuUs = threads0 && threads1 ? byThread(threads0, threads1) : null
    const threadSwitches = threads0 && threads1 ? switchesByThread(threads0, threads1) : null
    const wallMs = performance.now() - t0
    const heap1 = process.memoryUsage().heapUsed
    const freed = (gc?.stop()?.statistics ?? []).reduce((sum, g) =>
      sum + g.beforeGC.heapStatistics.usedHeapSize - g.afterGC.heapStatistics.usedHeapSize, 0)
    counting = false
    if (probing) probe.disable()
    await profiler?.stop(requests)
    return {
      type: 'window',
      requests,
      cpuUserUs: cpu.user,
      cpuSystemUs: cpu.system,
      wallMs,
      // The histogram records delay beyond the timer's own resolution, in ns.
      maxStallMs: stall.count > 0 ? stall.max / 1e6 : 0,
      statuses,
      rssBytes: process.memoryUsage.rss(),
      mainThreadCpuUs: threadCpuUs?.main ?? null,
      mainThreadWait: mainWaitOf(threads0, threads1),
      threadCpuUs,
      threadSwitches,
      heapAllocatedBytes: heap1 - heap0 + freed,
      ...(probing ? { delay: delayOf(probe) } : {}),
    }
  }

  process.on('message', (msg: ControlMessage) => {
    void (async () => {
      try {
        if (msg.type === 'start') { await begin(String(msg.label ?? 'window'), msg.probe === true); send({ type: 'started' }) }
        else if (msg.type === 'stop') send(await end())
        else if (msg.type === 'exit') process.exit(0)
        else if (extra) await extra(msg)
      } catch (err) {
        send({ type: 'error', message: String((err as Error)?.stack ?? err) })
      }
    })()
  })

  return { begin, end }
}

interface ThreadCounts { name: string; ns: number; waitNs: number; runs: number; voluntary: number; preempted: number }

/** Every thread's time on the CPU so far (ns) and context switches, with its name (`main` for the main thread). */
function threadCpuNs (): Map<string, ThreadCounts> | null {
  try {
    const out = new Map<string, ThreadCounts>()
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const [ns, waitNs, runs] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1').split(' ').map(Number) as [number, number, number]
        const comm = readFileSync(`/proc/self/task/${tid}/comm`, 'latin1').trim()
        const status = readFileSync(`/proc/self/task/${tid}/status`, 'latin1')
        const count = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0)
        out.set(tid, {
          name: tid === String(process.pid) ? 'main' : comm === 'node' ? 'other' : comm, ns, waitNs, runs,
          voluntary: count('voluntary_ctxt_switches'), preempted: count('nonvoluntary_ctxt_switches'),
        })
      } catch {
        // The thread ended while the folder was read.
      }
    }
    return out
  } catch {
    return null
  }
}

/** The main thread's run-queue wait over a window (µs) and the times it was put on a core. */
function mainWaitOf (before: Map<string, ThreadCounts> | null, after: Map<string, ThreadCounts> | null): WindowReport['mainThreadWait'] {
  const tid = String(process.pid)
  const b = before?.get(tid)
  const a = after?.get(tid)
  return a && b && Number.isFinite(a.waitNs) && Number.isFinite(b.waitNs) ? { us: (a.waitNs - b.waitNs) / 1000, runs: a.runs - b.runs } : null
}

/** CPU µs over a window by thread name; a thread that started in the window counts from 0. */
function byThread (before: Map<string, { ns: number }>, after: Map<string, { name: string; ns: number }>): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [tid, t] of after) out[t.name] = (out[t.name] ?? 0) + (t.ns - (before.get(tid)?.ns ?? 0)) / 1000
  return out
}

/** Context switches over a window by thread name; a thread that started in the window counts from 0. */
function switchesByThread (before: Map<string, ThreadCounts>, after: Map<string, ThreadCounts>): Record<string, { voluntary: number; preempted: number }> {
  const out: Record<string, { voluntary: number; preempted: number }> = {}
  for (const [tid, t] of after) {
    const b = before.get(tid)
    const o = out[t.name] ??= { voluntary: 0, preempted: 0 }
    o.voluntary += t.voluntary - (b?.voluntary ?? 0)
    o.preempted += t.preempted - (b?.preempted ?? 0)
  }
  return out
}

/** The probe's quantiles in ms (node records each turn's timer interval, in ns). */
function delayOf (h: ReturnType<typeof monitorEventLoopDelay>) {
  const ms = (ns: number) => (Number.isFinite(ns) ? ns : 0) / 1e6
  return { p50Ms: ms(h.percentile(50)), p99Ms: ms(h.percentile(99)), maxMs: ms(h.max), meanMs: ms(h.mean), n: h.count }
}

/**
 * With BENCH_PROFILE_DIR set (`--profile`), each window is profiled in-process through the
 * inspector, so a profile holds that window's work only (no startup, no warm-up). The
 * sampler costs CPU too: figures of a profiled run are not the bench's figures.
 */
function windowProfiler (name: string) {
  const dir = process.env.BENCH_PROFILE_DIR
  if (!dir) return undefined
  const session = new Session()
  session.connect()
  const post = (method: string, params?: object) => new Promise<any>((resolve, reject) =>
    session.post(method, params, (err, result) => err ? reject(err) : resolve(result)))
  // Worker threads (epx's door) are profiled too, through the inspector's NodeWorker
  // domain: each attached worker gets the same Profiler commands as this thread.
  const workers = new Map<string, string>()   // sessionId → the worker's title
  const pending = new Map<number, (result: any) => void>()
  let nextId = 1
  session.on('NodeWorker.attachedToWorker', (m: any) => { workers.set(m.params.sessionId, String(m.params.workerInfo?.title ?? 'worker')) })
  session.on('NodeWorker.receivedMessageFromWorker', (m: any) => {
    const reply = JSON.parse(m.params.message)
    if (reply.id !== undefined) { pending.get(reply.id)?.(reply.result); pending.delete(reply.id) }
  })
  const toWorker = (sessionId: string, method: string, params: object = {}) => new Promise<any>(resolve => {
    const id = nextId++
    pending.set(id, resolve)
    void post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method, params }) })
  })
  let label = 'window'
  let n = 0
  return {
    async start (l: string) {
      label = l
      await post('NodeWorker.enable', { waitForDebuggerOnStart: false })
      await post('Profiler.enable')
      await post('Profiler.setSamplingInterval', { interval: 250 })
      await post('Profiler.start')
      for (const id of workers.keys()) {
        await toWorker(id, 'Profiler.enable')
        await toWorker(id, 'Profiler.setSamplingInterval', { interval: 250 })
        await toWorker(id, 'Profiler.start')
      }
    },
    async stop (requests: number) {
      const { profile } = await post('Profiler.stop')
      mkdirSync(dir, { recursive: true })
      const file = `${name}-${label}-${++n}-${requests}req`.replace(/[^A-Za-z0-9.-]+/g, '_')
      writeFileSync(join(dir, `${file}.cpuprofile`), JSON.stringify(profile))
      let w = 0
      for (const id of workers.keys()) {
        const result = await toWorker(id, 'Profiler.stop')
        if (result?.profile) writeFileSync(join(dir, `${file}-worker${++w}.cpuprofile`), JSON.stringify(result.profile))
      }
    },
  }
}

/** Reports a failed start to the orchestrator, then exits non-zero. */
export function failStart (name: string, err: unknown): void {
  const message = (err as Error)?.stack ?? String(err)
  if (!process.send) { console.error(message); process.exit(2) }
  process.send({ type: 'failed', message: `${name}: ${message}` }, () => process.exit(2))
  setTimeout(() => process.exit(2), 1000)
}
