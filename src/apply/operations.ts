/**
 * What the running service records about itself, in one place: each event the doors and
 * the publisher report (a publication run, a dead token used) becomes an audit record
 * and metrics, a programme's counts become metrics (its records are written with it,
 * `programme-records.ts`); retention of everything that grows runs after each
 * publication run.
 * @module
 */
import type { Clock, Logger, PublishReport } from '../host/contract.ts'
import type { Audit, AuditActor, AuditEvent } from '../store/audit.ts'
import type { Deliveries } from '../store/deliveries.ts'
import type { Instructions } from '../store/instructions.ts'
import type { TokenRecord } from '../store/tokens.ts'
import type { RunRequest } from '../publish/publish-run.ts'
import { addDays, parisDateOf } from '../contract/paris-day.ts'
import { publicationRun } from './audit-events.ts'
import type { ProgrammeCount } from './programme-records.ts'
import type { Metering } from '../store/metering.ts'
import type { Events } from '../store/events.ts'
import type { Leadership } from '../store/leadership.ts'
import type { QuotaUses } from '../store/quota.ts'

/** What the service's events become in metrics: metrics/registry.ts answers it, the domain knows no registry. */
export interface OperationsMetrics {
  programme(accepted: boolean, company: string, sites: number, atMs: number): void
  infeasible(n: number): void
  publication(report: PublishReport, trigger: string, seconds: number, endMs: number): void
  rateLimited(company: string, door: string): void
  quotaExceeded(company: string): void
}

export interface OperationsDeps {
  readonly audit: Audit
  readonly metrics?: OperationsMetrics
  readonly instructions: Pick<Instructions, 'prune'>
  readonly deliveries: Pick<Deliveries, 'prune'>
  /** Meter values: kept as long as the instructions they are compared with. */
  readonly metering?: Pick<Metering, 'prune'>
  /** Each company's bytes accepted per day (the storage quota): kept as long as the instructions. */
  readonly quota?: Pick<QuotaUses, 'prune'>
  /** The companies' events, kept `events.retentionDays` (their own, counted from when written). */
  readonly events?: Pick<Events, 'prune'>
  readonly retentionDays: { readonly instructions: number; readonly deliveries: number }
  /** Retention runs only while this says so: instances sharing a store leave it to their leader (default: always). */
  readonly leads?: () => boolean
  /** The leadership's fence (store/leadership.ts): retention of a leader deposed meanwhile removes nothing (default: unfenced). */
  readonly fenced?: Leadership['fenced']
  readonly clock: Clock
  readonly log: Logger
}

/** A dead token presented again within this time is not recorded again (a BSP retrying in a loop). */
const DEAD_TOKEN_QUIET_MS = 3_600_000

