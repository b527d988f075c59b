/**
 * The sustained scenario (bench/README.md "Sustained"): one-site programmes POSTed and the
 * published document GOT at a fixed arrival rate each (open loop, `open-loop.ts`), for
 * rounds of several seconds, against A, B, E and E-pg in turn; the latency tail of each. E's POST waits
 * for its durable flush, so the disk's own `write` + `fdatasync` tail is measured in the
 * same run, in the folder E's store lives in: a POST cannot be faster than that.
 * @module
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import type { Child } from '../test/helpers/child.ts'
import type { RateResult, RateSpec, RateStream, StreamResult } from './open-loop.ts'
import type { ServerName } from './report.ts'
import { servedIn } from './host-probe.ts'
import type { BenchPostgres } from './postgres.ts'

export const SUSTAINED = 'sustained'
/** Arrivals per second of each stream (bench/README.md "Sustained"). */
export const POST_RATE = 200
export const GET_RATE = 200
/** The target of E's POST p99 under that load, absolute (a durable 202, not a ratio). */
export const POST_P99_TARGET_MS = 50

export interface SustainedServer {
  readonly post: { sent: number; done: number; p50Ms: number; p99Ms: number; maxMs: number }
  readonly get: { sent: number; done: number; p50Ms: number; p99Ms: number; maxMs: number }
  /** The server's own figures over the window: CPU per response and the longest stall. */
  readonly cpuPerReqUs: number
  /** E-pg: the PostgreSQL cluster's CPU per response over the same windows (not in `cpuPerReqUs`). */
  readonly dbCpuPerReqUs?: number
  /** E-pg: POSTs answered per write transaction of the database (the group commit; the few other writes count too). */
  readonly postsPerDbCommit?: number
  readonly maxStallMs: number
  /** How late the load client sent its latest request (its own scheduling). */
  readonly maxSendLagMs: number
}

export interface FsyncProbe { readonly n: number; readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number }

export interface Sustained {
  readonly rounds: number
  /** Per window; each server runs `rounds` windows, its latencies pooled. */
  readonly durationMs: number
  readonly postRate: number
  readonly getRate: number
  readonly servers: Partial<Record<ServerName, SustainedServer>>
  readonly failures: Partial<Record<ServerName, string>>
  /** `write` 4 KiB + `fdatasync`, in a loop, in the folder of E's store, just before E's window. */
  readonly fsync?: FsyncProbe
  /** 1-minute load average when the scenario started and ended (other work on the machine). */
  readonly loadAvg: { readonly start: number; readonly end: number }
}

export interface SustainedInput {
  readonly load: Child
  readonly servers: Partial<Record<ServerName, { child: Child; port: number }>>
  readonly tls: { ca: string; cert: string; key: string }
  readonly quick: boolean
  /** The folder E's store lives in (the fsync probe writes its file there). */
  readonly storeDir: string
  /** E-pg's database: its processes' CPU (ns) and its counters, read around each of E-pg's windows. */
  readonly db?: BenchPostgres
  /** A stream's requests for `server` (E-pg has tokens of its own). */
  readonly stream: (name: 'POST' | 'GET', server: ServerName) => Omit<RateStream, 'ratePerSec' | 'name'>
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

/** The disk's own durable-write tail: what any flush of E's store pays at least. */
export function probeFsync (dir: string, durationMs: number): FsyncProbe {
  const tmp = mkdtempSync(join(dir, 'fsync-probe-'))
  const fd = openSync(join(tmp, 'probe'), 'w')
  const page = Buffer.alloc(4096, 0x5a)
  const times: number[] = []
  try {
    const end = performance.now() + durationMs
    for (let i = 0; performance.now() < end; i++) {
      const t0 = performance.now()
      writeSync(fd, page, 0, page.length, (i % 256) * page.length)
      fdatasyncSync(fd)
      times.push(performance.now() - t0)
    }
  } finally {
    closeSync(fd)
    rmSync(tmp, { recursive: true, force: true })
  }
  times.sort((a, b) => a - b)
  return { n: times.length, p50Ms: quantile(times, 0.5), p99Ms: quantile(times, 0.99), maxMs: times.at(-1)! }
}

/** Latency figures of one stream, over every round's window pooled. */
function figures (latencies: number[], sent: number, done: number) {
  latencies.sort((a, b) => a - b)
  return { sent, done, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), maxMs: latencies.at(-1)! }
}

/**
 * Rounds of one window per server, the order rotated each round (the machine's other work
 * comes and goes: no server always gets the same moment); each server's latencies of every
 * round are pooled before the quantiles are taken.
 */
