/**
 * What epx costs its host's event loop (bench/README.md "The host's view"), measured by a probe inside the
 * server's own process (`servers/harness.ts`, `start` with `probe`): the event-loop delay
 * at 1 ms resolution (`monitorEventLoopDelay`), p99 and max, with no traffic, while the
 * load process opens new mTLS connections (one GET each, 50 at a time), during GET 200 at
 * full keep-alive load and during a 1,000-site programme; for E and for A (the limit: what
 * TLS and HTTP alone cost a loop that serves them). Then E's main-thread CPU per request
 * (Linux schedstat of the main thread alone, less the same thread's CPU when idle) with the request log on and off, and E's
 * whole-process CPU per connection for a full TLS 1.2 handshake against a resumed one.
 * @module
 */
import type { Child } from '../test/helpers/child.ts'
import type { ChurnResult, ChurnSpec } from './churn.ts'
import type { LoadResult, RunSpec } from './load.ts'
import type { WindowReport } from './servers/harness.ts'

export const HOST = 'host'
export const CHURN_CONNECTIONS = 2000
export const CHURN_CONCURRENCY = 50
/** The targets: p99 within this of the quiet probe's, and no single delay over the max. */
export const DELAY_P99_OVER_QUIET_MS = 2
export const DELAY_MAX_MS = 10
export const MAIN_THREAD_US = { logOn: 10, logOff: 2 } as const

export interface Delay {
  readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number; readonly n: number
  /**
   * The probing thread (the host's main thread) over the window: its CPU (ms), the time it
   * was ready and waited for a core (ms, the run queue's delay), and the times it was put on
   * one. Linux schedstat; absent elsewhere.
   */
  readonly main?: { readonly runMs: number; readonly waitMs: number; readonly runs: number }
  /** New connections only: the whole process's CPU µs per connection (TLS 1.3 full handshake and one GET). */
  readonly cpuPerConnectionUs?: number
  /** Keep-alive GETs only: the answers a second over the window (the load the server carried). */
  readonly answersPerS?: number
}
export type LoopCase = 'quiet' | 'new connections' | 'keep-alive GET 200' | '1,000-site programme'
export const LOOP_CASES: readonly LoopCase[] = ['quiet', 'new connections', 'keep-alive GET 200', '1,000-site programme']

export interface HostProbe {
  /** The load client's nice value (the rounds' client: bench/README.md "The load client's priority"). */
  readonly clientNice: number
  readonly loop: Partial<Record<'A' | 'E', Partial<Record<LoopCase, Delay & { readonly note?: string }>>>>
  /**
   * Main-thread CPU µs per request, one figure per window, E with the request log on and
   * off: what the requests add to the thread, its CPU over the window less what the same
   * thread spends idle over as long (`idle`: the harness's own timers, 5 ms stall monitor
   * included, run there whatever the load); `raw`, the window's CPU per request as read.
   */
  readonly mainThread: Record<'GET 200' | 'POST 1×96', { logOn: number[]; logOff: number[]; rawLogOn: number[]; rawLogOff: number[] }>
  /** E's main thread with no traffic, CPU µs per second, per round, log on and off. */
  readonly idle: { logOn: number[]; logOff: number[] }
  /** E's whole-process CPU µs per TLS 1.2 connection (one GET each), per window. */
  readonly handshake: { fullUs: number[]; resumedUs: number[]; resumed: number; offered: number }
  readonly failures: Record<string, string>
}

export interface ProbeServer {
  readonly child: Child
  readonly port: number
  /** Its tokens (A checks none). */
  readonly secrets: { readonly outbound: string; readonly inbound: string }
}

export interface HostProbeInput {
  /** The rounds' load client, and its nice value. */
  readonly load: Child
  readonly clientNice: number
  readonly servers: Partial<Record<'A' | 'E', ProbeServer>>
  /** E with `api.logRequests: false`, started for the main-thread figures; undefined if it failed. */
  readonly eNoLog: () => Promise<ProbeServer | undefined>
  readonly tls: { ca: string; cert: string; key: string }
  readonly quick: boolean
  readonly rounds: number
  readonly getPath: string
  readonly post: { path: string; body: string; large: string }
}

/**
 * Requests served in a window: the server's own count, or, when the server's thread saw
 * none (epx's door in its worker thread answers where the harness's diagnostics channel
 * cannot hear), the load's count of answers in the same window.
 */
export function servedIn (w: { readonly requests?: unknown }, r: { readonly requests: number }): number {
  const served = Number(w.requests)
  return Math.max(1, served > 0 ? served : r.requests)
}

const msg = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0]!.slice(0, 300)

