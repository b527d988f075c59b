/**
 * The stored Instruction (contract §2.3, DECISIONS.md "Inbound"): one per site of a
 * programme, keyed `(instruction_id, site_id)`, with its status. Also the compact
 * batch a programme becomes before it is stored, and the record's byte form.
 * @module
 */
import { instantText } from './instant-text.ts'

/** `received` → `queued` → `applied` (with the cycle), or `superseded` by a later emitted_at. */
export type InstructionStatus = 'received' | 'queued' | 'applied' | 'superseded'

/** What a programme said for one site, and who said it; immutable once stored. */
export interface Instruction {
  readonly instructionId: string
  readonly siteId: string
  readonly siteName: string
  readonly targetDate: string
  /** Canonical wire form, milliseconds kept. */
  readonly emittedAt: string
  readonly emittedBy: string
  readonly receivedAt: string
  readonly companyId: string
  readonly tokenId: string
  /** SHA-256 fingerprint of the client certificate that sent it. */
  readonly certFingerprint256: string
  readonly slotDurationSecs: number
  /**
   * The periods as programmed: `[debut_utc, energie_kwh]`, in order, each lasting
   * `slotDurationSecs`; the kW constraints come from `apply/to-constraints.ts`.
   */
  readonly slots: ReadonlyArray<readonly [startUtc: string, energyKwh: number]>
}

/** The mutable part, stored beside the record so a status change rewrites a few bytes. */
export interface InstructionState {
  readonly status: InstructionStatus
  /** The solver cycle that applied it (status `applied`). */
  readonly cycle?: number
  /** When the status was set. */
  readonly at: string
}

/** Who sent a programme, and when it arrived. */
export interface Provenance {
  readonly receivedAt: string
  readonly companyId: string
  readonly tokenId: string
  readonly certFingerprint256: string
}

/**
 * A validated programme as compact arrays, so a big one crosses from the parsing
 * worker by transfer, not by copying an object graph onto the solver's thread.
 * Site i: record bytes `[recordEnds[i - 1] ?? 0, recordEnds[i])` of `records`, slots
 * `[slotEnds[i - 1] ?? 0, slotEnds[i])` of `starts` and `kwh`.
 */
export interface InstructionBatch {
  readonly instructionId: string
  readonly targetDate: string
  readonly emittedAt: string
  readonly emittedAtMs: number
  readonly slotDurationSecs: number
  readonly siteIds: readonly string[]
  /** Each site's `Instruction`, UTF-8 JSON (`encodeInstruction`), back to back. */
  readonly records: Uint8Array
  readonly recordEnds: Uint32Array
  readonly starts: Float64Array
  readonly kwh: Float64Array
  readonly slotEnds: Uint32Array
}

/** Slot range of site `i` in a batch. */
export function slotRange (batch: InstructionBatch, i: number): [from: number, to: number] {
  return [i === 0 ? 0 : batch.slotEnds[i - 1]!, batch.slotEnds[i]!]
}

/**
 * The stored bytes of an instruction: JSON, written by hand because a programme of a
 * thousand sites writes a thousand of them (`head` is shared by all sites of a programme).
 */
export function encodeInstruction (head: string, siteId: string, siteName: string,
  starts: Float64Array, kwh: Float64Array, from: number, to: number): string {
  let slots = ''
  // Canonical instants need no JSON escaping: digits, '-', ':', '.', 'T' and 'Z'.
  for (let k = from; k < to; k++) slots += (k === from ? '["' : ',["') + instantText(starts[k]!) + '",' + kwh[k] + ']'
  return `{${head},"siteId":${JSON.stringify(siteId)},"siteName":${JSON.stringify(siteName)},"slots":[${slots}]}`
}

/** The fields every site of a programme shares, as the start of a JSON object body. */
export function instructionHead (h: Omit<Instruction, 'siteId' | 'siteName' | 'slots'>): string {
  return JSON.stringify(h).slice(1, -1)
}

export function decodeInstruction (bytes: Uint8Array): Instruction {
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as Instruction
}