export async function measureSustained (i: SustainedInput): Promise<Sustained> {
  const rounds = i.quick ? 1 : 3
  const durationMs = i.quick ? 8_000 : 10_000
  const warmupMs = i.quick ? 500 : 1_000
  const servers: Sustained['servers'] = {}
  const failures: Sustained['failures'] = {}
  const loadStart = loadavg()[0]!
  const names = (['A', 'B', 'E', 'E-pg'] as const).filter(n => i.servers[n])
  const pooled = new Map<ServerName, { post: number[]; get: number[]; sent: number[]; done: number[]; cpuUs: number; dbUs: number; dbTx: number; posts: number; responses: number; stall: number; lag: number }>()
  let fsync: FsyncProbe | undefined
  for (let round = 0; round < rounds; round++) {
    for (const name of names.map((_, k) => names[(k + round) % names.length]!)) {
      const s = i.servers[name]!
      if (failures[name]) continue
      // Right before E's first window: the disk as E's flushes are about to find it.
      if ((name === 'E' || name === 'E-pg') && !fsync) fsync = probeFsync(i.storeDir, i.quick ? 1_000 : 3_000)
      const spec: RateSpec = {
        type: 'rate', origin: `https://127.0.0.1:${s.port}`, tls: i.tls, connections: 16, warmupMs, durationMs,
        streams: [
          { name: 'POST', ratePerSec: POST_RATE, ...i.stream('POST', name) },
          { name: 'GET', ratePerSec: GET_RATE, ...i.stream('GET', name) },
        ],
      }
      try {
        const warmed = await i.load.ask(spec, 'warmed', warmupMs + 60_000)
        if (warmed.errors) throw new Error(String(warmed.firstUnexpected))
        const db = name === 'E-pg' ? i.db : undefined
        const c0 = await db?.counters()
        await s.child.ask({ type: 'start', label: `${SUSTAINED} r${round + 1}` }, 'started', 10_000)
        const db0 = db?.cpuNs() ?? 0
        const r = await i.load.ask({ type: 'goRate' }, 'rateResult', durationMs + 60_000) as unknown as RateResult
        const db1 = db?.cpuNs() ?? 0
        const w = await s.child.ask({ type: 'stop' }, 'window', 10_000)
        const c1 = await db?.counters()
        const bad = r.streams.find(x => x.errors || Object.keys(x.unexpected).length)
        if (bad) throw new Error(`${bad.name}: ${bad.firstProblem ?? 'errors'}`)
        const [post, get] = r.streams as [StreamResult, StreamResult]
        let acc = pooled.get(name)
        if (!acc) pooled.set(name, acc = { post: [], get: [], sent: [0, 0], done: [0, 0], cpuUs: 0, dbUs: 0, dbTx: 0, posts: 0, responses: 0, stall: 0, lag: 0 })
        for (const x of post.latenciesMs) acc.post.push(x)
        for (const x of get.latenciesMs) acc.get.push(x)
        acc.sent[0]! += post.sent; acc.sent[1]! += get.sent; acc.done[0]! += post.done; acc.done[1]! += get.done
        acc.cpuUs += Number(w.cpuUserUs) + Number(w.cpuSystemUs)
        acc.dbUs += Math.max(0, db1 - db0) / 1000
        if (c0 && c1) { acc.posts += post.done; acc.dbTx += c1.transactions - c0.transactions - 1 }
        // The harness counts only the requests its own thread served: the door's worker's are the load's.
        acc.responses += servedIn(w as { requests?: unknown }, { requests: post.done + get.done })
        acc.stall = Math.max(acc.stall, Number(w.maxStallMs))
        acc.lag = Math.max(acc.lag, r.maxSendLagMs)
        process.stderr.write(`  ${SUSTAINED} round ${round + 1} ${name}: POST p50 ${post.p50Ms.toFixed(1)} p99 ${post.p99Ms.toFixed(1)} max ${post.maxMs.toFixed(0)} ms; ` +
          `GET p50 ${get.p50Ms.toFixed(1)} p99 ${get.p99Ms.toFixed(1)} max ${get.maxMs.toFixed(0)} ms; load ${loadavg()[0]!.toFixed(1)}\n`)
      } catch (err) {
        failures[name] = `round ${round + 1}: ${String((err as Error).message).split('\n')[0]!.slice(0, 300)}`
        process.stderr.write(`  ${SUSTAINED} round ${round + 1} ${name}: failed (${failures[name]})\n`)
      } finally {
        await i.load.ask({ type: 'close' }, 'closed', 15_000).catch(() => {})
      }
    }
  }
  for (const [name, acc] of pooled) {
    if (failures[name]) continue
    servers[name] = {
      post: figures(acc.post, acc.sent[0]!, acc.done[0]!), get: figures(acc.get, acc.sent[1]!, acc.done[1]!),
      cpuPerReqUs: acc.cpuUs / Math.max(1, acc.responses), maxStallMs: acc.stall, maxSendLagMs: acc.lag,
      ...(name === 'E-pg' ? { dbCpuPerReqUs: acc.dbUs / Math.max(1, acc.responses), postsPerDbCommit: acc.posts / Math.max(1, acc.dbTx) } : {}),
    }
  }
  return { rounds, durationMs, postRate: POST_RATE, getRate: GET_RATE, servers, failures, fsync, loadAvg: { start: loadStart, end: loadavg()[0]! } }
}
