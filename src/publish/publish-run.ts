/**
 * One publication run: every site the solver manages (or the requested ones) for one
 * target date. A site's failure never stops the others; failed sites are retried;
 * runs never overlap (DECISIONS.md "Besoins_Agreges publication"). The solver shares
 * this event loop, so work goes in chunks with a yield in between (bench/README.md#targets: 10,000
 * sites in ≤ 1.5 s, no stall over 50 ms).
 * @module
 */
import type { Clock, Logger, PublishReport, Site, SolverPort } from '../host/contract.ts'
import { EpxError } from '../errors.ts'
import { coverageOf, isCalendarDate } from '../contract/paris-day.ts'
import { isPrm } from '../contract/ids.ts'
import { serializeBesoinsAgreges } from '../contract/besoins-agreges.ts'
import type { RevisionDraft, RevisionMeta, Revisions, StagedRevision } from '../store/revisions.ts'
import { besoinsOf, checkNeeds, slotBoundaries, withEmittedAt } from './build-besoins.ts'
import type { Leadership } from '../store/leadership.ts'

export interface PublisherOptions {
  readonly solver: SolverPort
  readonly revisions: Revisions
  readonly clock: Clock
  readonly log: Logger
  readonly emittedBy: string
  /** Sites rendered per chunk, then a yield. */
  readonly chunkSize?: number
  /** Sites per transaction (default 1,000): a few large commits per run (see `Revisions.commit`), each short enough to keep the event-loop stall of a 10,000-site run near 25 ms. */
  readonly commitSize?: number
  /** Extra attempts for failed sites (default 2), after `retryDelayMs × attempt`. */
  readonly retries?: number
  readonly retryDelayMs?: number
  /** A site whose needs take longer fails for this attempt (default 30 s). */
  readonly needsTimeoutMs?: number
  /** Told once per run, when it ends (plugin.ts: audit trail, metrics, retention). */
  readonly onRun?: (report: PublishReport, request: RunRequest, durationMs: number) => void
  /** Revision retention follows a run only while this says so: instances sharing a store leave it to their leader (default: always). */
  readonly leads?: () => boolean
  /** The leadership's fence (store/leadership.ts): retention commits only while this instance still leads (default: unfenced). */
  readonly fenced?: Leadership['fenced']
}

export interface RunRequest {
  readonly targetDate: string
  /** Default: every site the solver manages. */
  readonly siteIds?: readonly string[]
  /** Who asked (audit and metrics); a request that joins a run takes the run's. */
  readonly trigger?: 'schedule' | 'host' | 'cli' | 'console'
  /** The console user who clicked "Publier maintenant" (trigger `console`): the audit record's actor. */
  readonly user?: string
}

export interface Publisher {
  /** Runs now, or after the run in progress; an identical request joins a queued or running one. */
  publish(request: RunRequest): Promise<PublishReport>
  /** Resolves once nothing runs or waits; refuses new runs afterwards. */
  close(): Promise<void>
}

const DEFAULTS = { chunkSize: 64, commitSize: 1000, retries: 2, retryDelayMs: 1000, needsTimeoutMs: 30_000 }
/** Commits that may still be in progress while the next chunks are built. */
const MAX_WRITES_IN_FLIGHT = 2
/** Failed sites logged one by one, then only counted (a dead solver must not flood the log). */
const MAX_LOGGED_FAILURES = 20

type Failure = { site: Site; reason: string }

