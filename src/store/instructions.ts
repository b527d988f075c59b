/**
 * Instructions in LMDB (DECISIONS.md "Inbound"): a programme is saved atomically and
 * durably (all its sites or none, on disk before the 202); the key is
 * `(instruction_id, site_id)`; the effective instruction of a `(site_id, target_date)`
 * is the one with the greatest `emitted_at` among the holder's (DECISIONS.md "Tenure:
 * who holds a site, and when"), older ones are kept as `superseded`. The inbound path
 * checked the sender's perimeter: its programme is the holder's, and another company's
 * instruction in the index (a former holder's) never supersedes it. A site that
 * changes hands withdraws the former holder's (`withdrawals.ts`).
 * @module
 */
import type { Store } from './open-store.ts'
import type { StoreDb } from './guarded-db.ts'
import {
  decodeInstruction, decodeInstructionHead, decodeInstructionSlots, siteRecord, supersedes, type EmittedAt, type Instruction, type InstructionBatch, type InstructionState,
} from '../contract/instruction.ts'
import { compareInstants, readUtcInstant, type Instant } from '../contract/instants.ts'
import { instructionIdPrefix, targetDateOfInstructionId } from '../contract/ids.ts'
import { decodeState, encodeState, entryOf, instructionTree, recordKey, stateKey } from './instruction-tree.ts'
import { openInForce, type InForce } from './in-force.ts'
import { withdrawalLog } from './withdrawals.ts'
import { instructionStatusFields, openEvents, type EventDraft } from './events.ts'

/**
 * The effective instruction of a (target_date, site_id). `emittedAtNanos` (within the
 * millisecond) is written only when non-zero: most programmes are sent at millisecond
 * precision or coarser, and their refs stay one field smaller.
 */
interface EffectiveRef extends EmittedAt {
  readonly instructionId: string
  /**
   * 1: saved with its change in the timeline of what is in force (`in-force.ts`); absent on
   * a ref stored before it, whose site and day gets its timeline derived before a save changes it.
   */
  readonly inForce?: 1
}

/** What `supersedersOf` remembers of a save. */
interface RecentSave extends EmittedAt {
  readonly targetDate: string
  readonly siteIds: readonly string[]
}

/** How many recent saves `supersedersOf` remembers. */
const RECENT_SAVES = 64
const NONE: ReadonlySet<string> = new Set()

export interface InstructionRef {
  readonly instructionId: string
  readonly siteId: string
}

export interface StoredInstruction extends Instruction {
  readonly state: InstructionState
}

