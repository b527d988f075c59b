/**
 * What each state change of the running service writes to the audit trail
 * (`store/audit.ts`): the facts an operator needs to answer a BSP ("we sent it at
 * 12:29", "your file was stale"), ids and counts only, never a secret.
 * @module
 */
import type { Caller } from '../auth/caller.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import type { PublishReport } from '../host/contract.ts'
import type { AuditActor, AuditEvent } from '../store/audit.ts'
import { isEpxError } from '../errors.ts'

/** Sites or details listed in one record; the rest are counted (the instructions store has them all). */
const MAX_LISTED = 100
const MAX_DETAILS = 5

export function companyActor (caller: Pick<Caller, 'companyId' | 'tokenId'>): AuditActor {
  return { kind: 'company', companyId: caller.companyId, tokenId: caller.tokenId }
}

/** A programme persisted and acknowledged with a 202. */
export function programmeAccepted (batch: InstructionBatch, caller: Caller, bytes: number): AuditEvent {
  return {
    actor: companyActor(caller),
    action: 'programme.accepted',
    subject: batch.instructionId,
    outcome: 'ok',
    details: {
      targetDate: batch.targetDate,
      emittedAt: batch.emittedAt,
      sites: batch.siteIds.length,
      siteIds: batch.siteIds.slice(0, MAX_LISTED),
      bytes,
      certFingerprint256: caller.certFingerprint256,
    },
  }
}

/** A programme refused after authentication (400, 413, 415, 503): status, code and the first details. */
export function programmeRejected (caller: Caller, err: unknown): AuditEvent {
  const known = isEpxError(err)
  const status = known ? err.status : 500
  const code = known ? err.code : 'INTERNAL'
  const details = Object.entries((known && err.details) || {}).slice(0, MAX_DETAILS)
  return {
    actor: companyActor(caller),
    action: 'programme.rejected',
    subject: 'programme-soutirage',
    outcome: `refused ${status} ${code}`,
    details: { status, code, ...(details.length ? { details: Object.fromEntries(details) } : {}) },
  }
}

/** One publication run: what was published and what failed. */
export function publicationRun (report: PublishReport, actor: AuditActor, durationMs: number): AuditEvent {
  const failed = report.failed.length
  return {
    actor,
    action: 'publication.run',
    subject: report.targetDate,
    outcome: failed === 0 ? 'ok' : report.published.length === 0 ? 'failed' : 'partial',
    details: {
      published: report.published.length,
      failed,
      durationMs: Math.round(durationMs),
      ...(failed ? { failedSites: report.failed.slice(0, MAX_LISTED).map(f => ({ siteId: f.siteId, reason: f.reason })) } : {}),
    },
  }
}
