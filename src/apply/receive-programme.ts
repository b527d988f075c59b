/**
 * The inbound use case, whole (contract §4.2, DECISIONS.md "Inbound"): the bytes of a
 * Programme_Soutirage and the caller who sent them → one outcome. In order:
 *
 * 1. read: JSON, schema, rules and the caller's perimeter → one instruction per site
 *    (`read-programme.ts`; a big body is read off the solver's thread);
 * 2. persisted, atomically and durably (`store/instructions.ts`): a 202 survives a crash;
 * 3. the effective instructions handed to the solver's next cycle (`enqueue.ts`), but
 *    the late ones, whose every period had begun before reception;
 * 4. the receipt says so.
 *
 * The HTTP door (`http/inbound-route.ts`) only reads the body and renders the outcome.
 * @module
 */
import type { Clock, Logger, SolverPort } from '../host/contract.ts'
import type { Caller } from '../auth/caller.ts'
import { decodeInstructionSlots, siteRecord, slotRange, type InstructionBatch } from '../contract/instruction.ts'
import type { Receipt, ReceiptEntry } from '../contract/compiled.ts'
import { isEpxError, type EpxError } from '../errors.ts'
import type { Store } from '../store/open-store.ts'
import { openInstructions, type Instructions } from '../store/instructions.ts'
import { openWithdrawals } from '../store/withdrawals.ts'
import { createEnqueuer, isLate, periodsOver, type Enqueuer, type HandedBatch } from './enqueue.ts'
import { createProgrammeReader, type ProgrammeReader } from './read-programme.ts'
import type { AcceptedRecords, ProgrammeRecords } from './programme-records.ts'
import type { ManagedSites } from './managed-sites.ts'
import { tenancyGuard, type TenancyGuard } from './tenancy-guard.ts'
import type { StorageQuota } from './quota.ts'

/** What became of one programme: the one value a door renders. */
export type ProgrammeOutcome =
  | { readonly accepted: true; readonly instructionId: string; readonly receipt: Receipt }
  /** A catalogue error: 400 with a JSON Pointer per violation, 503 NO_STORE (nothing written), … */
  | { readonly accepted: false; readonly error: EpxError }

/** The inbound feature, opened: what a door calls, and its teardown. */
export interface Inbound {
  receive(bytes: Buffer, caller: Caller, receivedAt: Date): Promise<ProgrammeOutcome>
  /** A programme the door refused before its bytes were whole (415, 413, cut short): reported like any refusal. */
  refusedAtDoor(error: unknown, caller: Caller, receivedAt: Date): void
  /** The instructions store the feature writes (retention, metrics and the console read it). */
  readonly instructions: Instructions
  /** Hands the solver batches another thread saved and checked (the API door's worker, `door/supervisor.ts`), in order; then `done`. */
  handOver(batches: readonly HandedBatch[], done: () => void): void
  /** Queues again every effective instruction whose day is not over (idempotent: the latest input of a site and day wins). */
  requeueEffective(): Promise<number>
  /** Queues what another instance saved, once its changes are applied to this store (`Enqueuer.handChanged`). */
  handChanged(changes: ReadonlyMap<string, readonly unknown[]>): void
  /** Stops the parsing worker, logs the warn summaries waiting, then waits for the status writes already accepted. */
  close(): Promise<void>
}

/** The `inbound` configuration, and where a big body starts (tests set it). */
export interface InboundOptions {
  readonly maxSites: number
  readonly requireContiguous: boolean
  readonly maxClockSkewSeconds?: number
  readonly maxDaysAhead?: number
  readonly maxSiteKw?: number
  /** Bodies above this many bytes are read off the thread (default `read-programme.ts`). */
  readonly offThreadBytes?: number
}

export interface InboundDeps {
  readonly store: Store
  readonly solver: SolverPort
  readonly clock: Clock
  readonly log: Logger
  readonly options: InboundOptions
  /** What is kept of every programme: its audit record, feasibility flags and counts (`programme-records.ts`). */
  readonly records?: ProgrammeRecords
  /** The sites the solver manages: a programme naming another is refused (unset: not checked). */
  readonly managed?: ManagedSites
  /**
   * False when another thread reads the programmes (`api.inWorker`): this one then compiles
   * no programme validator (~1 MB of heap it would keep for nothing) unless `receive` is called.
   */
  readonly reads?: boolean
  /** The storage quota, counted in each save's transaction (unset: none). */
  readonly quota?: Pick<StorageQuota, 'charge'>
}

