/**
 * The inbound use case, as the contract tells it (§4.2): a validated programme is
 * persisted, one instruction per site, atomically and durably; its effective
 * instructions are handed to the solver's next cycle; the receipt says so.
 * @module
 */
import type { InstructionBatch } from '../contract/instruction.ts'
import type { Receipt } from '../contract/compiled.ts'
import type { Instructions } from '../store/instructions.ts'
import type { Enqueuer } from './enqueue.ts'

export interface ReceiveDeps {
  readonly instructions: Instructions
  readonly enqueuer: Enqueuer
}

/**
 * Rejects with NO_STORE (nothing written) when the store fails; resolves only once
 * every instruction is on disk (DECISIONS.md "Robustness": a 202 survives a crash).
 */
export async function receiveProgramme (batch: InstructionBatch, receivedAt: string, deps: ReceiveDeps): Promise<Receipt> {
  // Superseded ones (an older emitted_at than the effective one) are stored, not fed.
  // The effective ones are saved as `queued` (one write, not two): they reach the
  // solver's queue right after this commit, in this process.
  const effective = await deps.instructions.save(batch, receivedAt, 'queued')
  await deps.enqueuer.enqueueBatch(batch, effective, 'queued')
  return receiptOf(batch)
}

function receiptOf (batch: InstructionBatch): Receipt {
  const n = batch.siteIds.length
  const instructions = new Array<Receipt['instructions'][number]>(n)
  for (let i = 0; i < n; i++) {
    instructions[i] = {
      instruction_id: batch.instructionId,
      site_id: batch.siteIds[i]!,
      periods_count: batch.slotEnds[i]! - (i === 0 ? 0 : batch.slotEnds[i - 1]!),
    }
  }
  return {
    status: 'received',
    count: n,
    instructions,
    message: `${n} instruction(s) persisted; they will be applied at the next solver cycle`,
  }
}