/** The instructions: what the inbound path, the solver feed and the CLI may ask of them. */
export interface Instructions {
  /**
   * Saves every site of a batch in one durable transaction. Resolves to, per site,
   * whether the instruction is now the effective one (to be fed to the solver).
   * Rejects with NO_STORE, having written nothing, when any put fails. `status` is
   * what the effective ones start as: the inbound path writes `queued` here, in the
   * same write, since it hands them to the solver right after this commit.
   * `alongside` writes what belongs with the instructions (their audit record, their
   * feasibility flags) in the same transaction: all of it lands, or none. `guard` runs
   * first in that transaction: an error it returns is thrown, nothing written.
   */
  save(batch: InstructionBatch, at: string, status?: 'received' | 'queued', alongside?: () => void, guard?: () => Error | undefined): Promise<boolean[]>
  /**
   * The sites of `batch` that a save run after its own may have superseded: only a
   * later emitted_at for the same day can (DECISIONS.md "Inbound"; an equal one is the
   * same instruction). `all` when `batch` is too old to tell. With an LMDB store this
   * process is the only writer of instructions, so what it saw is what the store holds:
   * no read back. With a shared store (PostgreSQL) another instance may have saved since:
   * `all`, every site is read back.
   */
  supersedersOf(batch: InstructionBatch): 'all' | ReadonlySet<string>
  /** The effective instruction id of a site and day (sync read). */
  effectiveId(targetDate: string, siteId: string): string | undefined
  /**
   * The effective instruction of a site and day as stored: its id and its record's bytes
   * (valid until the next read; a re-send of the same id overwrites them). What an answer
   * built from it can be checked against (sync read, nothing decoded).
   */
  effectiveRecord(targetDate: string, siteId: string): { instructionId: string; bytes: Uint8Array } | undefined
  /** True while `held` (an `effectiveRecord`, or undefined: none) is still the effective instruction as stored; nothing copied. */
  effectiveUnchanged(targetDate: string, siteId: string, held: { readonly instructionId: string; readonly bytes: Uint8Array } | undefined): boolean
  /** The effective instruction of a site and day with the company that sent it (sync read). */
  effectiveOf(targetDate: string, siteId: string): { instructionId: string; companyId: string } | undefined
  /** Effective instructions of `fromDate` and later days, in (day, site) order. */
  effectiveFrom(fromDate: string): Generator<InstructionRef & { targetDate: string }>
  get(instructionId: string, siteId: string): StoredInstruction | undefined
  /** Its slots as stored (parallel arrays) and its slot duration: what the solver's queue needs. */
  slotsOf(instructionId: string, siteId: string): { slotDurationSecs: number; starts: Float64Array; kwh: Float64Array } | undefined
  /**
   * Instructions, optionally of some sites and one target date, in (target date,
   * emitted_at, site) order. Not the key order: `…T123000.250Z` sorts before `…T123000Z`.
   */
  list(filter?: { siteIds?: readonly string[]; targetDate?: string }): StoredInstruction[]
  /**
   * The heads of one day's instructions (no slots read), with their number of periods
   * and status, in key order: what the status read of the API needs.
   */
  headsOf(targetDate: string): Array<{ head: Omit<Instruction, 'slots'>; periodsCount: number; state: InstructionState }>
  /** `queued`, for instructions handed to the solver (not durable-critical: a restart re-queues). */
  markQueued(refs: readonly InstructionRef[], at: string): Promise<void>
  /** Back to `received`, for `queued` ones the solver refused (the next activation queues them). */
  unqueue(refs: readonly InstructionRef[], at: string): Promise<void>
  /**
   * Removes every instruction whose target date is before `beforeDate` (retention:
   * `inbound.retentionDays`), with its status, flag, effective index and withdrawal; resolves to how many.
   */
  prune(beforeDate: string): Promise<number>
  /** `applied`, with the solver cycle that applied them; the first such cycle joins the timeline of what was in force. */
  markApplied(refs: readonly InstructionRef[], cycle: number, at: string): Promise<void>
  /**
   * What was in force per site and day (`in-force.ts`), written by `save` and `markApplied`
   * in their own transactions.
   */
  readonly inForce: Pick<InForce, 'timelineOf' | 'spansOf' | 'inForceAt' | 'recordWithdrawn'>
}

