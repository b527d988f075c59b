/**
 * The stored Instruction (contract §2.3, DECISIONS.md "Inbound"): one per site of a
 * programme, keyed `(instruction_id, site_id)`, with its status. Also the compact
 * batch a programme becomes before it is stored, and the record's byte form.
 * @module
 */
import { instantText } from './instant-text.ts'
import { compareInstants } from './instants.ts'

/**
 * `received` → `queued` → `applied` (with the cycle), or `superseded` by a later
 * emitted_at, or `withdrawn` (DECISIONS.md "Tenure: who holds a site, and when").
 */
export type InstructionStatus = 'received' | 'queued' | 'applied' | 'superseded' | 'withdrawn'

/** What a programme said for one site, and who said it; immutable once stored. */
export interface Instruction extends Provenance {
  readonly instructionId: string
  readonly siteId: string
  readonly siteName: string
  readonly targetDate: string
  /** Canonical wire form, at the precision sent (`formatUtcInstant`). */
  readonly emittedAt: string
  readonly emittedBy: string
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
  /** With `withdrawn`: the site left the company's perimeter, or the operator withdrew it. */
  readonly reason?: 'site-left-perimeter' | 'withdrawn'
}

/** An emitted_at as stored: milliseconds, and nanoseconds within the millisecond (0 when absent). */
export interface EmittedAt {
  readonly emittedAtMs: number
  readonly emittedAtNanos?: number
}

/**
 * The supersession rule (DECISIONS.md "Inbound"): of two instructions for the same
 * `(site_id, target_date)`, `a` takes the place of `b` when it was emitted later, at full
 * precision. An equal emitted_at is not a later one: it is the same instruction (the
 * same id), re-sent, and stays effective.
 */
export function supersedes (a: EmittedAt, b: EmittedAt): boolean {
  return compareInstants({ ms: a.emittedAtMs, nanos: a.emittedAtNanos ?? 0 }, { ms: b.emittedAtMs, nanos: b.emittedAtNanos ?? 0 }) > 0
}

/** Who sent a programme, and when it arrived. */
export interface Provenance {
  readonly receivedAt: string
  readonly companyId: string
  readonly tokenId: string
  /** SHA-256 fingerprint of the client certificate that sent it. */
  readonly certFingerprint256: string
}

/**
 * A validated programme as compact arrays, so a big one crosses from the parsing
 * worker by transfer, not by copying an object graph onto the solver's thread.
 * Site i: its record is `siteRecord(batch, i)`, its slots `starts` and `kwh` over
 * `slotRange(batch, i)`.
 */
// load-bearing: POST 1 × 96 and POST 100 × 96, the slots as parallel Float64Arrays (no object per slot, handed over transferred); no figure of its own (bench/README.md#where-post-1--96-goes-e-against-c)
export interface InstructionBatch {
  readonly instructionId: string
  readonly targetDate: string
  readonly emittedAt: string
  /** `emittedAt` parsed: milliseconds, and nanoseconds within the millisecond (`Instant`). */
  readonly emittedAtMs: number
  readonly emittedAtNanos: number
  readonly slotDurationSecs: number
  readonly siteIds: readonly string[]
  /** Each site's stored record (`encodeInstructionRecords`), back to back. */
  readonly records: Uint8Array
  readonly recordEnds: Uint32Array
  readonly starts: Float64Array
  readonly kwh: Float64Array
  readonly slotEnds: Uint32Array
}

/**
 * Where item `i` is among items stored back to back, given where each one ends:
 * `[ends[i - 1] ?? 0, ends[i])` (a batch's slots by `slotEnds`, its records by `recordEnds`).
 */
export function rangeAt (ends: ArrayLike<number>, i: number): [from: number, to: number] {
  return [i === 0 ? 0 : ends[i - 1]!, ends[i]!]
}

/** Slot range of site `i` in a batch: its slots are `starts` and `kwh` over it. */
export function slotRange (batch: Pick<InstructionBatch, 'slotEnds'>, i: number): [from: number, to: number] {
  return rangeAt(batch.slotEnds, i)
}

/** The stored record of site `i` of a batch (a view, not a copy). */
export function siteRecord (batch: Pick<InstructionBatch, 'records' | 'recordEnds'>, i: number): Uint8Array {
  const [from, to] = rangeAt(batch.recordEnds, i)
  return batch.records.subarray(from, to)
}