/** One window on `server` around `work`, with the 1 ms probe when asked. */
async function windowed<R> (server: Child, label: string, probe: boolean, work: () => Promise<R>): Promise<{ w: WindowReport; r: R }> {
  await server.ask({ type: 'start', label, probe }, 'started', 10_000)
  const r = await work()
  const w = await server.ask({ type: 'stop' }, 'window', 10_000) as unknown as WindowReport
  return { w, r }
}

async function keepAlive (load: Child, server: Child, spec: RunSpec, label: string, probe: boolean) {
  try {
    const warmed = await load.ask(spec, 'warmed', spec.warmupMs + 60_000)
    if (warmed.errors || warmed.firstUnexpected) throw new Error(String(warmed.firstUnexpected ?? warmed.firstError))
    const { w, r } = await windowed(server, label, probe, async () => await load.ask({ type: 'go' }, 'result', spec.durationMs + 180_000) as unknown as LoadResult)
    if (r.errors || Object.keys(r.unexpected).length) throw new Error(r.firstUnexpected ?? r.firstError ?? 'errors')
    return { ...w, requests: servedIn(w, r) }
  } finally {
    await load.ask({ type: 'close' }, 'closed', 15_000).catch(() => {})
  }
}

async function newConnections (load: Child, server: Child, spec: ChurnSpec, label: string, probe: boolean) {
  const warmed = await load.ask(spec, 'warmed', 120_000)
  if (warmed.errors) throw new Error(String(warmed.firstUnexpected))
  const { w, r } = await windowed(server, label, probe, async () => await load.ask({ type: 'goChurn' }, 'churnResult', 600_000) as unknown as ChurnResult)
  if (r.errors || r.unexpected) throw new Error(`${r.errors} errors, ${r.unexpected} unexpected answers: ${r.firstProblem}`)
  return { w, r }
}

const delayOf = (w: WindowReport): Delay => {
  if (!w.delay) throw new Error('the server sent no probe figures')
  const main = w.mainThreadCpuUs !== null && w.mainThreadWait ? { runMs: w.mainThreadCpuUs / 1000, waitMs: w.mainThreadWait.us / 1000, runs: w.mainThreadWait.runs } : undefined
  return { p50Ms: w.delay.p50Ms, p99Ms: w.delay.p99Ms, maxMs: w.delay.maxMs, n: w.delay.n, ...(main ? { main } : {}) }
}

