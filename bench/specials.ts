/**
 * The figures that only concern epx, measured in a fresh E process managing 10,000 sites:
 * a publication of every site for one day (wall time, CPU, longest event-loop stall, all
 * measured inside the process around `handle.publish()`), the longest stall while a
 * 1,000-site programme is received, and the resident memory once 10,000 sites × 30 days
 * of revisions are stored (seeded by publishing 30 target dates).
 * @module
 */
import { loadavg } from 'node:os'
import { addDays } from '../src/contract/paris-day.ts'
import { INBOUND_PATH, OUTBOUND_PATH, REALISE_PATH } from '../src/http/route.ts'
import type { Child } from '../test/helpers/child.ts'
import { programme, SAME_SIZE_SITE } from './fixtures.ts'
import type { LoadResult, RunSpec } from './load.ts'
import { servedIn } from './host-probe.ts'


export const PUBLICATION_SITES = 10_000
export const LARGE_PROGRAMME_SITES = 1_000
export const HISTORY_DAYS = 30
/** What `--special` can name: E's measurements here, the operations' share (ops-share.ts), the console's pages (console-pages.ts) and the publication's webhooks (webhooks.ts). */
export const SPECIAL_PARTS = ['publication', 'programme', 'metering', 'rss', 'ops', 'console', 'webhooks'] as const
export type SpecialPart = typeof SPECIAL_PARTS[number]

export interface PublicationRun {
  readonly wallMs: number
  readonly cpuMs: number
  readonly maxStallMs: number
  readonly published: number
  readonly failed: number
}

export interface Specials {
  readonly error?: string
  readonly publication?: { readonly sites: number; readonly runs: PublicationRun[]; readonly firstFailure?: string }
  readonly publicationError?: string
  readonly largeProgramme?: {
    readonly sites: number; readonly bodyBytes: number; readonly requests: number
    readonly maxStallMs: number; readonly p50Ms: number; readonly cpuPerReqMs: number
  }
  readonly largeProgrammeError?: string
  /**
   * After the publication: GET 304 of every site in turn, each with its ETag (as a BSP
   * polls), against one site again and again, in pairs of windows: E's CPU per request of
   * each, and their ratio per round.
   */
  readonly polling?: { readonly sites: number; readonly ratios: number[]; readonly oneCpuPerReqUs: number; readonly everyCpuPerReqUs: number }
  readonly pollingError?: string
  /**
   * A whole day of meter values of every site handed to `reportMetering` at once, a few
   * times (the longest stall of the solver's loop over all of them), then GET realise of
   * that day and GET besoins-agreges in pairs of windows, rounds apart, the pair's order
   * alternated, on the same number of kept-alive connections: E's CPU per request of each,
   * and their ratio per round.
   */
  readonly metering?: {
    readonly readings: number; readonly runs: number; readonly wallMs: number; readonly cpuMs: number; readonly maxStallMs: number
    /** Each run's longest stall, and the 1-minute load average when each ran. */
    readonly stallsMs: number[]; readonly loadAvg: number[]
    /** Per round: realise's CPU per request ÷ besoins-agreges's. */
    readonly realiseRatios?: number[]
    readonly realiseCpuPerReqUs?: number; readonly besoinsCpuPerReqUs?: number; readonly realiseBytes?: number; readonly besoinsBytes?: number
  }
  readonly meteringError?: string
  readonly rss?: {
    readonly sites: number; readonly days: number; readonly seedWallMs: number; readonly gcExposed: boolean
    readonly rssBytes: number; readonly heapTotalBytes: number; readonly heapUsedBytes: number; readonly externalBytes: number; readonly arrayBuffersBytes: number
    /** Linux only: anonymous (heap, malloc) vs file-backed (LMDB's map) resident pages. */
    readonly rssAnonBytes?: number; readonly rssFileBytes?: number
    /** The same process right after start (10,000 sites managed, nothing stored yet). */
    readonly baseline?: { readonly rssBytes: number; readonly rssAnonBytes?: number; readonly rssFileBytes?: number; readonly heapUsedBytes: number }
    /**
     * A fresh E over the stored history, after one more daily publication: the steady
     * state of a daemon that has kept 30 days, without the allocator high-water mark left
     * by writing 30 days in half a minute. The target is read on this figure.
     */
    readonly restarted?: RssReading & {
      /**
       * The same process read again `SETTLE_MS` later: V8 gives back the young generation
       * (grown at the start, filled by the publication) once allocation has been low for a few seconds.
       */
      readonly settled?: RssReading
    }
    /**
     * A fresh E with `api.standbyWorker: false` over the same history, after one more daily
     * publication: what the door's warm standby costs, to weigh against its restart time
     * (bench/README.md "Latest results": restarts with and without it).
     */
    readonly noStandby?: RssReading
  }
  readonly rssError?: string
}

