/**
 * Open-loop load for the sustained scenario: each stream sends at a fixed arrival rate,
 * whatever the server's answers are doing, and every latency is measured from the time
 * the request was **due**, not the time it went out. A closed loop (send, wait, send)
 * hides a slow server (coordinated omission: it sends less while the server stalls); a
 * rate does not, so the tail it reports is the tail a BSP would see.
 * @module
 */
import { Pool } from 'undici'

export interface RateStream {
  /** e.g. "POST", "GET": the key of its figures. */
  readonly name: string
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string
  /**
   * Each request a distinct programme: `emittedAt` (in `body`) becomes `emittedAt` + n ms,
   * and `siteId` becomes site `n % sites` (`siteIdOf`), so every POST is a new instruction.
   */
  readonly vary?: { readonly emittedAt: string; readonly siteId: string; readonly siteIds: readonly string[] }
  readonly expect: number
  readonly ratePerSec: number
}

export interface RateSpec {
  readonly type: 'rate'
  readonly origin: string
  readonly tls: { readonly ca: string; readonly cert: string; readonly key: string }
  /** Keep-alive connections per stream, all opened before the window. */
  readonly connections: number
  readonly streams: readonly RateStream[]
  readonly warmupMs: number
  readonly durationMs: number
}

export interface StreamResult {
  readonly name: string
  readonly sent: number
  readonly done: number
  readonly errors: number
  readonly unexpected: Record<string, number>
  readonly firstProblem?: string
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  /** Every latency of the window, sorted (the orchestrator pools rounds before taking quantiles). */
  readonly latenciesMs: number[]
}

export interface RateResult {
  readonly type: 'rateResult'
  readonly elapsedMs: number
  /** How late the client itself sent its latest request (its own scheduling, not the server). */
  readonly maxSendLagMs: number
  readonly streams: StreamResult[]
}

interface Tally { latencies: number[]; sent: number; done: number; errors: number; unexpected: Record<string, number>; firstProblem?: string }

const quantile = (sorted: number[], q: number) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN

export class OpenLoop {
  readonly #spec: RateSpec
  readonly #pools: Pool[]
  #n = 0

  constructor (spec: RateSpec) {
    this.#spec = spec
    this.#pools = spec.streams.map(() => new Pool(spec.origin, {
      connections: spec.connections, pipelining: 1, keepAliveTimeout: 60_000,
      connect: { ca: spec.tls.ca, cert: spec.tls.cert, key: spec.tls.key, servername: 'localhost' },
    }))
  }

  #body (s: RateStream): string | undefined {
    const v = s.vary
    if (!v || s.body === undefined) return s.body
    const n = this.#n++
    const at = new Date(Date.parse(v.emittedAt) + n).toISOString()
    return s.body.replace(v.emittedAt, at).replace(v.siteId, v.siteIds[n % v.siteIds.length]!)
  }

  async #one (i: number, dueMs: number, t: Tally, record: boolean): Promise<void> {
    const s = this.#spec.streams[i]!
    t.sent++
    try {
      const res = await this.#pools[i]!.request({ path: s.path, method: s.method, headers: s.headers, body: this.#body(s) })
      const bytes = Buffer.from(await res.body.arrayBuffer())
      const ms = performance.now() - dueMs
      t.done++
      if (res.statusCode !== s.expect) {
        t.unexpected[res.statusCode] = (t.unexpected[res.statusCode] ?? 0) + 1
        t.firstProblem ??= `${res.statusCode} ${bytes.subarray(0, 300).toString('utf8')}`
      }
      if (record) t.latencies.push(ms)
    } catch (err) {
      t.errors++
      t.firstProblem ??= `${(err as { code?: string }).code ?? ''} ${(err as Error).message}`
    }
  }

  /** Opens every connection (the mTLS handshakes happen here), then runs at rate, unrecorded. */
  async warm (): Promise<{ problem?: string }> {
    const tallies = this.#spec.streams.map(() => ({ latencies: [], sent: 0, done: 0, errors: 0, unexpected: {} }) as Tally)
    await Promise.all(this.#spec.streams.flatMap((_, i) =>
      Array.from({ length: this.#spec.connections }, () => this.#one(i, performance.now(), tallies[i]!, false))))
    await this.#run(this.#spec.warmupMs, false, tallies)
    return { problem: tallies.find(t => t.errors || t.firstProblem)?.firstProblem }
  }

  async go (): Promise<RateResult> {
    const tallies = this.#spec.streams.map(() => ({ latencies: [], sent: 0, done: 0, errors: 0, unexpected: {} }) as Tally)
    const t0 = performance.now()
    const lag = await this.#run(this.#spec.durationMs, true, tallies)
    const elapsedMs = performance.now() - t0
    return {
      type: 'rateResult', elapsedMs, maxSendLagMs: lag,
      streams: tallies.map((t, i) => {
        const sorted = t.latencies.sort((a, b) => a - b)
        return {
          name: this.#spec.streams[i]!.name, sent: t.sent, done: t.done, errors: t.errors, unexpected: t.unexpected,
          firstProblem: t.firstProblem, p50Ms: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99), maxMs: sorted.at(-1) ?? NaN,
          latenciesMs: sorted.map(x => Math.round(x * 100) / 100),
        }
      }),
    }
  }

  /** Sends every request when due (evenly spaced per stream); waits for the last answers. */
  async #run (durationMs: number, record: boolean, tallies: Tally[]): Promise<number> {
    const streams = this.#spec.streams
    const start = performance.now()
    const end = start + durationMs
    const next = streams.map(() => start)
    const inFlight = new Set<Promise<void>>()
    let maxLag = 0
    for (;;) {
      const now = performance.now()
      for (let i = 0; i < streams.length; i++) {
        while (next[i]! <= now && next[i]! < end) {
          maxLag = Math.max(maxLag, now - next[i]!)
          const p = this.#one(i, next[i]!, tallies[i]!, record)
          inFlight.add(p)
          void p.finally(() => inFlight.delete(p))
          next[i]! += 1000 / streams[i]!.ratePerSec
        }
      }
      const due = Math.min(...next)
      if (due >= end) break
      await new Promise(resolve => setTimeout(resolve, Math.max(0, due - performance.now())))
    }
    await Promise.all(inFlight)
    return maxLag
  }

  async close (): Promise<void> {
    await Promise.all(this.#pools.map(p => p.close().catch(() => {})))
  }
}