export function openInstructions (store: Store): Instructions {
  // Records are the bytes the parser built (see encodeInstructionRecords): no re-encoding
  // here. Each one's status (and flag) sits beside it in the same tree (instruction-tree.ts).
  const tree = instructionTree(store)                                            // [instruction_id, site_id, …]
  const effective = store.db<EffectiveRef>('instruction-effective')             // [target_date, site_id]
  const recent = new RecentSaves()
  const inForce = openInForce(store)
  // DECISIONS.md "Events for BSPs": each status change of an instruction is an `instruction.statut` of its company, in the write that makes it.
  const events = openEvents(store)
  /** The company that sent an instruction (its record's head), for the event of its status. */
  const companyOf = (instructionId: string, siteId: string): string | undefined => senderOf(tree, undefined, siteId, tree.get(recordKey(instructionId, siteId)))
  /** The event of a status set outside a save (queued, applied), when the instruction is known. */
  const statusEvent = (r: InstructionRef, status: 'queued' | 'applied', extra = ''): EventDraft | undefined => {
    const companyId = companyOf(r.instructionId, r.siteId)
    const targetDate = targetDateOfInstructionId(r.instructionId)
    return companyId && targetDate ? { companyId, type: 'instruction.statut', fields: instructionStatusFields(r.instructionId, r.siteId, targetDate, status, extra) } : undefined
  }

  const stateOf = (instructionId: string, siteId: string): InstructionState | undefined => {
    const bytes = tree.get(stateKey(instructionId, siteId))
    return bytes ? decodeState(bytes) : undefined
  }

  /** Sets a status unless the instruction is superseded or withdrawn (or unknown); inside a write. The status it had, when it set one. */
  const advance = (ref: InstructionRef, next: Uint8Array): InstructionState | undefined => {
    const current = stateOf(ref.instructionId, ref.siteId)
    if (!current || current.status === 'superseded' || current.status === 'withdrawn') return undefined
    tree.putSync(stateKey(ref.instructionId, ref.siteId), next)
    return current
  }

  return {
    async save (batch: InstructionBatch, at: string, status: 'received' | 'queued' = 'received', alongside?: () => void, guard?: () => Error | undefined): Promise<boolean[]> {
      const out = await store.writeDurable((): boolean[] | Error => {
        const refused = guard?.()
        if (refused) return refused
        const drafts: EventDraft[] = []
        const saved = putBatch(tree, effective, inForce, batch, at, status, drafts)
        events.appendSync(drafts, Date.parse(at))
        alongside?.()
        recent.add(batch)
        return saved
      })
      if (out instanceof Error) throw out
      return out
    },

    supersedersOf (batch: InstructionBatch): 'all' | ReadonlySet<string> {
      if (store.shared) return 'all'
      return recent.supersedersOf(batch)
    },

    effectiveId (targetDate: string, siteId: string): string | undefined {
      return effective.get([targetDate, siteId])?.instructionId
    },

    effectiveRecord (targetDate: string, siteId: string) {
      const ref = effective.get([targetDate, siteId])
      const bytes = ref && tree.get(recordKey(ref.instructionId, siteId))
      return ref && bytes ? { instructionId: ref.instructionId, bytes } : undefined
    },

    effectiveUnchanged (targetDate, siteId, held) {
      const ref = effective.get([targetDate, siteId])
      if (!ref || !held) return !ref && !held
      return ref.instructionId === held.instructionId && tree.equalsStored(recordKey(ref.instructionId, siteId), held.bytes)
    },

    effectiveOf (targetDate: string, siteId: string): { instructionId: string; companyId: string } | undefined {
      const ref = effective.get([targetDate, siteId])
      const bytes = ref && tree.get(recordKey(ref.instructionId, siteId))
      return ref && bytes ? { instructionId: ref.instructionId, companyId: decodeInstructionSlots(bytes).head.companyId } : undefined
    },

    * effectiveFrom (fromDate: string): Generator<InstructionRef & { targetDate: string }> {
      for (const { key, value } of effective.getRange({ start: [fromDate] })) {
        const [targetDate, siteId] = key as [string, string]
        yield { targetDate, siteId, instructionId: value.instructionId }
      }
    },

    get (instructionId: string, siteId: string): StoredInstruction | undefined {
      const bytes = tree.get(recordKey(instructionId, siteId))
      const state = bytes && stateOf(instructionId, siteId)
      return bytes && state ? { ...decodeInstruction(bytes), state } : undefined
    },

    slotsOf (instructionId: string, siteId: string) {
      const bytes = tree.get(recordKey(instructionId, siteId))
      if (!bytes) return undefined
      const { head, starts, kwh } = decodeInstructionSlots(bytes)
      return { slotDurationSecs: head.slotDurationSecs, starts, kwh }
    },

    list: filter => listStored(tree, filter),

    headsOf: targetDate => headsOfDay(tree, targetDate),

    markQueued (refs: readonly InstructionRef[], at: string): Promise<void> {
      return store.writeDurable(() => {
        const next = encodeState({ status: 'queued', at })
        const drafts: EventDraft[] = []
        for (const r of refs) {
          const was = advance(r, next)
          const event = was && was.status !== 'queued' ? statusEvent(r, 'queued') : undefined
          if (event) drafts.push(event)
        }
        events.appendSync(drafts, Date.parse(at))
      })
    },

    unqueue (refs: readonly InstructionRef[], at: string): Promise<void> {
      return store.writeDurable(() => {
        const next = encodeState({ status: 'received', at })
        for (const r of refs) {
          if (stateOf(r.instructionId, r.siteId)?.status !== 'queued') continue
          tree.putSync(stateKey(r.instructionId, r.siteId), next)
        }
      })
    },

    /**
     * Removes every instruction whose target date is before `beforeDate` (retention:
     * `inbound.retentionDays`), with its status, flag and effective index. Ids start with
     * the target date, so each tree is one key range.
     */
    async prune (beforeDate: string): Promise<number> {
      const end = instructionIdPrefix(beforeDate)
      const keys = [...tree.getKeys({ start: [''], end: [end] })].filter(Array.isArray)
      const days = [...effective.getKeys({ start: [''], end: [beforeDate] })].filter(Array.isArray) as Array<[string, string]>
      const withdrawn = withdrawalLog(store).before(beforeDate)
      if (!keys.length && !days.length && !withdrawn.length) return 0
      await store.writeDurable(() => {
        for (const k of keys) tree.removeSync(k)
        for (const d of days) effective.removeSync(d)
        inForce.pruneSync(beforeDate)
        withdrawalLog(store).remove(withdrawn)
      })
      return keys.filter(k => entryOf(k) === 'record').length
    },

    markApplied (refs: readonly InstructionRef[], cycle: number, at: string): Promise<void> {
      const atMs = Date.parse(at)
      return store.writeDurable(() => {
        const next = encodeState({ status: 'applied', cycle, at })
        const drafts: EventDraft[] = []
        for (const r of refs) {
          // A cycle told again of an instruction it applied already changes nothing in the timeline.
          const was = advance(r, next)
          if (!was || was.status === 'applied') continue
          const targetDate = targetDateOfInstructionId(r.instructionId)
          if (targetDate) inForce.putAppliedSync(targetDate, r.siteId, atMs, r.instructionId, cycle)
          const event = statusEvent(r, 'applied', `,"cycle":${cycle}`)
          if (event) drafts.push(event)
        }
        events.appendSync(drafts, atMs)
      })
    },

    inForce,
  }
}

