/**
 * The successful reads of the doors, accounted for in a periodic summary instead of a log
 * line each (`api.logReads: "summary"`, the default; docs/operating.md "What is logged
 * where"). A BSP polling 10,000 sites at 08:30 would otherwise write 10,000 lines that say
 * only "200" and "304", each costing the solver's thread its handling
 * (bench/README.md#where-the-doors-thread-spends-a-get). Every refusal, every failure and every POST keeps its own line; which
 * site each token fetched, and when, is in the delivery receipts (`epx deliveries`).
 * @module
 */
import type { Logger } from '../host/contract.ts'

/** One line of the summary: a company's successful reads of one route with one status. */
interface Tally {
  readonly companyId: string
  readonly route: string
  readonly status: number
  count: number
  totalMs: number
  maxMs: number
}

export interface ReadSummary {
  /** A successful read (GET or HEAD answered 200 or 304) of a known caller. */
  count (companyId: string, route: string, status: number, durationMs: number): void
  /** Writes what was counted since the last line (one line per company, route and status). */
  flush (): void
  /** Stops the timer after a last flush. */
  close (): void
}

/** A read the summary takes instead of a line of its own. */
export function isSummarizedRead (method: string, status: number | undefined): boolean {
  return (status === 200 || status === 304) && (method === 'GET' || method === 'HEAD')
}

export function createReadSummary (log: Logger, intervalSeconds: number, now: () => number): ReadSummary {
  // Per company, its few (route, status) tallies: found by comparing what the request
  // already holds, with no key text made per read.
  const tallies = new Map<string, Tally[]>()
  let since = now()
  const flush = () => {
    if (tallies.size === 0) { since = now(); return }
    const fromUtc = new Date(since).toISOString()
    const untilUtc = new Date(since = now()).toISOString()
    for (const t of [...tallies.values()].flat()) {
      log.info({
        companyId: t.companyId, route: t.route, status: t.status, count: t.count,
        meanMs: Math.round(t.totalMs / t.count * 10) / 10, maxMs: t.maxMs, fromUtc, untilUtc,
      }, 'api reads')
    }
    tallies.clear()
  }
  const timer = setInterval(flush, intervalSeconds * 1000)
  timer.unref()
  return {
    count (companyId, route, status, durationMs) {
      let ofCompany = tallies.get(companyId)
      if (ofCompany === undefined) tallies.set(companyId, ofCompany = [])
      let t: Tally | undefined
      for (const x of ofCompany) if (x.route === route && x.status === status) { t = x; break }
      if (t === undefined) ofCompany.push(t = { companyId, route, status, count: 0, totalMs: 0, maxMs: 0 })
      t.count++
      t.totalMs += durationMs
      if (durationMs > t.maxMs) t.maxMs = durationMs
    },
    flush,
    close () {
      clearInterval(timer)
      flush()
    },
  }
}