export interface SpecialsInput {
  /** Which of E's measurements to run (default all three). */
  readonly parts?: readonly Exclude<SpecialPart, 'ops'>[]
  readonly start: (env: Record<string, string>) => Child
  readonly load: Child
  readonly tls: { ca: string; cert: string; key: string }
  readonly quick: boolean
  readonly targetDate: string
  readonly emittedAt: string
  readonly clientSubject: string
  readonly dataDir: string
  readonly baseConfig: object
}

export interface RssReading { readonly rssBytes: number; readonly rssAnonBytes?: number; readonly rssFileBytes?: number; readonly heapUsedBytes: number }

/** How long after the publication the restarted process is read again (V8's memory reducer acts after ~6 s of low allocation). */
export const SETTLE_MS = 10_000

const reading = (m: Record<string, unknown>): RssReading => ({
  rssBytes: Number(m.rss), heapUsedBytes: Number(m.heapUsed),
  rssAnonBytes: m.rssAnon === undefined ? undefined : Number(m.rssAnon),
  rssFileBytes: m.rssFile === undefined ? undefined : Number(m.rssFile),
})

const mb = (r: RssReading) => (r.rssBytes / 2 ** 20).toFixed(0)

const msg = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0]!.slice(0, 300)

export async function measureSpecials (i: SpecialsInput): Promise<Specials> {
  const env = {
    BENCH_CONFIG: JSON.stringify(i.baseConfig),
    BENCH_E: JSON.stringify({ dataDir: i.dataDir, sites: PUBLICATION_SITES, clientSubject: i.clientSubject, publishSiteIds: [], targetDate: i.targetDate }),
  }
  const e = i.start(env)
  const out: { -readonly [K in keyof Specials]: Specials[K] } = {}
  /** A fresh E over the stored history, after one more daily publication (`targetDate`): its memory then, and `SETTLE_MS` later with `settle`. */
  const freshReading = async (childEnv: Record<string, string>, targetDate: string, settle: boolean): Promise<RssReading & { settled?: RssReading }> => {
    const child = i.start(childEnv)
    try {
      await child.next('ready', 120_000)
      const r = await child.ask({ type: 'publish', targetDate }, 'published', 300_000)
      if (Number(r.failed)) throw new Error(`the daily publication of ${targetDate} after a restart failed for ${String(r.failed)} sites`)
      const now = reading(await child.ask({ type: 'rss' }, 'rss', 30_000))
      if (!settle) return now
      await new Promise(resolve => setTimeout(resolve, SETTLE_MS))
      return { ...now, settled: reading(await child.ask({ type: 'rss' }, 'rss', 30_000)) }
    } finally {
      await child.stop()
    }
  }
  try {
    const ready = await e.next('ready', 120_000)
    const secrets = ready.secrets as { inbound: string; outbound: string; realise: string }
    /** One window of GETs on E: its CPU per answer (the door answers in its worker thread, where the harness's counter cannot hear: the load's count then). */
    const cpuPerAnswer = async (label: string, spec: RunSpec): Promise<{ us: number; bytes: number }> => {
      await i.load.ask(spec, 'warmed', 30_000)
      await e.ask({ type: 'start', label }, 'started', 10_000)
      const r = await i.load.ask({ type: 'go' }, 'result', 60_000) as unknown as LoadResult
      const w = await e.ask({ type: 'stop' }, 'window', 10_000)
      await i.load.ask({ type: 'close' }, 'closed', 15_000).catch(() => {})
      if (r.errors || Object.keys(r.unexpected).length) throw new Error(r.firstUnexpected ?? r.firstError ?? 'errors')
      return { us: (Number(w.cpuUserUs) + Number(w.cpuSystemUs)) / servedIn(w as { requests?: unknown }, r), bytes: r.bytesPerResponse }
    }
    const baseline = reading(await e.ask({ type: 'rss' }, 'rss', 30_000))
    const publish = async (targetDate: string, etags = false): Promise<PublicationRun & { firstFailure?: string; rssAnonMB: number; rssFileMB: number; etags?: Array<[string, string]> }> => {
      const r = await e.ask({ type: 'publish', targetDate, etags }, 'published', 300_000)
      return {
        ...(etags ? { etags: r.etags as Array<[string, string]> } : {}),
        rssAnonMB: Number(r.rssAnon) / 2 ** 20, rssFileMB: Number(r.rssFile) / 2 ** 20,
        wallMs: Number(r.wallMs), cpuMs: Number(r.cpuUs) / 1000, maxStallMs: Number(r.maxStallMs),
        published: Number(r.published), failed: Number(r.failed),
        firstFailure: r.firstFailure === undefined ? undefined : String(r.firstFailure),
      }
    }

    /**
     * GET 304 as a BSP polls: every site in turn, each with its ETag, against one site
     * polled again and again; paired windows, the order alternated, E's CPU per request.
     */
    const pollEverySite = async (etags: ReadonlyArray<[string, string]>): Promise<NonNullable<Specials['polling']>> => {
      const every = etags.map(([site, etag]) => ({ path: `${OUTBOUND_PATH}?site_id=${site}&target_date=${i.targetDate}`, etag }))
      if (every.length < PUBLICATION_SITES) throw new Error(`${every.length} sites published, not ${PUBLICATION_SITES}`)
      // The first pair warms up longer: the JIT settles on the paths a poller of every site takes.
      const cpuPer304 = async (label: string, targets: typeof every, first: boolean): Promise<number> => (await cpuPerAnswer(label, {
        type: 'run', origin: `https://127.0.0.1:${Number(ready.port)}`, tls: i.tls, connections: 8,
        method: 'GET', path: targets[0]!.path, headers: { authorization: `Bearer ${secrets.outbound}` }, expect: 304,
        warmupMs: (i.quick ? 300 : 1000) * (first ? 3 : 1), durationMs: i.quick ? 1000 : 2000, maxRequests: 3_000_000, targets,
      })).us
      const ratios: number[] = []
      const oneUs: number[] = []
      const everyUs: number[] = []
      for (let round = 0; round < (i.quick ? 1 : 3); round++) {
        const pair: Array<[string, () => Promise<number>]> = [
          ['one', () => cpuPer304('GET 304, one site', every.slice(0, 1), round === 0)],
          ['every', () => cpuPer304(`GET 304, ${every.length} sites in turn`, every, round === 0)],
        ]
        if (round % 2) pair.reverse()
        const got: Record<string, number> = {}
        for (const [name, run] of pair) got[name] = await run()
        ratios.push(got.every! / got.one!)
        oneUs.push(got.one!)
        everyUs.push(got.every!)
        process.stderr.write(`  GET 304 of ${every.length} sites in turn ${got.every!.toFixed(1)} µs of CPU per request, of one site ${got.one!.toFixed(1)} µs: ${ratios.at(-1)!.toFixed(2)} × (load ${loadavg()[0]!.toFixed(1)})\n`)
      }
      const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!
      return { sites: every.length, ratios, oneCpuPerReqUs: median(oneUs), everyCpuPerReqUs: median(everyUs) }
    }

    const parts: readonly string[] = i.parts ?? SPECIAL_PARTS
    const wanted = (p: SpecialPart) => parts.includes(p)
    // 1. Publication of every site for one day; republished a few times (each is a new revision).
    if (wanted('publication')) try {
      const runs: PublicationRun[] = []
      let firstFailure: string | undefined
      let etags: Array<[string, string]> = []
      for (let n = 0, times = i.quick ? 1 : 3; n < times; n++) {
        const r = await publish(i.targetDate, n === times - 1)
        etags = r.etags ?? []
        firstFailure ??= r.firstFailure
        runs.push({ wallMs: r.wallMs, cpuMs: r.cpuMs, maxStallMs: r.maxStallMs, published: r.published, failed: r.failed })
        process.stderr.write(`  publication of ${PUBLICATION_SITES} sites: ${r.wallMs.toFixed(0)} ms, longest stall ${r.maxStallMs.toFixed(1)} ms\n`)
      }
      out.publication = { sites: PUBLICATION_SITES, runs, firstFailure }
      if (!firstFailure) {
        try { out.polling = await pollEverySite(etags) } catch (err) { out.pollingError = msg(err) }
      }
    } catch (err) { out.publicationError = msg(err) }

    // 2. A 1,000-site programme (~8.7 MB) received while the event loop is watched.
    if (wanted('programme')) try {
      const body = programme(i.targetDate, LARGE_PROGRAMME_SITES, i.emittedAt).body
      const spec: RunSpec = {
        type: 'run', origin: `https://127.0.0.1:${Number(ready.port)}`, tls: i.tls, connections: 1,
        method: 'POST', path: INBOUND_PATH,
        headers: { authorization: `Bearer ${secrets.inbound}`, 'content-type': 'application/json' },
        body, expect: 202, warmupMs: 0, durationMs: 120_000, maxRequests: i.quick ? 1 : 3,
      }
      await i.load.ask(spec, 'warmed', 30_000)
      await e.ask({ type: 'start', label: `programme ${LARGE_PROGRAMME_SITES} sites` }, 'started', 10_000)
      const r = await i.load.ask({ type: 'go' }, 'result', 200_000) as unknown as LoadResult
      const w = await e.ask({ type: 'stop' }, 'window', 10_000)
      await i.load.ask({ type: 'close' }, 'closed', 15_000).catch(() => {})
      if (r.errors || Object.keys(r.unexpected).length) throw new Error(r.firstUnexpected ?? r.firstError ?? 'errors')
      out.largeProgramme = {
        sites: LARGE_PROGRAMME_SITES, bodyBytes: body.length, requests: r.requests,
        maxStallMs: Number(w.maxStallMs), p50Ms: r.p50Ms,
        cpuPerReqMs: (Number(w.cpuUserUs) + Number(w.cpuSystemUs)) / 1000 / Math.max(1, Number(w.requests)),
      }
      process.stderr.write(`  ${LARGE_PROGRAMME_SITES}-site programme: longest stall ${Number(w.maxStallMs).toFixed(1)} ms\n`)
    } catch (err) { out.largeProgrammeError = msg(err) }

    // 3. Meter values: a whole day of every site at once, then the realise GET against the besoins GET.
    if (wanted('metering')) try {
      const runs = i.quick ? 1 : 3
      const stallsMs: number[] = []
      const loads: number[] = []
      let m: Record<string, unknown> = {}
      let wallMs = 0
      let cpuMs = 0
      for (let n = 0; n < runs; n++) {
        loads.push(loadavg()[0]!)
        m = await e.ask({ type: 'metering' }, 'metered', 300_000)
        if (Number(m.accepted) !== Number(m.readings)) throw new Error(`${Number(m.readings) - Number(m.accepted)} readings refused`)
        stallsMs.push(Number(m.maxStallMs))
        wallMs = Math.max(wallMs, Number(m.wallMs))
        cpuMs = Math.max(cpuMs, Number(m.cpuUs) / 1000)
        process.stderr.write(`  ${Number(m.readings)} meter readings at once: ${Number(m.wallMs).toFixed(0)} ms, CPU ${(Number(m.cpuUs) / 1000).toFixed(0)} ms, longest stall ${Number(m.maxStallMs).toFixed(1)} ms (load ${loads.at(-1)!.toFixed(1)})\n`)
      }
      const metering: { -readonly [K in keyof NonNullable<Specials['metering']>]: NonNullable<Specials['metering']>[K] } = {
        readings: Number(m.readings), runs, wallMs, cpuMs, maxStallMs: Math.max(...stallsMs), stallsMs, loadAvg: loads,
      }
      out.metering = metering
      if (out.publication) {
        const site = 'PRM30000000000001'
        const cpuPerGet = (label: string, path: string, token: string) => cpuPerAnswer(label, {
          type: 'run', origin: `https://127.0.0.1:${Number(ready.port)}`, tls: i.tls, connections: 4,
          method: 'GET', path, headers: { authorization: `Bearer ${token}` }, expect: 200,
          warmupMs: i.quick ? 300 : 1000, durationMs: i.quick ? 1500 : 3000, maxRequests: 300_000,
        })
        // A Besoins_Agreges of the realise answer's size (bench/servers/epx.ts pads that site's).
        const besoinsPath = `${OUTBOUND_PATH}?site_id=${SAME_SIZE_SITE}&target_date=${i.targetDate}`
        const realisePath = `${REALISE_PATH}?site_id=${site}&target_date=${String(m.targetDate)}`
        const ratios: number[] = []
        const besoinsUs: number[] = []
        const realiseUs: number[] = []
        let bytes = { realise: 0, besoins: 0 }
        for (let round = 0; round < (i.quick ? 3 : 5); round++) {
          // Paired windows, the order alternated, so a drift of the machine weighs on both alike.
          const pair: Array<[string, () => Promise<{ us: number; bytes: number }>]> = [
            ['besoins', () => cpuPerGet('GET besoins-agreges', besoinsPath, secrets.outbound)],
            ['realise', () => cpuPerGet('GET realise', realisePath, secrets.realise)],
          ]
          if (round % 2) pair.reverse()
          const got: Record<string, { us: number; bytes: number }> = {}
          for (const [name, run] of pair) got[name] = await run()
          ratios.push(got.realise!.us / got.besoins!.us)
          besoinsUs.push(got.besoins!.us)
          realiseUs.push(got.realise!.us)
          bytes = { realise: got.realise!.bytes, besoins: got.besoins!.bytes }
          process.stderr.write(`  GET realise ${got.realise!.us.toFixed(0)} µs of CPU per request (${bytes.realise.toFixed(0)} B), GET besoins-agreges ${got.besoins!.us.toFixed(0)} µs (${bytes.besoins.toFixed(0)} B): ${ratios.at(-1)!.toFixed(2)} × (load ${loadavg()[0]!.toFixed(1)})\n`)
        }
        const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!
        Object.assign(metering, {
          realiseRatios: ratios, besoinsCpuPerReqUs: median(besoinsUs), realiseCpuPerReqUs: median(realiseUs),
          realiseBytes: bytes.realise, besoinsBytes: bytes.besoins,
        })
      }
    } catch (err) { out.meteringError = msg(err) }

    // 4. History: 30 target dates of every site, then resident memory after collections.
    if (wanted('rss')) try {
      const days = i.quick ? 3 : HISTORY_DAYS
      const t0 = performance.now()
      if (!out.publication) await publish(i.targetDate)
      for (let d = 1; d < days; d++) {
        const r = await publish(addDays(i.targetDate, d))
        if (process.env.BENCH_VERBOSE) process.stderr.write(`  day ${d + 1}: ${JSON.stringify(r)}\n`)
        if (r.failed) throw new Error(`publication of day ${d + 1} failed for ${r.failed} sites: ${r.firstFailure}`)
      }
      const seedWallMs = performance.now() - t0
      const m = await e.ask({ type: 'rss' }, 'rss', 30_000)
      out.rss = {
        sites: PUBLICATION_SITES, days, seedWallMs, gcExposed: Boolean(m.gcExposed), ...reading(m),
        heapTotalBytes: Number(m.heapTotal), externalBytes: Number(m.external), arrayBuffersBytes: Number(m.arrayBuffers),
        baseline,
      }
      process.stderr.write(`  RSS with ${PUBLICATION_SITES} sites × ${days} days, in the process that wrote them: ${mb(out.rss)} MB\n`)

      await e.stop()
      const restarted = await freshReading(env, addDays(i.targetDate, days), !i.quick)
      out.rss = { ...out.rss, restarted }
      process.stderr.write(`  RSS with ${PUBLICATION_SITES} sites × ${days} days, restarted, after one daily publication: ${mb(restarted)} MB` +
        (restarted.settled ? `, ${mb(restarted.settled)} MB ${SETTLE_MS / 1000} s later` : '') + '\n')
      if (!i.quick) {
        const noStandby = await freshReading({ ...env, BENCH_E_API: JSON.stringify({ standbyWorker: false }) }, addDays(i.targetDate, days + 1), false)
        out.rss = { ...out.rss, noStandby }
        process.stderr.write(`  the same without the door's standby: ${mb(noStandby)} MB\n`)
      }
    } catch (err) { out.rssError = msg(err) }
  } catch (err) {
    out.error = msg(err)
  } finally {
    await e.stop()
  }
  return out
}