export function createOperations (deps: OperationsDeps) {
  const { audit, metrics, clock, log } = deps
  const pending = new Set<Promise<unknown>>()
  const track = (p: Promise<unknown>) => {
    const settled = p.catch(() => {}).finally(() => pending.delete(settled))
    pending.add(settled)
  }
  const deadTokens = new Map<string, number>()
  /** Per company and kind, the hour (ms since the epoch / 1 h) of its last audited refusal. */
  const rateLimitedHours = new Map<string, number>()
  /** Per company, the hour of its last audited refusal over the storage quota. */
  const quotaHours = new Map<string, number>()
  /** Audits the event at the first call for `key` in each hour (`hours` keeps the last), not at every call; `hour` is its start. */
  const auditHourly = (hours: Map<string, number>, key: string, nowMs: number, event: (hour: string) => AuditEvent): void => {
    const hour = Math.floor(nowMs / 3_600_000)
    if (hours.get(key) === hour) return
    hours.set(key, hour)
    audit.record(event(new Date(hour * 3_600_000).toISOString()), nowMs)
  }
  /** The last scheduled run: readiness wants it to have published every site. */
  let lastScheduled: { ok: boolean; targetDate: string } | undefined

  const ops = {
    programmeCounted (c: ProgrammeCount): void {
      if (!metrics) return
      metrics.programme(c.accepted, c.companyId, c.accepted ? c.sites : 0, c.atMs)
      if (c.accepted && c.flagged) metrics.infeasible(c.flagged)
    },

    publication (report: PublishReport, request: RunRequest, durationMs: number): void {
      const trigger = request.trigger ?? 'host'
      const actor: AuditActor = trigger === 'schedule' ? { kind: 'schedule' }
        : trigger === 'console' && request.user ? { kind: 'console', user: request.user }
          : { kind: 'host' }
      const endMs = clock.now().getTime()
      audit.record(publicationRun(report, actor, durationMs), endMs)
      metrics?.publication(report, trigger, durationMs / 1000, endMs)
      // A scheduled run refused because this instance was deposed meanwhile is the new leader's to make.
      if (trigger === 'schedule' && (!deps.leads || deps.leads())) lastScheduled = { ok: report.failed.length === 0, targetDate: report.targetDate }
      ops.retentionInBackground()
    },

    deadToken (token: TokenRecord, reason: 'revoked' | 'expired', nowMs: number): void {
      const key = `${token.id}/${reason}`
      const last = deadTokens.get(key)
      if (last !== undefined && nowMs - last < DEAD_TOKEN_QUIET_MS) return
      if (deadTokens.size > 10_000) deadTokens.clear()
      deadTokens.set(key, nowMs)
      audit.record({
        actor: { kind: 'company', companyId: token.companyId, tokenId: token.id },
        action: 'token.refused',
        subject: token.id,
        outcome: `refused 401 ${reason}`,
        details: { reason, ...(reason === 'revoked' ? { revokedAt: token.revokedAt } : { expiresAt: token.expiresAt }) },
      }, nowMs)
    },

    /**
     * A request refused 429 RATE_LIMITED: counted, and audited at a company's first
     * refusal of its kind (GET, POST) in each hour, not once per refused request.
     */
    rateLimited (companyId: string, door: string, kind: 'get' | 'post', nowMs: number): void {
      metrics?.rateLimited(companyId, door)
      auditHourly(rateLimitedHours, `${companyId}/${kind}`, nowMs, hour => ({
        actor: { kind: 'company', companyId },
        action: 'company.rate-limited',
        subject: companyId,
        outcome: `refused 429 ${kind.toUpperCase()}`,
        details: { door, kind, hour },
      }))
    },

    /**
     * A programme refused 429 QUOTA_EXCEEDED (before its body or at its save): counted, and
     * audited at a company's first refusal in each hour, as a request over its budget is.
     */
    quotaExceeded (companyId: string, nowMs: number): void {
      metrics?.quotaExceeded(companyId)
      auditHourly(quotaHours, companyId, nowMs, hour => ({
        actor: { kind: 'company', companyId },
        action: 'company.quota-exceeded',
        subject: companyId,
        outcome: 'refused 429 QUOTA_EXCEEDED',
        details: { hour },
      }))
    },

    /** Why the service is not ready for publication, or undefined. */
    publicationProblem (): string | undefined {
      if (lastScheduled && !lastScheduled.ok) return `the last scheduled publication (${lastScheduled.targetDate}) left sites unpublished`
      return undefined
    },

    /** Removes audit records, instructions and receipts past their retention, on the leading instance. Never rejects. */
    async retention (): Promise<void> {
      if (deps.leads && !deps.leads()) return
      const now = clock.now()
      const today = parisDateOf(now)
      const fenced = deps.fenced ?? (run => run())
      try {
        await fenced(async () => {
          const audited = await audit.prune(now.getTime())
          const before = addDays(today, -deps.retentionDays.instructions)
          const instructions = await deps.instructions.prune(before)
          const receipts = await deps.deliveries.prune(addDays(today, -deps.retentionDays.deliveries))
          const meterDays = await deps.metering?.prune(before) ?? 0
          const quotaDays = await deps.quota?.prune(before) ?? 0
          const events = await deps.events?.prune(now.getTime()) ?? 0
          if (audited || instructions || receipts || meterDays || quotaDays || events) {
            log.info({ audited, instructions, receipts, meterDays, quotaDays, events }, 'expired audit records, instructions, delivery receipts, meter values, quota counts and events removed')
          }
        })
      } catch (err) {
        if (deps.leads && !deps.leads()) log.info({}, 'retention stopped: this instance no longer leads')
        else log.warn({ reason: (err as Error).message }, 'retention could not run; the next publication run retries')
      }
    },

    /** Runs retention without waiting for it (close() does). */
    retentionInBackground (): void {
      track(ops.retention())
    },

    /** Resolves once the retention runs started so far have ended and the audit records are written (close()). */
    async settle (): Promise<void> {
      while (pending.size) await Promise.all(pending)
      await audit.flush().catch(() => {})
    },
  }
  return ops
}
export type Operations = ReturnType<typeof createOperations>