/** The parts one programme goes through. */
export interface ReceiveParts {
  readonly reader: ProgrammeReader
  readonly instructions: Instructions
  readonly enqueuer: Pick<Enqueuer, 'enqueueBatch'>
  readonly records?: ProgrammeRecords
  readonly managed?: ManagedSites
  /** A perimeter changed between the door's check and the save refuses the programme (unset: not checked). */
  readonly tenancy?: TenancyGuard
  /** A programme that would cross its company's storage quota is refused, nothing written (unset: no quota). */
  readonly quota?: Pick<StorageQuota, 'charge'>
}

/**
 * Wires the feature and queues again every effective instruction whose day is not over
 * (a solver restart loses nothing). Open it before the API listens, so no newer programme
 * can be overtaken by an old one.
 */
export async function openInbound (deps: InboundDeps): Promise<Inbound> {
  const instructions = openInstructions(deps.store)
  const enqueuer = createEnqueuer({
    solver: deps.solver, instructions, clock: deps.clock, log: deps.log, sharedStore: deps.store.shared, withdrawals: openWithdrawals(deps.store),
  })
  try {
    await enqueuer.requeueEffective()
  } catch (err) {
    await enqueuer.close()
    throw err
  }
  let reader = deps.reads === false ? undefined : createProgrammeReader(deps.options)
  const parts: ReceiveParts = {
    get reader () { return reader ??= createProgrammeReader(deps.options) },
    instructions, enqueuer, records: deps.records, managed: deps.managed, tenancy: tenancyGuard(deps.store), quota: deps.quota,
  }
  return {
    instructions,
    receive: (bytes, caller, receivedAt) => receiveProgramme(bytes, caller, receivedAt, parts),
    handOver: (batches, done) => enqueuer.handOver(batches, done),
    requeueEffective: () => enqueuer.requeueEffective(),
    handChanged: changes => enqueuer.handChanged(changes),
    refusedAtDoor: (error, caller, at) => deps.records?.refused(caller, error, at),
    async close () {
      try {
        await reader?.close()
      } finally {
        deps.records?.close()
        await enqueuer.close()
      }
    },
  }
}

/**
 * One programme, from its bytes to its outcome. Anything refused is an outcome; only a
 * bug (not a catalogue error) is thrown, for the door to log and answer 500.
 */
export async function receiveProgramme (bytes: Buffer, caller: Caller, receivedAt: Date, parts: ReceiveParts): Promise<ProgrammeOutcome> {
  const at = receivedAt.toISOString()
  // Now: a body read off the thread is transferred there, and its length is 0 here after.
  const size = bytes.length
  let outcome: ProgrammeOutcome
  let saved = false
  try {
    const since = parts.tenancy?.begin()
    // In memory: read again from the host at most every MANAGED_SITES_MAX_AGE_MS.
    const known = parts.managed?.current()
    const managed = known instanceof Promise ? await known : known
    const batch = await parts.reader.read(bytes, {
      perimeter: caller.perimeter,
      nowMs: receivedAt.getTime(),
      ...(managed ? { managed } : {}),
      provenance: { receivedAt: at, companyId: caller.companyId, tokenId: caller.tokenId, certFingerprint256: caller.certFingerprint256 },
    })
    const records = await parts.records?.accepting(batch, caller, size, receivedAt)
    const { quota } = parts
    // In the save's transaction, first: a perimeter changed meanwhile, then the quota (counted only if the rest lands).
    const tenancy = since === undefined ? undefined : () => parts.tenancy!.refusal(since, caller.companyId, batch)
    const guard = quota === undefined ? tenancy : () => tenancy?.() ?? quota.charge(caller, size, receivedAt)
    const receipt = await saveAndQueue(batch, at, parts, {
      write: records?.write ?? (() => {}),
      landed: () => { saved = true; records?.landed() },
    }, caller.companyId, guard)
    outcome = { accepted: true, instructionId: batch.instructionId, receipt }
  } catch (err) {
    // Saved but not handed over (the door's worker lost its host): its records are
    // already in the store, accepted; the restart queues it again. Over the quota: audited
    // once an hour per company by the door (as a request over its budget), not per programme.
    if (!saved && !(isEpxError(err) && err.code === 'QUOTA_EXCEEDED')) parts.records?.refused(caller, err, receivedAt)
    if (!isEpxError(err)) throw err
    outcome = { accepted: false, error: err }
  }
  return outcome
}