type Tree = StoreDb<Uint8Array>
type EffectiveIndex = StoreDb<EffectiveRef>

/**
 * Puts every site of a batch, inside the save's write: its record, its status, and the
 * effective index where it wins, with the change of what is in force (`in-force.ts`, one
 * put a site that wins). Per site, whether it is now the effective one.
 */
function putBatch (tree: Tree, effective: EffectiveIndex, inForce: InForce, batch: InstructionBatch, at: string, status: 'received' | 'queued', events: EventDraft[]): boolean[] {
  const fresh = encodeState({ status, at })
  // Most saves supersede nothing: the superseded status is encoded only when needed.
  let superseded: Uint8Array | undefined
  const stale = (): Uint8Array => superseded ??= encodeState({ status: 'superseded', at })
  const n = batch.siteIds.length
  const out = new Array<boolean>(n)
  const mine: EffectiveRef = batch.emittedAtNanos === 0
    ? { instructionId: batch.instructionId, emittedAtMs: batch.emittedAtMs, inForce: 1 }
    : { instructionId: batch.instructionId, emittedAtMs: batch.emittedAtMs, emittedAtNanos: batch.emittedAtNanos, inForce: 1 }
  const atMs = Date.parse(at)
  // Every site's record names the same company: read once, from the first.
  let company: string | undefined
  const companyId = (): string => company ??= decodeInstructionHead(siteRecord(batch, 0)).head.companyId
  let received: Uint8Array | undefined
  let from = 0
  for (let i = 0; i < n; i++) {
    const siteId = batch.siteIds[i]!
    const day = [batch.targetDate, siteId]
    const current = effective.get(day)
    // Same id = same (target_date, emitted_at): a re-send overwrites and stays effective.
    const to = batch.slotEnds[i]!
    // Late: every period had begun before reception, so it governs none of them and is never
    // in force (DECISIONS.md "Inbound", "In force, quarter-hour by quarter-hour"); kept as `received`.
    const late = from < to && batch.starts[to - 1]! < atMs
    from = to
    // Another company's instruction is a former holder's: never eligible against the
    // holder's. Its sender is read only then (a later programme, the usual case, reads nothing).
    const wins = !late && (!current || !supersedes(current, batch) || senderOf(tree, current, siteId) !== companyId())
    // Before anything of this save: a site and day stored before the timeline derives it from its instructions as they were.
    if (wins && current && !current.inForce && current.instructionId !== batch.instructionId) inForce.backfillSync(batch.targetDate, siteId)
    tree.putSync(recordKey(batch.instructionId, siteId), siteRecord(batch, i))
    tree.putSync(stateKey(batch.instructionId, siteId), wins ? fresh : late ? (received ??= encodeState({ status: 'received', at })) : stale())
    const announced = wins ? (status === 'queued' ? 'queued' : undefined) : late ? 'late' : 'superseded'
    if (announced) events.push({ companyId: companyId(), type: 'instruction.statut', fields: instructionStatusFields(batch.instructionId, siteId, batch.targetDate, announced) })
    // A re-send is already the effective one: nothing to rewrite there.
    if (wins && current?.instructionId !== batch.instructionId) {
      if (current) {
        // Its company, read before its status changes: usually this one, a former holder's otherwise.
        const formerSender = senderOf(tree, current, siteId)
        tree.putSync(stateKey(current.instructionId, siteId), stale())
        if (formerSender) events.push({ companyId: formerSender, type: 'instruction.statut', fields: instructionStatusFields(current.instructionId, siteId, batch.targetDate, 'superseded') })
      }
      effective.putSync(day, mine)
      inForce.putReceivedSync(batch.targetDate, siteId, atMs, mine, companyId())
    }
    out[i] = wins
  }
  return out
}

