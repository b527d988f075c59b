/**
 * The B-tree that holds everything of an instruction that its save writes: per
 * `(instruction_id, site_id)`, its record, its status and its feasibility flag, under
 * keys that sort next to each other, so they share a leaf page:
 *
 * - `[instruction_id, site_id]`: the record (`encodeInstructionRecords`);
 * - `[instruction_id, site_id, 'f']`: the flag, if any (`instruction-flags.ts`);
 * - `[instruction_id, site_id, 's']`: the status (`InstructionState` as JSON).
 *
 * Why one tree: every B-tree a commit touches costs that commit its own leaf and branch
 * pages, written and synced. An accepted POST's commit touched five trees (records,
 * statuses, the effective index, the audit trail, the flags) and now touches three: ~40 µs
 * of CPU and ~0.14 ms of commit less each (lmdb-js alone, 300 durable
 * commits of each layout: bench/README.md#b-trees-per-durable-commit).
 * @module
 */
import type { Key } from 'lmdb'
import type { InstructionState } from '../contract/instruction.ts'
import type { Store } from './open-store.ts'
import type { StoreDb } from './guarded-db.ts'

const FLAG = 'f'
const STATE = 's'

/** What a key of the tree points at. */
export type TreeEntry = 'record' | 'flag' | 'state'

export function instructionTree (store: Store): StoreDb<Uint8Array> {
  return store.db<Uint8Array>('instructions', { binary: true })
}

export const recordKey = (instructionId: string, siteId: string): Key => [instructionId, siteId]
export const flagKey = (instructionId: string, siteId: string): Key => [instructionId, siteId, FLAG]
export const stateKey = (instructionId: string, siteId: string): Key => [instructionId, siteId, STATE]

/** What an entry of the tree is, from its key; undefined for a key that is not the tree's (or not a key). */
export function entryOf (key: unknown): TreeEntry | undefined {
  if (!Array.isArray(key)) return undefined
  if (key.length === 2) return 'record'
  if (key.length === 3) return key[2] === STATE ? 'state' : key[2] === FLAG ? 'flag' : undefined
  return undefined
}

export function encodeState (state: InstructionState): Uint8Array {
  return Buffer.from(JSON.stringify(state))
}

export function decodeState (bytes: Uint8Array): InstructionState {
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as InstructionState
}