export function createPublisher (opts: PublisherOptions): Publisher {
  const o = { ...DEFAULTS, ...stripUndefined(opts) }
  let tail: Promise<unknown> = Promise.resolve()
  let running: { key: string; promise: Promise<PublishReport> } | undefined
  const queued = new Map<string, Promise<PublishReport>>()
  let closed = false

  async function runOnce (req: RunRequest): Promise<PublishReport> {
    const started = performance.now()
    const coverage = coverageOf(req.targetDate)
    // async: a solver that throws synchronously fails its site, not the chunk.
    const needsOf = async (site: Site) => o.solver.needs(site.site_id, coverage)
    const boundaries = slotBoundaries(coverage)
    const managed = await o.solver.sites()
    const failed: Array<{ siteId: string; reason: string }> = []
    let targets: Site[]
    if (req.siteIds) {
      const byId = new Map(managed.map(s => [s.site_id, s]))
      targets = []
      for (const id of new Set(req.siteIds)) {
        const site = byId.get(id)
        if (site) targets.push(site)
        else failed.push({ siteId: id, reason: 'not a site the solver manages' })
      }
    } else {
      targets = [...managed]
    }

    const published: RevisionMeta[] = []
    let pending = targets
    let failures: Failure[] = []
    for (let attempt = 0; pending.length && attempt <= o.retries; attempt++) {
      if (attempt > 0) {
        o.log.warn({ targetDate: req.targetDate, sites: pending.length, attempt }, 'retrying sites whose publication failed')
        await delay(o.retryDelayMs * attempt)
      }
      failures = []
      const writes = new Set<Promise<void>>()
      let batch: Array<StagedRevision & { site: Site }> = []
      const commit = async () => {
        const staged = batch
        batch = []
        const w: Promise<void> = o.revisions.commit(staged, o.clock.now().getTime()).then(
          metas => { published.push(...metas) },
          (err: unknown) => { for (const s of staged) failures.push({ site: s.site, reason: reasonOf(err) }) },
        ).finally(() => { writes.delete(w) })
        writes.add(w)
        if (writes.size >= MAX_WRITES_IN_FLIGHT) await Promise.race(writes)
      }
      for (let i = 0; i < pending.length; i += o.chunkSize) {
        const chunk = pending.slice(i, i + o.chunkSize)
        const drafts: Array<RevisionDraft & { site: Site }> = []
        const needs = await Promise.allSettled(chunk.map(site => withTimeout(needsOf(site), o.needsTimeoutMs)))
        needs.forEach((r, k) => {
          const site = chunk[k]!
          if (r.status === 'rejected') { failures.push({ site, reason: reasonOf(r.reason) }); return }
          try {
            // What the document is made from, not the document: it exists only while rendered.
            const checked = checkNeeds(site, r.value, coverage)
            drafts.push({
              site, siteId: site.site_id, targetDate: req.targetDate,
              render: emittedAt => serializeBesoinsAgreges(withEmittedAt(besoinsOf(checked, coverage, o.emittedBy, boundaries), emittedAt)),
            })
          } catch (err) {
            failures.push({ site, reason: reasonOf(err) })
          }
        })
        if (drafts.length) {
          try {
            const staged = o.revisions.stage(drafts, o.clock.now().getTime())
            staged.forEach((s, k) => batch.push({ ...s, site: drafts[k]!.site }))
          } catch (err) {
            for (const d of drafts) failures.push({ site: d.site, reason: reasonOf(err) })
          }
        }
        if (batch.length >= o.commitSize) await commit()
        await yieldToLoop()
      }
      if (batch.length) await commit()
      await Promise.all(writes)
      pending = failures.map(f => f.site)
    }
    failures.forEach((f, n) => {
      if (n < MAX_LOGGED_FAILURES) o.log.error({ siteId: f.site.site_id, targetDate: req.targetDate, reason: f.reason }, 'site not published')
    })
    failed.push(...failures.map(f => ({ siteId: f.site.site_id, reason: f.reason })))
    const report: PublishReport = {
      targetDate: req.targetDate,
      published: published.map(m => ({ siteId: m.siteId, emittedAt: m.emittedAt, etag: m.etag })),
      failed,
    }
    o.log.info({
      targetDate: req.targetDate, published: report.published.length, failed: failed.length,
      durationMs: Math.round(performance.now() - started),
    }, 'Besoins_Agreges publication run')
    o.onRun?.(report, req, performance.now() - started)
    // Retention rides on publication runs, so it also happens when schedules are off.
    if (o.leads && !o.leads()) return report
    try {
      const fenced = o.fenced ?? (run => run())
      const pruned = await fenced(async () => o.revisions.prune(o.clock.now().getTime()))
      if (pruned) o.log.info({ pruned }, 'expired Besoins_Agreges revisions removed')
    } catch (err) {
      o.log.warn({ reason: reasonOf(err) }, 'revision retention could not run; next run retries')
    }
    return report
  }

  return {
    publish (req) {
      if (closed) return Promise.reject(new EpxError('NO_STORE'))
      if (!isCalendarDate(req.targetDate)) {
        return Promise.reject(new EpxError('EPX_USAGE', [`target date must be a calendar date YYYY-MM-DD, got '${String(req.targetDate)}'`]))
      }
      const bad = req.siteIds?.find(id => !isPrm(id))
      if (bad !== undefined) return Promise.reject(new EpxError('EPX_USAGE', [`site id must be PRM followed by 14 digits, got '${String(bad)}'`]))
      const key = runKey(req)
      // Runs never overlap: a run starts when the previous one ended. A request for
      // exactly what is already waiting or running (the Friday daily and weekend
      // schedules both want Saturday) joins it instead of publishing twice.
      if (running?.key === key) return running.promise
      const waiting = queued.get(key)
      if (waiting) return waiting
      const promise = tail.then(() => {
        queued.delete(key)
        const p = runOnce(req)
        running = { key, promise: p }
        return p
      }).finally(() => { if (running?.key === key) running = undefined })
      queued.set(key, promise)
      tail = promise.catch(() => {})
      return promise
    },
    async close () {
      closed = true
      await tail
    },
  }
}

/** Same date and same set of sites (or all of them) → same run. */
function runKey (req: RunRequest): string {
  return req.siteIds ? `${req.targetDate}|${[...new Set(req.siteIds)].sort().join(',')}` : `${req.targetDate}|*`
}

function withTimeout<T> (p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`solver gave no needs within ${ms} ms`)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

function reasonOf (err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  return message.slice(0, 300)
}

const yieldToLoop = () => new Promise<void>(resolve => setImmediate(resolve))
const delay = (ms: number) => new Promise<void>(resolve => setTimeout(resolve, ms))

function stripUndefined<T extends object> (o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T
}
