/**
 * The sustained scenario (issue 9, defect 7): one-site programmes POSTed and the
 * published document GOT at a fixed arrival rate each (open loop, `open-loop.ts`), for
 * several seconds, against A, B and E in turn; the latency tail of each. E's POST waits
 * for its durable flush, so the disk's own `write` + `fdatasync` tail is measured in the
 * same run, in the folder E's store lives in: a POST cannot be faster than that.
 * @module
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import type { Child } from './child.ts'
import type { RateResult, RateSpec, RateStream } from './open-loop.ts'
import type { ServerName } from './report.ts'

export const SUSTAINED = 'sustained'
/** Arrivals per second of each stream: the rates the issue measured 215 ms p99 at. */
export const POST_RATE = 200
export const GET_RATE = 200
/** The target of E's POST p99 under that load, absolute (a durable 202, not a ratio). */
export const POST_P99_TARGET_MS = 50

export interface SustainedServer {
  readonly post: { sent: number; done: number; p50Ms: number; p99Ms: number; maxMs: number }
  readonly get: { sent: number; done: number; p50Ms: number; p99Ms: number; maxMs: number }
  /** The server's own figures over the window: CPU per response and the longest stall. */
  readonly cpuPerReqUs: number
  readonly maxStallMs: number
  /** How late the load client sent its latest request (its own scheduling). */
  readonly maxSendLagMs: number
}

export interface FsyncProbe { readonly n: number; readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number }

export interface Sustained {
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
  readonly stream: (name: 'POST' | 'GET') => Omit<RateStream, 'ratePerSec' | 'name'>
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

export async function measureSustained (i: SustainedInput): Promise<Sustained> {
  const durationMs = i.quick ? 8_000 : 30_000
  const warmupMs = i.quick ? 500 : 1_500
  const servers: Sustained['servers'] = {}
  const failures: Sustained['failures'] = {}
  const loadStart = loadavg()[0]!
  let fsync: FsyncProbe | undefined
  for (const name of ['A', 'B', 'E'] as const) {
    const s = i.servers[name]
    if (!s) continue
    if (name === 'E') fsync = probeFsync(i.storeDir, i.quick ? 1_000 : 3_000)
    const spec: RateSpec = {
      type: 'rate', origin: `https://127.0.0.1:${s.port}`, tls: i.tls, connections: 16, warmupMs, durationMs,
      streams: [
        { name: 'POST', ratePerSec: POST_RATE, ...i.stream('POST') },
        { name: 'GET', ratePerSec: GET_RATE, ...i.stream('GET') },
      ],
    }
    try {
      const warmed = await i.load.ask(spec, 'warmed', warmupMs + 60_000)
      if (warmed.errors) throw new Error(String(warmed.firstUnexpected))
      await s.child.ask({ type: 'start', label: `${SUSTAINED}` }, 'started', 10_000)
      const r = await i.load.ask({ type: 'goRate' }, 'rateResult', durationMs + 60_000) as unknown as RateResult
      const w = await s.child.ask({ type: 'stop' }, 'window', 10_000)
      const bad = r.streams.find(x => x.errors || Object.keys(x.unexpected).length)
      if (bad) throw new Error(`${bad.name}: ${bad.firstProblem ?? 'errors'}`)
      const [post, get] = r.streams
      const figures = (x: typeof post) => ({ sent: x!.sent, done: x!.done, p50Ms: x!.p50Ms, p99Ms: x!.p99Ms, maxMs: x!.maxMs })
      servers[name] = {
        post: figures(post), get: figures(get),
        cpuPerReqUs: (Number(w.cpuUserUs) + Number(w.cpuSystemUs)) / Math.max(1, Number(w.requests)),
        maxStallMs: Number(w.maxStallMs), maxSendLagMs: r.maxSendLagMs,
      }
      process.stderr.write(`  ${SUSTAINED} ${name}: POST p50 ${post!.p50Ms.toFixed(1)} p99 ${post!.p99Ms.toFixed(1)} max ${post!.maxMs.toFixed(0)} ms; ` +
        `GET p50 ${get!.p50Ms.toFixed(1)} p99 ${get!.p99Ms.toFixed(1)} max ${get!.maxMs.toFixed(0)} ms\n`)
    } catch (err) {
      failures[name] = String((err as Error).message).split('\n')[0]!.slice(0, 300)
      process.stderr.write(`  ${SUSTAINED} ${name}: failed (${failures[name]})\n`)
    } finally {
      await i.load.ask({ type: 'close' }, 'closed', 15_000).catch(() => {})
    }
  }
  return { durationMs, postRate: POST_RATE, getRate: GET_RATE, servers, failures, fsync, loadAvg: { start: loadStart, end: loadavg()[0]! } }
}
