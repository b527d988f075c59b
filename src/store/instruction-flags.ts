/**
 * Flags kept beside an instruction (same key, `[instruction_id, site_id]`), written
 * in the transaction that saves it: today, that it asks more than the published needs allow
 * (`apply/feasibility.ts`). Data for people; it changes nothing the solver gets.
 * @module
 */
import type { Store } from './open-store.ts'
import { instructionIdPrefix } from '../contract/ids.ts'

export interface FeasibilityFlag {
  /** `emitted_at` of the Besoins_Agreges revision the instruction was checked against. */
  readonly checkedAgainst: string
  /** Slots whose floor exceeds the available power of their quarter-hour(s). */
  readonly infeasibleSlots: ReadonlyArray<{ readonly startUtc: string; readonly floorKw: number; readonly availableKw: number }>
  /** Present when the day's programmed energy exceeds the milestones' needs or the available power. */
  readonly day?: { readonly programmedKwh: number; readonly needsKwh: number; readonly availableKwh: number }
}

/** One site's flag within a programme. */
export interface SiteFlag {
  readonly siteId: string
  readonly flag: FeasibilityFlag
}

/** The flags of instructions, by instruction and site. */
export interface InstructionFlags {
  put(instructionId: string, flags: ReadonlyArray<SiteFlag>): Promise<void>
  /** Writes inside the caller's own `writeDurable` (the instruction save's). */
  putSync(instructionId: string, flags: ReadonlyArray<SiteFlag>): void
  get(instructionId: string, siteId: string): FeasibilityFlag | undefined
  /** Removes the flags of instructions whose target date is before `beforeDate`; resolves to their count. */
  prune(beforeDate: string): Promise<number>
}

export function openInstructionFlags (store: Store): InstructionFlags {
  const db = store.db<FeasibilityFlag>('instruction-feasibility')
  const putSync = (instructionId: string, flags: ReadonlyArray<SiteFlag>): void => {
    for (const { siteId, flag } of flags) db.putSync([instructionId, siteId], flag)
  }
  return {
    put: (instructionId, flags) => store.writeDurable(() => putSync(instructionId, flags)),
    putSync,
    get (instructionId: string, siteId: string): FeasibilityFlag | undefined {
      return db.get([instructionId, siteId])
    },
    /** Removes the flags of instructions whose target date is before `beforeDate` (ids start with it). */
    async prune (beforeDate: string): Promise<number> {
      const keys = [...db.getKeys({ start: [''], end: [instructionIdPrefix(beforeDate)] })].filter(Array.isArray)
      if (keys.length) await store.writeDurable(() => { for (const k of keys) db.removeSync(k) })
      return keys.length
    },
  }
}