export async function measureHost (i: HostProbeInput): Promise<HostProbe> {
  const out: HostProbe = {
    clientNice: i.clientNice, loop: {}, failures: {},
    mainThread: { 'GET 200': { logOn: [], logOff: [], rawLogOn: [], rawLogOff: [] }, 'POST 1×96': { logOn: [], logOff: [], rawLogOn: [], rawLogOff: [] } },
    idle: { logOn: [], logOff: [] },
    handshake: { fullUs: [], resumedUs: [], resumed: 0, offered: 0 },
  }
  const getHeaders = (s: ProbeServer) => ({ authorization: `Bearer ${s.secrets.outbound}`, accept: 'application/json' })
  const postHeaders = (s: ProbeServer) => ({ authorization: `Bearer ${s.secrets.inbound}`, 'content-type': 'application/json' })
  const churnSpec = (s: ProbeServer, over: Partial<ChurnSpec> = {}): ChurnSpec => ({
    type: 'churn', port: s.port, tls: i.tls, path: i.getPath, headers: getHeaders(s), expect: 200,
    total: i.quick ? 400 : CHURN_CONNECTIONS, concurrency: CHURN_CONCURRENCY, resume: false, ...over,
  })
  const getSpec = (s: ProbeServer, durationMs: number): RunSpec => ({
    type: 'run', origin: `https://127.0.0.1:${s.port}`, tls: i.tls, connections: 8, method: 'GET', path: i.getPath,
    headers: getHeaders(s), expect: 200,
    warmupMs: i.quick ? 250 : 700, durationMs, maxRequests: 300_000,
  })

  // 1. The loop's delay, A and E in turn.
  for (const name of ['A', 'E'] as const) {
    const s = i.servers[name]
    if (!s) continue
    const mine: Partial<Record<LoopCase, Delay>> = out.loop[name] = {}
    const attempt = async (what: LoopCase, f: () => Promise<Delay>) => {
      try {
        mine[what] = await f()
        process.stderr.write(`  host probe ${name} ${what}: event-loop delay p99 ${mine[what]!.p99Ms.toFixed(2)} ms, max ${mine[what]!.maxMs.toFixed(1)} ms\n`)
      } catch (err) { out.failures[`${name}|${what}`] = msg(err) }
    }
    await attempt('quiet', async () => delayOf((await windowed(s.child, 'quiet', true, () => new Promise(r => setTimeout(r, i.quick ? 1000 : 3000)))).w))
    await attempt('new connections', async () => {
      const { w, r } = await newConnections(i.load, s.child, churnSpec(s), 'new connections', true)
      return { ...delayOf(w), cpuPerConnectionUs: (w.cpuUserUs + w.cpuSystemUs) / Math.max(1, r.connections) }
    })
    await attempt('keep-alive GET 200', async () => {
      const w = await keepAlive(i.load, s.child, getSpec(s, i.quick ? 1000 : 3000), 'keep-alive GET 200', true)
      return { ...delayOf(w), answersPerS: w.requests / (w.wallMs / 1000) }
    })
    await attempt('1,000-site programme', async () => delayOf(await keepAlive(i.load, s.child, {
      type: 'run', origin: `https://127.0.0.1:${s.port}`, tls: i.tls, connections: 1, method: 'POST', path: i.post.path,
      headers: postHeaders(s), body: i.post.large, expect: 202, warmupMs: 0, durationMs: 120_000, maxRequests: i.quick ? 1 : 3,
    }, '1,000-site programme', true)))
  }

  const e = i.servers.E
  if (!e) return out

  // 2. CPU per connection: a full TLS 1.2 handshake against one resuming a kept session.
  for (let round = 1; round <= i.rounds; round++) {
    for (const resume of [false, true]) {
      const what = resume ? 'resumed' : 'full handshake'
      try {
        const { w, r } = await newConnections(i.load, e.child, churnSpec(e, { resume, maxVersion: 'TLSv1.2', total: i.quick ? 200 : 1000 }), `TLS 1.2 ${what}`, false)
        const us = (w.cpuUserUs + w.cpuSystemUs) / Math.max(1, r.connections);
        (resume ? out.handshake.resumedUs : out.handshake.fullUs).push(us)
        if (resume) { out.handshake.resumed += r.resumed; out.handshake.offered += r.connections }
        process.stderr.write(`  host probe E TLS 1.2 ${what}: ${us.toFixed(0)} µs CPU per connection${resume ? ` (${r.resumed}/${r.connections} resumed)` : ''}\n`)
      } catch (err) { out.failures[`E|TLS 1.2 ${what}`] = msg(err) }
    }
  }

  // 3. E's main thread per request, the request log on (E) and off (a second E).
  const noLog = await i.eNoLog().catch((err: unknown) => { out.failures['E, log off'] = msg(err); return undefined })
  for (let round = 1; round <= i.rounds; round++) {
    const idle: Partial<Record<'logOn' | 'logOff', number>> = {}
    for (const [log, s] of [['logOn', e], ['logOff', noLog]] as const) {
      if (!s) continue
      try {
        const { w } = await windowed(s.child, `main thread idle ${log}`, false, () => new Promise(r => setTimeout(r, i.quick ? 700 : 2000)))
        if (w.mainThreadCpuUs === null) throw new Error('no per-thread CPU time on this system (/proc/self/task/<pid>/schedstat)')
        out.idle[log].push(idle[log] = w.mainThreadCpuUs / (w.wallMs / 1000))
      } catch (err) { out.failures[`E|main thread idle ${log}`] = msg(err) }
    }
    for (const scenario of ['GET 200', 'POST 1×96'] as const) {
      const pair: Array<['logOn' | 'logOff', ProbeServer | undefined]> = [['logOn', e], ['logOff', noLog]]
      if (round % 2 === 0) pair.reverse()
      for (const [log, s] of pair) {
        if (!s || idle[log] === undefined) continue
        try {
          const spec: RunSpec = scenario === 'GET 200'
            ? getSpec(s, i.quick ? 700 : 2000)
            : { ...getSpec(s, i.quick ? 700 : 2000), method: 'POST', path: i.post.path, headers: postHeaders(s), body: i.post.body, expect: 202, maxRequests: 100_000 }
          const w = await keepAlive(i.load, s.child, spec, `main thread ${scenario} ${log}`, false)
          if (w.mainThreadCpuUs === null) throw new Error('no per-thread CPU time on this system (/proc/self/task/<pid>/schedstat)')
          const raw = w.mainThreadCpuUs / Math.max(1, w.requests)
          const us = (w.mainThreadCpuUs - idle[log]! * w.wallMs / 1000) / Math.max(1, w.requests)
          out.mainThread[scenario][log].push(us)
          out.mainThread[scenario][log === 'logOn' ? 'rawLogOn' : 'rawLogOff'].push(raw)
          process.stderr.write(`  host probe E ${scenario}, request log ${log === 'logOn' ? 'on' : 'off'}: ${us.toFixed(1)} µs main-thread CPU per request (${raw.toFixed(1)} as read, the thread idle ${(idle[log]! / 1000).toFixed(1)} ms/s)\n`)
        } catch (err) { out.failures[`E|main thread ${scenario} ${log}`] = msg(err) }
      }
    }
  }
  await noLog?.child.stop()
  return out
}
