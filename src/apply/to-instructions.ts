/**
 * A validated Programme_Soutirage → its instructions, one per site, as a compact batch
 * (wire names in, internal records out: the one place this direction is converted).
 * @module
 */
import { deriveInstructionId } from '../contract/ids.ts'
import { formatUtcInstant, type Instant } from '../contract/instants.ts'
import { encodeInstructionRecords, type InstructionBatch, type Provenance } from '../contract/instruction.ts'
import type { ProgrammeSoutirage } from '../contract/programme-soutirage.ts'
import type { CheckedSlots } from '../contract/programme-rules.ts'

/** Transferable buffers of a batch (for `postMessage`), each once: the slots' starts and energies share one. */
export function batchTransferList (b: InstructionBatch): ArrayBuffer[] {
  return [...new Set([b.records.buffer, b.recordEnds.buffer, b.starts.buffer, b.kwh.buffer, b.slotEnds.buffer] as ArrayBuffer[])]
}

/** The last id made: a BSP re-sends, several connections send the same programme. */
let last = { targetDate: '', ms: NaN, nanos: NaN, instructionId: '', emittedAt: '' }

function idOf (targetDate: string, at: Instant): { instructionId: string; emittedAt: string } {
  if (last.targetDate !== targetDate || last.ms !== at.ms || last.nanos !== at.nanos) {
    last = { targetDate, ms: at.ms, nanos: at.nanos, instructionId: deriveInstructionId(targetDate, at), emittedAt: formatUtcInstant(at.ms, at.nanos) }
  }
  return last
}

export function toInstructionBatch (p: ProgrammeSoutirage, slots: CheckedSlots, from: Provenance): InstructionBatch {
  // DECISIONS.md "Inbound": the id derives from the parsed instant, at the precision
  // sent, so two spellings of the same emitted_at give the same instruction (and the
  // stored emitted_at is its canonical spelling).
  const { instructionId, emittedAt } = idOf(p.target_date, slots.emittedAt)
  const { records, recordEnds } = encodeInstructionRecords({
    instructionId,
    targetDate: p.target_date,
    emittedAt,
    emittedBy: p.emitted_by,
    receivedAt: from.receivedAt,
    companyId: from.companyId,
    tokenId: from.tokenId,
    certFingerprint256: from.certFingerprint256,
    slotDurationSecs: p.slot_duration_secs,
  }, p.sites.map(namesOf), slots.starts, slots.kwh, slots.slotEnds)
  return {
    instructionId,
    targetDate: p.target_date,
    emittedAt,
    emittedAtMs: slots.emittedAt.ms,
    emittedAtNanos: slots.emittedAt.nanos,
    slotDurationSecs: p.slot_duration_secs,
    siteIds: p.sites.map(idOfSite),
    records,
    recordEnds,
    starts: slots.starts,
    kwh: slots.kwh,
    slotEnds: slots.slotEnds,
  }
}

// Functions of the module, not arrows made per call: a closure made per POST is compiled
// again and again (bench/README.md#closures-made-per-request).
type Site = ProgrammeSoutirage['sites'][number]
function namesOf (s: Site): { siteId: string; siteName: string } { return { siteId: s.site_id, siteName: s.site_name ?? '' } }
function idOfSite (s: Site): string { return s.site_id }
