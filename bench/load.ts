/**
 * The load client, a process of its own so its CPU never counts against a server. It uses
 * undici (already a dependency) with one keep-alive Pool per run: N connections, pipelining
 * 1, the client certificate on every connection. Protocol over IPC: `run` (connect and warm
 * up) → `warmed`; `go` → bounded load (time and count) → `result`; `close` → `closed`.
 * Each of the N workers is a closed loop: send, read the whole body, record, repeat.
 * The sustained scenario is open-loop instead (`open-loop.ts`): `rate` (connect, warm up
 * at rate) → `warmed`; `goRate` → `rateResult`; `close` → `closed`. New connections
 * (`churn.ts`): `churn` (warm up with a few) → `warmed`; `goChurn` → `churnResult`.
 * @module
 */
import { setPriority } from 'node:os'
import { Pool } from 'undici'
import { OpenLoop, type RateSpec } from './open-loop.ts'
import { churn, churnSession, type ChurnSpec } from './churn.ts'

export interface RunSpec {
  readonly type: 'run'
  readonly origin: string
  readonly tls: { readonly ca: string; readonly cert: string; readonly key: string }
  readonly connections: number
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string
  readonly expect: number
  readonly warmupMs: number
  readonly durationMs: number
  readonly maxRequests: number
  readonly targets?: ReadonlyArray<{ readonly path: string; readonly etag?: string }>
}

export interface LoadResult {
  readonly type: 'result'
  readonly requests: number
  readonly errors: number
  /** status → count, for statuses other than `expect`. */
  readonly unexpected: Record<string, number>
  /** The first unexpected answer (status and up to 300 bytes of body), to say why. */
  readonly firstUnexpected?: string
  readonly firstError?: string
  readonly elapsedMs: number
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  readonly bytesPerResponse: number
}

type Msg = RunSpec | RateSpec | ChurnSpec | { type: 'go' } | { type: 'goRate' } | { type: 'goChurn' } | { type: 'close' }

const send = (m: object) => process.send?.(m)
const deadline = Number(process.env.BENCH_CHILD_DEADLINE_MS ?? 20 * 60_000)
setTimeout(() => process.exit(3), deadline).unref()
process.on('disconnect', () => process.exit(0))
// Never above the priority of the thread it loads (bench/README.md "The load client's priority"): its main
// thread, where undici and TLS run (on Linux a nice value is a thread's own).
if (process.env.BENCH_LOAD_NICE) setPriority(process.pid, Number(process.env.BENCH_LOAD_NICE))

let pool: Pool | undefined
let openLoop: OpenLoop | undefined
let spec: RunSpec | undefined
let churnSpec: { spec: ChurnSpec; session: Buffer | undefined } | undefined
let body: Buffer | undefined

interface Tally {
  latencies: number[]
  errors: number
  unexpected: Record<string, number>
  firstUnexpected?: string
  firstError?: string
  bytes: number
  done: number
}

async function drive (s: RunSpec, untilMs: number, max: number, record: boolean): Promise<Tally> {
  const targets = s.targets?.map(tg => ({ path: tg.path, headers: tg.etag ? { ...s.headers, 'if-none-match': tg.etag } : s.headers }))
  const t: Tally = { latencies: [], errors: 0, unexpected: {}, bytes: 0, done: 0 }
  let issued = 0
  const worker = async () => {
    while (performance.now() < untilMs && issued < max && t.errors < 20) {
      issued++
      const t0 = performance.now()
      try {
        const tg = targets ? targets[issued % targets.length]! : undefined
        const res = await pool!.request({ path: tg ? tg.path : s.path, method: s.method, headers: tg ? tg.headers : s.headers, body })
        const bytes = Buffer.from(await res.body.arrayBuffer())
        const ms = performance.now() - t0
        t.done++
        if (res.statusCode !== s.expect) {
          t.unexpected[res.statusCode] = (t.unexpected[res.statusCode] ?? 0) + 1
          t.firstUnexpected ??= `${res.statusCode} ${bytes.subarray(0, 300).toString('utf8')}`
        }
        if (record) { t.latencies.push(ms); t.bytes += bytes.length }
      } catch (err) {
        t.errors++
        t.firstError ??= `${(err as { code?: string }).code ?? ''} ${(err as Error).message}`
      }
    }
  }
  await Promise.all(Array.from({ length: s.connections }, worker))
  return t
}

function quantile (sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

async function onMessage (m: Msg): Promise<void> {
  if (m.type === 'run') {
    spec = m
    body = m.body === undefined ? undefined : Buffer.from(m.body)
    pool = new Pool(m.origin, {
      connections: m.connections,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      connect: { ca: m.tls.ca, cert: m.tls.cert, key: m.tls.key, servername: 'localhost' },
    })
    // Warm-up: open every connection (full mTLS handshakes happen here, not in the window)
    // and let the server's JIT settle.
    const w = await drive(m, performance.now() + m.warmupMs, Math.max(m.connections * 2, 1e9), false)
    send({ type: 'warmed', errors: w.errors, firstError: w.firstError, firstUnexpected: w.firstUnexpected })
  } else if (m.type === 'go') {
    const s = spec!
    const t0 = performance.now()
    const t = await drive(s, t0 + s.durationMs, s.maxRequests, true)
    const elapsedMs = performance.now() - t0
    const sorted = t.latencies.sort((a, b) => a - b)
    const result: LoadResult = {
      type: 'result',
      requests: t.done,
      errors: t.errors,
      unexpected: t.unexpected,
      firstUnexpected: t.firstUnexpected,
      firstError: t.firstError,
      elapsedMs,
      rps: t.done / (elapsedMs / 1000),
      p50Ms: quantile(sorted, 0.5),
      p99Ms: quantile(sorted, 0.99),
      maxMs: sorted.at(-1) ?? NaN,
      bytesPerResponse: sorted.length ? t.bytes / sorted.length : 0,
    }
    send(result)
  } else if (m.type === 'rate') {
    openLoop = new OpenLoop(m)
    const w = await openLoop.warm()
    send({ type: 'warmed', errors: w.problem ? 1 : 0, firstUnexpected: w.problem })
  } else if (m.type === 'goRate') {
    send(await openLoop!.go())
  } else if (m.type === 'churn') {
    const session = await churnSession(m)
    churnSpec = { spec: m, session }
    // A few connections first, so the server's handshake path is warm before the window.
    const w = await churn(m, session, Math.min(m.total, m.concurrency * 2))
    send({ type: 'warmed', errors: w.errors + w.unexpected, firstUnexpected: w.firstProblem })
  } else if (m.type === 'goChurn') {
    send(await churn(churnSpec!.spec, churnSpec!.session))
  } else if (m.type === 'close') {
    await pool?.close().catch(() => {})
    await openLoop?.close()
    pool = undefined
    openLoop = undefined
    send({ type: 'closed' })
  }
}

process.on('message', (m: Msg) => {
  onMessage(m).catch(err => send({ type: 'error', message: String((err as Error)?.stack ?? err) }))
})
send({ type: 'ready' })