/** The company that sent an effective instruction (`ref`), or a record's: its head, read. */
function senderOf (tree: Tree, ref: EffectiveRef | undefined, siteId: string, record?: Uint8Array): string | undefined {
  const bytes = record ?? (ref && tree.get(recordKey(ref.instructionId, siteId)))
  return bytes ? decodeInstructionHead(bytes).head.companyId : undefined
}

/**
 * The latest saves whose transactions ran, oldest first (see `supersedersOf`): saves
 * sharing one commit (open-store batches them) follow each other here. Each keeps only
 * what the check reads, not its batch: a busy door saves 64 programmes in ~20 ms, and
 * whole batches held that long outlived the young generation (bench/README.md#what-a-saved-programme-keeps-alive).
 */
// load-bearing: POST 1 × 96, 175 → 60 KB promoted a scavenge, 13 → 3 full collections a run (bench/README.md#what-a-saved-programme-keeps-alive)
class RecentSaves {
  readonly #saves: RecentSave[] = []
  readonly #saveOf = new WeakMap<InstructionBatch, RecentSave>()

  /** Inside the save's write, once its transaction ran. */
  add (batch: InstructionBatch): void {
    const saved: RecentSave = { targetDate: batch.targetDate, emittedAtMs: batch.emittedAtMs, emittedAtNanos: batch.emittedAtNanos, siteIds: batch.siteIds }
    this.#saveOf.set(batch, saved)
    this.#saves.push(saved)
    if (this.#saves.length > RECENT_SAVES) this.#saves.shift()
  }

  /** The sites that saves after `batch` may have superseded; `all` when it is too old to tell. */
  supersedersOf (batch: InstructionBatch): 'all' | ReadonlySet<string> {
    const saves = this.#saves
    const saved = this.#saveOf.get(batch)
    const at = saved ? saves.lastIndexOf(saved) : -1
    if (at === -1) return 'all'
    let sites: Set<string> | undefined
    for (let k = at + 1; k < saves.length; k++) {
      const later = saves[k]!
      if (later.targetDate !== batch.targetDate || !supersedes(later, batch)) continue
      sites ??= new Set()
      for (const s of later.siteIds) sites.add(s)
    }
    return sites ?? NONE
  }
}

/** `list`: a record's status follows it in key order (instruction-tree.ts). */
function listStored (tree: Tree, filter: { siteIds?: readonly string[]; targetDate?: string } = {}): StoredInstruction[] {
  const prefix = filter.targetDate === undefined ? undefined : instructionIdPrefix(filter.targetDate)
  const range = prefix === undefined ? {} : { start: [prefix], end: [prefix + '~'] }
  const sites = filter.siteIds?.length ? new Set(filter.siteIds) : undefined
  const found: Array<{ instructionId: string; siteId: string; bytes: Uint8Array; state?: InstructionState }> = []
  for (const { key, value } of tree.getRange(range)) {
    const entry = entryOf(key)
    const [instructionId, siteId] = key as [string, string]
    if (entry === 'record') {
      if (!sites || sites.has(siteId)) found.push({ instructionId, siteId, bytes: value })
    } else if (entry === 'state') {
      const last = found.at(-1)
      if (last?.instructionId === instructionId && last.siteId === siteId) last.state = decodeState(value)
    }
  }
  const out: StoredInstruction[] = []
  for (const f of found) {
    if (f.state) out.push({ ...decodeInstruction(f.bytes), state: f.state })
  }
  return out.sort(byDayEmittedSite)
}

/** `headsOf`: a record's status follows it in key order (instruction-tree.ts). */
function headsOfDay (tree: Tree, targetDate: string): Array<{ head: Omit<Instruction, 'slots'>; periodsCount: number; state: InstructionState }> {
  const prefix = instructionIdPrefix(targetDate)
  const out: Array<{ head: Omit<Instruction, 'slots'>; periodsCount: number; state: InstructionState }> = []
  let last: { instructionId: string; siteId: string; bytes: Uint8Array; state?: InstructionState } | undefined
  const flush = () => {
    if (!last) return
    if (last.state) out.push({ ...decodeInstructionHead(last.bytes), state: last.state })
    last = undefined
  }
  for (const { key, value } of tree.getRange({ start: [prefix], end: [prefix + '~'] })) {
    const entry = entryOf(key)
    const [instructionId, siteId] = key as [string, string]
    if (entry === 'record') {
      flush()
      last = { instructionId, siteId, bytes: value }
    } else if (entry === 'state' && last?.instructionId === instructionId && last.siteId === siteId) {
      last.state = decodeState(value)
    }
  }
  flush()
  return out
}

function byDayEmittedSite (a: Instruction, b: Instruction): number {
  if (a.targetDate !== b.targetDate) return a.targetDate < b.targetDate ? -1 : 1
  if (a.emittedAt !== b.emittedAt) {
    const order = compareInstants(storedInstant(a.emittedAt), storedInstant(b.emittedAt))
    if (order !== 0) return order
  }
  return a.siteId < b.siteId ? -1 : a.siteId > b.siteId ? 1 : 0
}

/** A stored emitted_at (epx wrote it canonical, so it reads). */
function storedInstant (text: string): Instant {
  const at = readUtcInstant(text)
  return typeof at === 'string' ? { ms: NaN, nanos: 0 } : at
}
