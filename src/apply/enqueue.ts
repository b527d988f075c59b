/**
 * Instructions → the solver (DECISIONS.md "Inbound"): effective instructions go into the
 * host's next-cycle queue right after their commit (status `queued`); the cycle's
 * acknowledgement makes them `applied` with its number; on activation every effective
 * instruction whose day is not over is queued again, so a solver restart loses nothing.
 * @module
 */
import type { Clock, Logger, SolverInput, SolverPort } from '../host/contract.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import { slotRange } from '../contract/instruction.ts'
import { parisDateOf } from '../contract/paris-day.ts'
import type { InstructionRef, Instructions } from '../store/instructions.ts'
import { instructionPeriods, periodsOf } from './to-constraints.ts'

/** Sites converted per event-loop turn: ~100 periods objects each; the solver shares the loop. */
const SITES_PER_TURN = 64
/** How long `queued` statuses wait to share one write (a cycle's acknowledgement flushes them first). */
const QUEUED_WRITE_DELAY_MS = 20

export interface EnqueueDeps {
  readonly solver: SolverPort
  readonly instructions: Instructions
  readonly clock: Clock
  readonly log: Logger
}

export interface Enqueuer {
  /**
   * Queues the sites of a saved batch that are (still) effective; resolves once all are
   * queued. `savedAs` is the status the save wrote for them: `queued` needs no second
   * write (only a refusal by the solver writes `received` back).
   */
  enqueueBatch(batch: InstructionBatch, effective: readonly boolean[], savedAs?: 'received' | 'queued'): Promise<void>
  /** Queues again every effective instruction whose Paris day is not over; resolves to their count. */
  requeueEffective(): Promise<number>
  /** Stops listening to the solver's cycles, writes pending statuses and resolves once every status write has settled. */
  close(): Promise<void>
}

export function createEnqueuer (deps: EnqueueDeps): Enqueuer {
  const { solver, instructions, clock, log } = deps
  const warn = (what: string) => (err: unknown) => log.warn({ err, code: (err as { code?: string })?.code }, what)
  /** Status writes not yet settled: close() waits for them (README "Guarantees"). */
  const pending = new Set<Promise<void>>()
  const track = (write: Promise<void>, what: string): void => {
    const settled = write.catch(warn(what)).finally(() => pending.delete(settled))
    pending.add(settled)
  }

  const unsubscribe = solver.onCycleApplied(report => {
    if (report.inputs.length === 0) return
    flushQueued()   // writes are ordered: `queued` lands before this `applied`
    track(instructions.markApplied(report.inputs, report.cycle, report.at), 'could not mark instructions applied')
  })

  /**
   * Hands one turn's inputs to the solver and marks them queued, soon and always before
   * any cycle's `applied` for them. The status write is not awaited: losing `queued` to
   * a crash loses nothing, the next activation queues them again.
   */
  const hand = (inputs: SolverInput[], marked = false): void => {
    if (inputs.length === 0) return
    try {
      solver.enqueueNextCycle(inputs)
    } catch (err) {
      // The instructions are durable: answer 202 all the same; they stay (or go back to)
      // `received` and the next activation queues them again.
      log.error({ err, count: inputs.length }, 'the solver refused the next-cycle inputs')
      if (marked) {
        track(instructions.unqueue(inputs.map(i => ({ instructionId: i.instructionId, siteId: i.siteId })), clock.now().toISOString()),
          'could not mark refused instructions received')
      }
      return
    }
    if (marked) return
    for (const i of inputs) queued.push({ instructionId: i.instructionId, siteId: i.siteId })
    timer ??= setTimeout(flushQueued, QUEUED_WRITE_DELAY_MS).unref()
  }
  // Every LMDB commit costs lmdb-js a native write job: the `queued` statuses of all the
  // programmes handed over within a few milliseconds share one.
  let queued: InstructionRef[] = []
  let timer: NodeJS.Timeout | undefined
  const flushQueued = () => {
    if (timer) clearTimeout(timer)
    timer = undefined
    if (queued.length === 0) return
    const refs = queued
    queued = []
    track(instructions.markQueued(refs, clock.now().toISOString()), 'could not mark instructions queued')
  }

  /**
   * Still effective now? A newer programme may have committed while we yielded. When
   * the store cannot say, the caller's own answer (the commit's) stands.
   */
  const isEffective = (targetDate: string, siteId: string, instructionId: string, fallback: boolean): boolean => {
    try {
      return instructions.effectiveId(targetDate, siteId) === instructionId
    } catch {
      return fallback
    }
  }

  return {
    async enqueueBatch (batch, effective, savedAs = 'received') {
      const n = batch.siteIds.length
      for (let from = 0; from < n; from += SITES_PER_TURN) {
        if (from > 0) await nextTurn()
        // Only a site that a later save may have superseded is read back (finding 5).
        const recheck = instructions.supersedersOf(batch)
        const inputs: SolverInput[] = []
        const to = Math.min(from + SITES_PER_TURN, n)
        for (let i = from; i < to; i++) {
          const siteId = batch.siteIds[i]!
          if (!effective[i]) continue
          if ((recheck === 'all' || recheck.has(siteId)) && !isEffective(batch.targetDate, siteId, batch.instructionId, true)) continue
          const [a, b] = slotRange(batch, i)
          inputs.push({
            instructionId: batch.instructionId,
            siteId,
            targetDate: batch.targetDate,
            periods: periodsOf(batch.starts, batch.kwh, a, b, batch.slotDurationSecs),
          })
        }
        hand(inputs, savedAs === 'queued')
      }
    },

    async requeueEffective () {
      // A day is over once its Paris date is past; collect first, the range is not held across turns.
      const refs = [...instructions.effectiveFrom(parisDateOf(clock.now()))]
      let count = 0
      for (let from = 0; from < refs.length; from += SITES_PER_TURN) {
        if (from > 0) await nextTurn()
        const inputs: SolverInput[] = []
        for (const ref of refs.slice(from, from + SITES_PER_TURN)) {
          if (!isEffective(ref.targetDate, ref.siteId, ref.instructionId, true)) continue
          const stored = instructions.get(ref.instructionId, ref.siteId)
          if (!stored) continue
          inputs.push({ instructionId: stored.instructionId, siteId: stored.siteId, targetDate: stored.targetDate, periods: instructionPeriods(stored) })
        }
        hand(inputs)
        count += inputs.length
      }
      return count
    },

    async close () {
      unsubscribe()
      flushQueued()
      // The store closes after this (plugin.ts): the writes it accepted must land first.
      while (pending.size) await Promise.all(pending)
    },
  }
}

function nextTurn (): Promise<void> {
  return new Promise(resolve => setImmediate(resolve))
}