/** Record format version (first byte), so the layout can change without a migration. */
const RECORD_V1 = 1

/**
 * The stored bytes of every site of a programme, back to back. One record is
 * `[1][u32 LE length of the JSON][JSON of the instruction without slots][f64 starts][f64 energies]`:
 * the slots are copied as the parser left them (two memcpy a site), not re-encoded.
 */
export function encodeInstructionRecords (
  head: Omit<Instruction, 'siteId' | 'siteName' | 'slots'>,
  sites: ReadonlyArray<{ readonly siteId: string; readonly siteName: string }>,
  starts: Float64Array, kwh: Float64Array, slotEnds: Uint32Array,
): { records: Uint8Array; recordEnds: Uint32Array } {
  const shared = JSON.stringify(head).slice(0, -1)
  // Loops, not `sites.map(s => …)`: a closure made per call is compiled again and again
  // (bench/README.md#closures-made-per-request).
  const texts = new Array<string>(sites.length)
  const recordEnds = new Uint32Array(sites.length)
  let size = 0
  for (let i = 0; i < sites.length; i++) {
    const [from, to] = rangeAt(slotEnds, i)
    const s = sites[i]!
    texts[i] = `${shared},"siteId":${JSON.stringify(s.siteId)},"siteName":${JSON.stringify(s.siteName)}}`
    size += 5 + Buffer.byteLength(texts[i]!) + 16 * (to - from)
    recordEnds[i] = size
  }
  // Its own ArrayBuffer (never a slice of node's pool), so it can be transferred.
  const records = Buffer.allocUnsafeSlow(size)
  const startBytes = Buffer.from(starts.buffer, starts.byteOffset, starts.byteLength)
  const kwhBytes = Buffer.from(kwh.buffer, kwh.byteOffset, kwh.byteLength)
  let at = 0
  for (let i = 0; i < sites.length; i++) {
    const [from, to] = rangeAt(slotEnds, i)
    records[at] = RECORD_V1
    const length = records.write(texts[i]!, at + 5)
    records.writeUInt32LE(length, at + 1)
    at += 5 + length
    at += startBytes.copy(records, at, from * 8, to * 8)
    at += kwhBytes.copy(records, at, from * 8, to * 8)
  }
  return { records, recordEnds }
}

export function decodeInstruction (bytes: Uint8Array): Instruction {
  const { head, starts, kwh } = decodeInstructionSlots(bytes)
  const slots = new Array<readonly [string, number]>(starts.length)
  for (let k = 0; k < starts.length; k++) slots[k] = [instantText(starts[k]!), kwh[k]!]
  return { ...head, slots }
}

/** A record's head and its number of slots, without reading the slots (a status list). */
export function decodeInstructionHead (bytes: Uint8Array): { head: Omit<Instruction, 'slots'>; periodsCount: number } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (buf[0] !== RECORD_V1) throw new Error(`unknown instruction record format ${buf[0]}`)
  const length = buf.readUInt32LE(1)
  const head = JSON.parse(buf.toString('utf8', 5, 5 + length)) as Omit<Instruction, 'slots'>
  return { head, periodsCount: (buf.length - 5 - length) / 16 }
}

/**
 * A record's head and its slots as they are stored, two parallel arrays: what the solver's
 * queue needs (enqueue.ts), without a string per slot until the solver reads them.
 */
// load-bearing: the memory row, 150.3 → 147 MB after a restart; ~10 µs a site and day the solver never reads (bench/README.md#periods-built-when-the-solver-reads-an-input)
export function decodeInstructionSlots (bytes: Uint8Array): { head: Omit<Instruction, 'slots'>; starts: Float64Array; kwh: Float64Array } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (buf[0] !== RECORD_V1) throw new Error(`unknown instruction record format ${buf[0]}`)
  const length = buf.readUInt32LE(1)
  const head = JSON.parse(buf.toString('utf8', 5, 5 + length)) as Omit<Instruction, 'slots'>
  const n = (buf.length - 5 - length) / 16
  // Copied out: a stored value need not be 8-byte aligned for a Float64Array view.
  const numbers = new Float64Array(2 * n)
  buf.copy(Buffer.from(numbers.buffer), 0, 5 + length)
  return { head, starts: numbers.subarray(0, n), kwh: numbers.subarray(n) }
}
