/**
 * Flags kept beside an instruction, in its own tree and leaf page (`instruction-tree.ts`),
 * written in the transaction that saves it: today, that it asks more than the published needs allow
 * (`apply/feasibility.ts`). Data for people; it changes nothing the solver gets.
 * @module
 */
import type { Store } from './open-store.ts'
import { instantText } from '../contract/instant-text.ts'
import { flagKey, instructionTree } from './instruction-tree.ts'

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
 * event loop ~80 ms there (bench/README.md#targets, the 1,000-site programme); as bytes, a copy.
 */
export interface FlagFound {
  readonly checkedAgainst: string
  /**
   * [start (ms since the epoch), floor kW, available kW] of each infeasible slot, in order.
   * An array, not a Float64Array: a typed array of more than 8 numbers has a backing store
   * of its own outside V8's heap, ~1 µs of CPU to make and free (bench/README.md#where-post-1--96-goes-e-against-c).
   */
  readonly slots: readonly number[]
  readonly day?: FeasibilityFlag['day']
}

/** One site's flag within a programme. */
export interface SiteFlag {
  readonly siteId: string
  readonly flag: FlagFound
}

/**
 * A flag as the instruction tree holds it (`instruction-tree.ts`, beside its instruction):
 * `[1][u32 LE length of the JSON][JSON {checkedAgainst, day?}][16 bytes a slot]`, a slot
 * being f64 start ms, f32 floor kW, f32 available kW, little-endian. A whole day's flag
 * (100 slots, 1.6 KB) stays inside its B-tree page: at 24 bytes a slot it took an overflow
 * page of its own, one more page to write in every flagged POST's commit. kW are kept as
 * float32 (7 significant digits: the watt up to ~8 MW) and read back rounded to the watt
 * (`KW_DECIMALS`).
 */
const FLAG_V1 = 1
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

function encodeFlag (f: FlagFound): Uint8Array {
  const head = Buffer.from(JSON.stringify({ checkedAgainst: f.checkedAgainst, ...(f.day ? { day: f.day } : {}) }))
  const n = Math.floor(f.slots.length / 3)
  const bytes = Buffer.allocUnsafe(5 + head.length + n * SLOT_BYTES)
  bytes[0] = FLAG_V1
  bytes.writeUInt32LE(head.length, 1)
  head.copy(bytes, 5)
  const view = new DataView(bytes.buffer, bytes.byteOffset + 5 + head.length, n * SLOT_BYTES)
  for (let k = 0; k < n; k++) {
    view.setFloat64(k * SLOT_BYTES, f.slots[3 * k]!, true)
    view.setFloat32(k * SLOT_BYTES + 8, f.slots[3 * k + 1]!, true)
    view.setFloat32(k * SLOT_BYTES + 12, f.slots[3 * k + 2]!, true)
  }
  return bytes
}

const kw = (v: number): number => Math.round(v * KW_DECIMALS) / KW_DECIMALS

/** Packed slots back to triplets. */
function unpack (packed: Uint8Array): number[] {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength)
  const n = Math.floor(packed.byteLength / SLOT_BYTES)
  const slots = new Array<number>(3 * n)
  for (let k = 0; k < n; k++) {
    slots[3 * k] = view.getFloat64(k * SLOT_BYTES, true)
    slots[3 * k + 1] = kw(view.getFloat32(k * SLOT_BYTES + 8, true))
    slots[3 * k + 2] = kw(view.getFloat32(k * SLOT_BYTES + 12, true))
  }
  return slots
}

function decodeFlag (bytes: Uint8Array): FeasibilityFlag {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (buf[0] !== FLAG_V1) throw new Error(`unknown flag record format ${buf[0]}`)
  const length = buf.readUInt32LE(1)
  const head = JSON.parse(buf.toString('utf8', 5, 5 + length)) as Pick<FlagFound, 'checkedAgainst' | 'day'>
  return readableFlag({ checkedAgainst: head.checkedAgainst, slots: unpack(buf.subarray(5 + length)), day: head.day })
}

/** The flags of instructions, by instruction and site. */
export interface InstructionFlags {
  put(instructionId: string, flags: ReadonlyArray<SiteFlag>): Promise<void>
  /** Writes inside the caller's own `writeDurable` (the instruction save's). */
  putSync(instructionId: string, flags: ReadonlyArray<SiteFlag>): void
  /** Flags go with their instruction (`Instructions.prune`): no retention of their own. */
  get(instructionId: string, siteId: string): FeasibilityFlag | undefined
}

export function openInstructionFlags (store: Store): InstructionFlags {
  const tree = instructionTree(store)
  const putSync = (instructionId: string, flags: ReadonlyArray<SiteFlag>): void => {
    for (const { siteId, flag } of flags) tree.putSync(flagKey(instructionId, siteId), encodeFlag(flag))
  }
  return {
    put: (instructionId, flags) => store.writeDurable(() => putSync(instructionId, flags)),
    putSync,
    get (instructionId: string, siteId: string): FeasibilityFlag | undefined {
      const bytes = tree.get(flagKey(instructionId, siteId))
      return bytes ? decodeFlag(bytes) : undefined
    },
  }
}
