/**
 * What epx keeps of each programme that passed authentication (docs/operating.md), written where
 * it costs least. An accepted programme's audit record and feasibility flags go in the
 * very transaction that saves its instructions: one commit and one flush per POST, not
 * three, and a 202 means all of it is on disk. A refused one has no save to ride: its
 * audit record joins the next group commit. The warn line and the counts follow once
 * the save has landed (a company's flagged programmes: one full warn line a minute, the
 * rest summed up).
 * @module
 */
import type { Caller } from '../auth/caller.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import type { Logger } from '../host/contract.ts'
import type { Audit } from '../store/audit.ts'
import type { InstructionFlags } from '../store/instruction-flags.ts'
import { programmeAccepted, programmeRejected } from './audit-events.ts'
import { flaggedWarnings, flagsOf, type FeasibilityDeps } from './feasibility.ts'

/** A programme's fate in numbers (the metrics; the door's worker sends it to the main thread). */
export type ProgrammeCount =
  | { readonly accepted: true; readonly companyId: string; readonly sites: number; readonly flagged: number; readonly atMs: number }
  | { readonly accepted: false; readonly companyId: string; readonly atMs: number }

/** What an accepted programme's save carries, and what follows its commit. */
export interface AcceptedRecords {
  /** Runs inside the save's transaction (`Instructions.save`'s `alongside`). */
  readonly write: () => void
  /** After the commit: the warn line of flagged instructions, the counts. */
  landed(): void
}

export interface ProgrammeRecords {
  /** Before the save: checks the batch against the needs and prepares its records. */
  accepting(batch: InstructionBatch, caller: Caller, bytes: number, at: Date): Promise<AcceptedRecords>
  /** A programme refused (400, 413, 415, 503): audited, counted. */
  refused(caller: Caller, error: unknown, at: Date): void
  /** Logs the warn summaries still waiting (`feasibility.ts`). */
  close(): void
}

export interface ProgrammeRecordsDeps {
  readonly audit: Pick<Audit, 'appendSync' | 'record'>
  readonly flags: Pick<InstructionFlags, 'putSync'>
  readonly feasibility: FeasibilityDeps
  readonly log: Logger
  readonly counted?: (count: ProgrammeCount) => void
}

export function programmeRecords (deps: ProgrammeRecordsDeps): ProgrammeRecords {
  const { audit, flags, log, counted } = deps
  const warnings = flaggedWarnings(log)
  return {
    async accepting (batch, caller, bytes, at) {
      const atMs = at.getTime()
      const flagged = await flagsOf(batch, deps.feasibility, log)
      const event = programmeAccepted(batch, caller, bytes)
      return {
        write () {
          audit.appendSync(event, atMs)
          if (flagged.length) flags.putSync(batch.instructionId, flagged)
        },
        landed () {
          warnings.warn(batch, flagged, caller.companyId, atMs)
          counted?.({ accepted: true, companyId: caller.companyId, sites: batch.siteIds.length, flagged: flagged.length, atMs })
        },
      }
    },
    refused (caller, error, at) {
      const atMs = at.getTime()
      audit.record(programmeRejected(caller, error), atMs)
      counted?.({ accepted: false, companyId: caller.companyId, atMs })
    },
    close: () => warnings.flush(),
  }
}
