/**
 * Row 6: a soak. A sustained mix of GET (published revision) and POST (re-sent and new
 * programmes) for a set time; the daemon's heap after GC and its resident memory are
 * taken after a warm-up (JIT, TLS and LMDB caches filled), half-way and at the end. The
 * target is on the second half (≤ +10 %): a leak grows as much in each half, while what
 * is still warming up (optimized code, caches) grows in the first. A 3-minute run serves
 * ~150,000 requests a half on a ~13 MB heap, so the bound catches a leak of ~10 bytes
 * a request; start → end is shown too, with its cost per request.
 * Resident memory is judged on its anonymous part (Linux `RssAnon`): LMDB's memory map
 * is file-backed page cache that grows with the data and is the kernel's to reclaim.
 * @module
 */
import { request, type Agent } from 'undici'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { agentFor, seedDataDir, startHost, targetDate, tempDir } from './daemon.ts'
import { info, type Figure } from './report.ts'

export interface SoakOptions {
  readonly warmupMs: number
  readonly durationMs: number
  readonly connections?: number
  /** Allowed growth, in percent of the start figure. */
  readonly boundPct?: number
}

interface Memory { heapUsed: number; rss: number; rssAnon?: number }

export interface SoakResult {
  readonly seconds: number
  readonly requests: number
  readonly errors: number
  readonly start: Memory
  readonly mid: Memory
  readonly end: Memory
  readonly boundPct: number
}

export async function soak (o: SoakOptions): Promise<SoakResult> {
  const dataDir = tempDir('soak')
  const { bsp } = await seedDataDir(dataDir, [{ id: 'bsp' }])
  const day = targetDate()
  const host = await startHost({ dataDir, sites: 20, publish: { targetDate: day, siteIds: [siteId(1)] },
    // A solver applies its queue every cycle: without cycles the reference host's queue
    // (host memory, not epx's) would grow by every programme posted.
    cycleSeconds: 1 }, { execArgv: ['--expose-gc'] })
  const agent: Agent = agentFor(bsp.cert, o.connections ?? 4)
  const getUrl = `${host.origin}${OUTBOUND_PATH}?site_id=${siteId(1)}&target_date=${day}`
  let requests = 0
  let errors = 0
  let n = 0
  const drive = async (until: number) => {
    await Promise.all(Array.from({ length: o.connections ?? 4 }, async (_, w) => {
      for (let i = 0; i < 1_000_000 && Date.now() < until; i++) {
        const post = (i + w) % 2 === 0
        // Half the programmes re-send one instruction id (an overwrite), half are new ones of 20 sites in turn.
        // Instants of the day before yesterday: never ahead of the server's clock (inbound.maxClockSkewSeconds).
        const emittedAt = new Date(Date.parse(`${day}T00:00:00Z`) - 2 * 86_400_000 + (post && i % 4 === 0 ? 0 : (++n) * 1000)).toISOString()
        try {
          const res = post
            ? await request(`${host.origin}${INBOUND_PATH}`, {
              method: 'POST', dispatcher: agent, body: JSON.stringify(programme({ targetDate: day, emittedAt, sites: [siteId(1 + (n % 20))] })),
              headers: { authorization: `Bearer ${bsp.inbound}`, 'content-type': 'application/json' },
            })
            : await request(getUrl, { dispatcher: agent, headers: { authorization: `Bearer ${bsp.outbound}` } })
          await res.body.dump()
          if (res.statusCode !== (post ? 202 : 200)) errors++
        } catch {
          errors++
        }
        requests++
      }
    }))
  }
  try {
    await drive(Date.now() + o.warmupMs)
    const start = await host.child.ask({ type: 'memory' }, 'memory', 30_000) as unknown as Memory
    requests = 0
    errors = 0
    const t0 = Date.now()
    await drive(t0 + o.durationMs / 2)
    const mid = await host.child.ask({ type: 'memory' }, 'memory', 30_000) as unknown as Memory
    await drive(t0 + o.durationMs)
    const seconds = (Date.now() - t0) / 1000
    const end = await host.child.ask({ type: 'memory' }, 'memory', 30_000) as unknown as Memory
    return { seconds, requests, errors, start, mid, end, boundPct: o.boundPct ?? 10 }
  } finally {
    await agent.close().catch(() => {})
    await host.child.stop()
  }
}

const MB = 2 ** 20
const growth = (a: number, b: number) => (b - a) / a * 100

export function soakFigures (r: SoakResult): Figure[] {
  const within = (name: string, a: number, b: number): Figure => {
    const g = growth(a, b)
    return { name, value: `${(a / MB).toFixed(1)} → ${(b / MB).toFixed(1)} MB (${g >= 0 ? '+' : ''}${g.toFixed(1)} %)`, target: `≤ +${r.boundPct} %`, met: g <= r.boundPct }
  }
  const anon = r.start.rssAnon !== undefined && r.end.rssAnon !== undefined
  return [
    info('soak: seconds, requests (GET/POST half each), rate', `${r.seconds.toFixed(0)} s, ${r.requests.toLocaleString('en')}, ${(r.requests / r.seconds).toFixed(0)}/s`),
    { name: 'requests not answered 200/202', value: r.errors, target: '= 0', met: r.errors === 0 },
    within('V8 heap after GC, second half (mid → end)', r.mid.heapUsed, r.end.heapUsed),
    anon ? within('resident memory, anonymous, second half', r.mid.rssAnon!, r.end.rssAnon!) : within('resident memory, second half', r.mid.rss, r.end.rss),
    info('V8 heap after GC, start → mid → end', `${(r.start.heapUsed / MB).toFixed(1)} → ${(r.mid.heapUsed / MB).toFixed(1)} → ${(r.end.heapUsed / MB).toFixed(1)} MB (${((r.end.heapUsed - r.start.heapUsed) / r.requests).toFixed(1)} bytes a request)`),
    info('resident memory, total (LMDB map included)', `${(r.start.rss / MB).toFixed(1)} → ${(r.end.rss / MB).toFixed(1)} MB`),
  ]
}