/**
 * Persists a read batch, with its records in the same transaction, and queues its
 * effective instructions that are not late. Rejects with NO_STORE (nothing written) when
 * the store fails; resolves only once every instruction is on disk (DECISIONS.md
 * "Robustness": a 202 survives a crash). `records.landed` runs once the save has committed.
 */
export async function saveAndQueue (batch: InstructionBatch, receivedAt: string, parts: Omit<ReceiveParts, 'reader' | 'records'>, records?: AcceptedRecords, companyId?: string,
  guard?: () => Error | undefined): Promise<Receipt> {
  // Superseded ones (an older emitted_at than the effective one) are stored, not fed.
  // The effective ones are saved as `queued` (one write, not two): they reach the
  // solver's queue right after this commit, in this process.
  const effective = await parts.instructions.save(batch, receivedAt, 'queued', records?.write, guard)
  records?.landed()
  // A late one (every period begun before reception) is saved `received` and never in
  // force (store/instructions.ts): `effective` is false for it, so it is not handed.
  await parts.enqueuer.enqueueBatch(batch, effective, 'queued')
  return receiptOf(batch, effective, parts.instructions, companyId, Date.parse(receivedAt))
}

/** The company that sent a batch (its provenance, in every site's record). */
function companyOf (batch: InstructionBatch): string | undefined {
  return batch.siteIds.length ? decodeInstructionSlots(siteRecord(batch, 0)).head.companyId : undefined
}

/**
 * The 202 body: the contract's receipt, each instruction saying what will become of it
 * (DECISIONS.md "Inbound"): `queued`, `superseded`, or `late` when every period of it had
 * begun before it was received. A superseded one names the instruction in force only when
 * it is the caller's own: no company learns another's ids. The message never says "will
 * be applied" of what will not be.
 */
export function receiptOf (batch: InstructionBatch, effective: readonly boolean[], instructions: Pick<Instructions, 'effectiveOf'>,
  companyId: string | undefined, receivedAtMs: number): Receipt {
  const n = batch.siteIds.length
  const entries = new Array<ReceiptEntry>(n)
  let queued = 0
  let late = 0
  let over = 0
  for (let i = 0; i < n; i++) {
    const [from, to] = slotRange(batch, i)
    const siteId = batch.siteIds[i]!
    const entry: ReceiptEntry = { instruction_id: batch.instructionId, site_id: siteId, periods_count: to - from, status: 'queued' }
    if (isLate(batch.starts, from, to, receivedAtMs)) {
      // Never in force, whatever else is stored (store/instructions.ts); its periods over are no news.
      entry.status = 'late'
      late++
      entries[i] = entry
      continue
    }
    if (!effective[i]) {
      entry.status = 'superseded'
      // Read only for a superseded site (rare): the record's head names its company.
      const inForce = readOrUndefined(() => instructions.effectiveOf(batch.targetDate, siteId))
      if (inForce && inForce.instructionId !== batch.instructionId && inForce.companyId === (companyId ??= companyOf(batch))) entry.superseded_by = inForce.instructionId
    } else {
      queued++
    }
    const past = from < to ? periodsOver(batch.starts, from, to, batch.slotDurationSecs, receivedAtMs) : 0
    if (past > 0) {
      entry.periods_over = past
      over += past
    }
    entries[i] = entry
  }
  return { status: 'received', count: n, instructions: entries, message: receiptMessage(n, queued, n - queued - late, late, over) }
}

/** What the receipt's entries say, summed up: "2 instruction(s) persisted; 1 will be applied at the next solver cycle; 1 is late: …". */
function receiptMessage (n: number, queued: number, superseded: number, late: number, over: number): string {
  const are = (k: number): string => k === 1 ? 'is' : 'are'
  let message = `${n} instruction(s) persisted; ${queued > 0 ? `${queued} will be applied at the next solver cycle` : 'none will be applied'}`
  if (superseded > 0) message += `; ${superseded} ${are(superseded)} superseded by a later programme`
  if (late > 0) message += `; ${late} ${are(late)} late: every period had begun before ${late === 1 ? 'it was' : 'they were'} received (kept, never applied)`
  if (over > 0) message += `; ${over} period(s) already over are kept but not fed to the solver`
  return message
}

function readOrUndefined<T> (read: () => T): T | undefined {
  try { return read() } catch { return undefined }
}
