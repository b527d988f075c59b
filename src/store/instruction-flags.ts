/**
 * Flags kept beside an instruction (same key, `[instruction_id, site_id]`), written
 * in the transaction that saves it: today, that it asks more than the published needs allow
 * (`apply/feasibility.ts`). Data for people; it changes nothing the solver gets.
 * @module
 */
import type { Store } from './open-store.ts'
import { instructionIdPrefix } from '../contract/ids.ts'
import { instantText } from '../contract/instant-text.ts'

export interface FeasibilityFlag {
  /** `emitted_at` of the Besoins_Agreges revision the instruction was checked against. */
  readonly checkedAgainst: string
  /** Slots whose floor exceeds the available power of their quarter-hour(s). */
  readonly infeasibleSlots: ReadonlyArray<{ readonly startUtc: string; readonly floorKw: number; readonly availableKw: number }>
  /** Present when the day's programmed energy exceeds the milestones' needs or the available power. */
  readonly day?: { readonly programmedKwh: number; readonly needsKwh: number; readonly availableKwh: number }
}

/**
 * A flag as the check finds it and the store keeps it: its slots as numbers, three per
 * slot, stored as bytes. A programme of 1,000 sites flags tens of thousands of slots,
 * written inside its save's transaction: as objects with a UTC string each they took the
 * event loop ~80 ms there (bench/README.md); as bytes, a copy.
 */
export interface FlagFound {
  readonly checkedAgainst: string
  /** [start (ms since the epoch), floor kW, available kW] of each infeasible slot, in order. */
  readonly slots: Float64Array
  readonly day?: FeasibilityFlag['day']
}

/** One site's flag within a programme. */
export interface SiteFlag {
  readonly siteId: string
  readonly flag: FlagFound
}

/**
 * What the store holds. `packed`: 16 bytes a slot (f64 start ms, f32 floor kW, f32 available
 * kW, little-endian), so a whole day's flag (100 slots, 1.6 KB) stays inside its B-tree
 * page: at 24 bytes a slot it took an overflow page of its own, one more page to write in
 * every flagged POST's commit. kW are kept as float32 (7 significant digits: the watt up
 * to ~8 MW) and read back rounded to the watt (`KW_DECIMALS`).
 */
interface StoredFlag {
  readonly checkedAgainst: string
  readonly packed?: Uint8Array
  readonly day?: FeasibilityFlag['day']
  /** Flags written on 2026-11-23 kept their slots as the Float64Array's bytes (24 a slot). */
  readonly slots?: Uint8Array
  /** Flags written before 2026-11-23 kept their slots as objects. */
  readonly infeasibleSlots?: FeasibilityFlag['infeasibleSlots']
}

const SLOT_BYTES = 16
const KW_DECIMALS = 1000

/** The flag as people read it (the CLI, the console). */
export function readableFlag (f: FlagFound): FeasibilityFlag {
  const infeasibleSlots: Array<FeasibilityFlag['infeasibleSlots'][number]> = []
  for (let k = 0; k + 2 < f.slots.length; k += 3) {
    infeasibleSlots.push({ startUtc: instantText(f.slots[k]!), floorKw: f.slots[k + 1]!, availableKw: f.slots[k + 2]! })
  }
  return { checkedAgainst: f.checkedAgainst, infeasibleSlots, ...(f.day ? { day: f.day } : {}) }
}

function stored (f: FlagFound): StoredFlag {
  const n = Math.floor(f.slots.length / 3)
  const packed = new Uint8Array(n * SLOT_BYTES)
  const view = new DataView(packed.buffer)
  for (let k = 0; k < n; k++) {
    view.setFloat64(k * SLOT_BYTES, f.slots[3 * k]!, true)
    view.setFloat32(k * SLOT_BYTES + 8, f.slots[3 * k + 1]!, true)
    view.setFloat32(k * SLOT_BYTES + 12, f.slots[3 * k + 2]!, true)
  }
  return { checkedAgainst: f.checkedAgainst, packed, ...(f.day ? { day: f.day } : {}) }
}

const kw = (v: number): number => Math.round(v * KW_DECIMALS) / KW_DECIMALS

/** The slots of a stored flag as the check found them (triplets), whichever form it was stored in. */
function slotsOf (s: StoredFlag): Float64Array {
  if (s.packed) {
    const view = new DataView(s.packed.buffer, s.packed.byteOffset, s.packed.byteLength)
    const n = Math.floor(s.packed.byteLength / SLOT_BYTES)
    const slots = new Float64Array(3 * n)
    for (let k = 0; k < n; k++) {
      slots[3 * k] = view.getFloat64(k * SLOT_BYTES, true)
      slots[3 * k + 1] = kw(view.getFloat32(k * SLOT_BYTES + 8, true))
      slots[3 * k + 2] = kw(view.getFloat32(k * SLOT_BYTES + 12, true))
    }
    return slots
  }
  // A copy: the store's bytes need not be 8-byte aligned.
  const bytes = s.slots ? Uint8Array.from(s.slots) : new Uint8Array(0)
  return new Float64Array(bytes.buffer, 0, bytes.length / 8)
}

function found (s: StoredFlag): FeasibilityFlag {
  if (s.infeasibleSlots) return { checkedAgainst: s.checkedAgainst, infeasibleSlots: s.infeasibleSlots, ...(s.day ? { day: s.day } : {}) }
  return readableFlag({ checkedAgainst: s.checkedAgainst, slots: slotsOf(s), day: s.day })
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
  const db = store.db<StoredFlag>('instruction-feasibility')
  const putSync = (instructionId: string, flags: ReadonlyArray<SiteFlag>): void => {
    for (const { siteId, flag } of flags) db.putSync([instructionId, siteId], stored(flag))
  }
  return {
    put: (instructionId, flags) => store.writeDurable(() => putSync(instructionId, flags)),
    putSync,
    get (instructionId: string, siteId: string): FeasibilityFlag | undefined {
      const s = db.get([instructionId, siteId])
      return s && found(s)
    },
    /** Removes the flags of instructions whose target date is before `beforeDate` (ids start with it). */
    async prune (beforeDate: string): Promise<number> {
      const keys = [...db.getKeys({ start: [''], end: [instructionIdPrefix(beforeDate)] })].filter(Array.isArray)
      if (keys.length) await store.writeDurable(() => { for (const k of keys) db.removeSync(k) })
      return keys.length
    },
  }
}
