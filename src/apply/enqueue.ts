/**
 * Instructions → the solver (DECISIONS.md "Inbound"): effective instructions go into the
 * host's next-cycle queue right after their commit (status `queued`); the cycle's
 * acknowledgement makes them `applied` with its number; on activation every effective
 * instruction whose day is not over is queued again, so a solver restart loses nothing.
 * With the API door in its worker, the worker saves and checks, and this thread only
 * hands over what it was sent (`handOver`). With instances sharing one store, each
 * feeds its own solver what the others saved too, as their changes reach its replica
 * (`handChanged`): the change feed reports only theirs, so a save of this instance's
 * reaches its solver by one path, the door's. A withdrawal (a site changing hands, or the operator's) is read from
 * the store's withdrawal log, whoever wrote it: what is in force after it is handed, or
 * the solver's input of that site and day is cleared (`pollWithdrawals`).
 * @module
 */
import type { Clock, Logger, Period, SolverInput, SolverPort } from '../host/contract.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import { decodeInstructionSlots, rangeAt } from '../contract/instruction.ts'
import { parisDateOf } from '../contract/paris-day.ts'
import { targetDateOfInstructionId } from '../contract/ids.ts'
import type { InstructionRef, Instructions } from '../store/instructions.ts'
import type { Withdrawals } from '../store/withdrawals.ts'
import { entryOf } from '../store/instruction-tree.ts'
import { periodsOf } from './to-constraints.ts'
import { slotsDigest } from './slots-digest.ts'

/**
 * Sites handed to the solver per event-loop turn, one `enqueueNextCycle` call each: the
 * solver shares the loop, and its enqueue may do work per input (the inputs themselves are
 * light: their periods are built when read, `lazyInput`).
 */
const SITES_PER_TURN = 64
/** How long `queued` statuses wait to share one write (a cycle's acknowledgement flushes them first). */
const QUEUED_WRITE_DELAY_MS = 20
/** Another instance's changes the store could not read yet (its feed reconnecting): read again after this, doubling up to the max. */
const OWED_RETRY_MIN_MS = 100
const OWED_RETRY_MAX_MS = 5000
/**
 * How often the withdrawal log is read: a withdrawal written by the CLI (another process,
 * LMDB) or by another instance reaches the solver's next cycle within this.
 */
const WITHDRAWAL_POLL_MS = 1000
/** The digest of a cleared input (no periods): no digest of slots is negative. */
const CLEARED = -1

export interface EnqueueDeps {
  readonly solver: SolverPort
  readonly instructions: Instructions
  readonly clock: Clock
  readonly log: Logger
  /**
   * Other instances write instructions too (a PostgreSQL store): a batch handed over
   * by the door's worker may have been superseded by one of theirs, already handed
   * here (`handChanged`), so each of its sites is read back before it is queued.
   */
  readonly sharedStore?: boolean
  /** The withdrawal log (store/withdrawals.ts): read every WITHDRAWAL_POLL_MS; unset, not read. */
  readonly withdrawals?: Pick<Withdrawals, 'lastSeq' | 'since'>
}

/**
 * A saved batch's sites to queue, as the door's worker hands them over: only the sites
 * that were effective after its save (and not superseded since), their slots alone.
 */
export interface HandedBatch extends Pick<InstructionBatch, 'instructionId' | 'targetDate' | 'slotDurationSecs' | 'siteIds' | 'starts' | 'kwh'> {
  readonly slotEnds: ArrayLike<number>
  /** Each site's `slotsDigest`, as the thread that saved the batch computed it (unset: computed here). */
  readonly digests?: ArrayLike<number>
}

export interface Enqueuer {
  /**
   * Queues the sites of a saved batch that are (still) effective; resolves once all are
   * queued. `savedAs` is the status the save wrote for them: `queued` needs no second
   * write (only a refusal by the solver writes `received` back).
   */
  enqueueBatch(batch: InstructionBatch, effective: readonly boolean[], savedAs?: 'received' | 'queued'): Promise<void>
  /**
   * Queues batches another thread saved (as `queued`) and checked, every site of each,
   * strictly in the order handed: a batch's sites reach the solver after every earlier
   * batch's, so the latest input of a site and day is the newest programme's. `done`
   * runs once they are (at once for a few sites: no promise on the solver's thread).
   */
  handOver(batches: readonly HandedBatch[], done: () => void): void
  /** Queues again every effective instruction whose Paris day is not over; resolves to their count. */
  requeueEffective(): Promise<number>
  /**
   * Queues what another writer (another instance) changed in the instructions, once
   * applied to this store: each site and day whose effective instruction is new, or was
   * rewritten (a re-send), if its day is not over. After the hand-overs before it, in order.
   * Its statuses are the writer's: nothing is written here. A site and day the store
   * cannot read now (its change feed reconnecting) is read again, with backoff, until it
   * answers; what is effective then is queued. One the solver was last handed as it
   * stands (a feed that reconnects reports again what it had reported) is not queued twice.
   */
  handChanged(changes: ReadonlyMap<string, readonly unknown[]>): void
  /** Stops listening to the solver's cycles, writes pending statuses and resolves once every status write has settled. */
  close(): Promise<void>
}

export function createEnqueuer (deps: EnqueueDeps): Enqueuer {
  const { solver, instructions, clock, log } = deps
  const writes = new StatusWrites(instructions, clock, log)
  const feed = new SolverFeed(deps, writes)
  const order = new HandOrder(log)

  const unsubscribe = solver.onCycleApplied(report => {
    if (report.inputs.length === 0) return
    writes.flushQueued()   // writes are ordered: `queued` lands before this `applied`
    writes.track(instructions.markApplied(report.inputs, report.cycle, report.at), 'could not mark instructions applied')
  })

  const hand = (fed: readonly Fed[], marked: boolean | 'elsewhere' = false, again = false): void => feed.hand(fed, marked, again)

  /** Site `i` of a handed batch is still to be fed: always, unless another instance may have superseded it. */
  const current = (batch: HandedBatch, i: number): boolean =>
    !deps.sharedStore || stillEffective(instructions, batch.targetDate, batch.siteIds[i]!, batch.instructionId, true)
  const handInOrder = (batches: readonly HandedBatch[]): void => {
    const inputs: Fed[] = []
    const nowMs = clock.now().getTime()
    for (const batch of batches) for (let i = 0; i < batch.siteIds.length; i++) if (current(batch, i)) inputs.push(inputOf(batch, i, nowMs))
    hand(inputs, true)
  }
  /** A big hand-over (a 1,000-site programme): SITES_PER_TURN sites a turn, the solver shares the loop. */
  const handInTurns = async (batches: readonly HandedBatch[]): Promise<void> => {
    let inputs: Fed[] = []
    const nowMs = clock.now().getTime()
    for (const batch of batches) {
      for (let i = 0; i < batch.siteIds.length; i++) {
        if (inputs.length === SITES_PER_TURN) {
          hand(inputs, true)
          inputs = []
          await nextTurn()
        }
        if (current(batch, i)) inputs.push(inputOf(batch, i, nowMs))
      }
    }
    hand(inputs, true)
  }

  /**
   * The effective instructions of `days` (site and day pairs) whose day is not over, handed
   * SITES_PER_TURN a turn. `owe`: where the days go that the store could not read (they
   * are handed by a later call); without it, the read's error is thrown.
   */
  const handEffective = async (days: ReadonlyArray<readonly [string, string]>, marked: boolean | 'elsewhere', owe?: (days: ReadonlyArray<readonly [string, string]>, err: unknown) => void): Promise<number> => {
    const nowMs = clock.now().getTime()
    const today = parisDateOf(new Date(nowMs))
    let count = 0
    for (let from = 0; from < days.length; from += SITES_PER_TURN) {
      if (from > 0) await nextTurn()
      const inputs: Fed[] = []
      const to = Math.min(from + SITES_PER_TURN, days.length)
      for (let k = from; k < to; k++) {
        const [targetDate, siteId] = days[k]!
        if (targetDate < today) continue
        let instructionId: string | undefined
        let stored: ReturnType<typeof decodeInstructionSlots> | undefined
        try {
          const record = instructions.effectiveRecord(targetDate, siteId)
          instructionId = record?.instructionId
          stored = record && decodeInstructionSlots(record.bytes)
        } catch (err) {
          if (!owe) throw err
          hand(inputs, marked)
          owe(days.slice(k), err)
          return count + inputs.length
        }
        if (!stored) {
          // Nothing in force (withdrawn): what the solver was handed for it is cleared.
          const cleared = instructionId === undefined ? feed.cleared(targetDate, siteId) : undefined
          if (cleared) inputs.push(cleared)
          continue
        }
        const { head, starts, kwh } = stored
        // Late when received (DECISIONS.md "Inbound"): kept, never handed, by this instance or another, at start or later.
        if (isLate(starts, 0, starts.length, Date.parse(head.receivedAt))) continue
        inputs.push(fedOf(instructionId!, siteId, targetDate, starts, kwh, 0, starts.length, head.slotDurationSecs, nowMs))
      }
      hand(inputs, marked, marked !== 'elsewhere')
      count += inputs.length
    }
    return count
  }

  const owed = new OwedDays(log, (days, owe) => order.inOrder(async () => {
    await handEffective(days, 'elsewhere', owe)
    return owed.paid(days.length)
  }, 'could not queue the instructions another instance saved'))

  const stopPolling = pollWithdrawals(deps, days => order.inOrder(() => handEffective(days, 'elsewhere', (rest, err) => owed.owe(rest, err)),
    'could not hand the solver what is in force after a withdrawal'))

  return {
    async enqueueBatch (batch, effective, savedAs = 'received') {
      const n = batch.siteIds.length
      for (let from = 0; from < n; from += SITES_PER_TURN) {
        if (from > 0) await nextTurn()
        const inputs: Fed[] = []
        const nowMs = clock.now().getTime()
        for (const i of sitesToQueue(instructions, batch, effective, from, Math.min(from + SITES_PER_TURN, n))) inputs.push(inputOf(batch, i, nowMs))
        hand(inputs, savedAs === 'queued')
      }
    },

    handOver (batches, done) {
      let sites = 0
      for (const b of batches) sites += b.siteIds.length
      // The usual case, a few sites and nothing before them: queued at once, no promise.
      if (!order.busy && sites <= SITES_PER_TURN) {
        handInOrder(batches)
        done()
        return
      }
      order.inOrder(() => handInTurns(batches), 'could not queue the instructions the api worker saved', done)
    },

    handChanged (changes) {
      const days = changedDays(changes)
      if (days.length) order.inOrder(() => handEffective(days, 'elsewhere', (rest, err) => owed.owe(rest, err)), 'could not queue the instructions another instance saved')
    },

    async requeueEffective () {
      // A day is over once its Paris date is past; collect first, the range is not held across turns.
      const days = [...instructions.effectiveFrom(parisDateOf(clock.now()))].map(ref => [ref.targetDate, ref.siteId] as const)
      return handEffective(days, false)
    },

    async close () {
      // What is still owed is queued by the next activation (requeueEffective).
      stopPolling()
      owed.close()
      await order.drained()
      unsubscribe()
      writes.flushQueued()
      // The store closes after this (plugin.ts): the writes it accepted must land first.
      await writes.settled()
    },
  }
}

/**
 * Reads the withdrawal log every WITHDRAWAL_POLL_MS and hands `days` the (target date,
 * site) pairs withdrawn since the last read. The log is a store's sub-database, so a
 * withdrawal the CLI wrote in another process (LMDB) or another instance wrote
 * (PostgreSQL, through the replica) is read the same way. Returns the stop.
 */
function pollWithdrawals (deps: EnqueueDeps, days: (days: Days) => void): () => void {
  const log = deps.withdrawals
  if (!log) return () => {}
  let seen: number | undefined
  const read = (): void => {
    try {
      if (seen === undefined) { seen = log.lastSeq(); return }
      const fresh = log.since(seen)
      if (!fresh.length) return
      seen = fresh.at(-1)!.seq
      const pairs = new Map<string, readonly [string, string]>()
      for (const w of fresh) pairs.set(`${w.targetDate}/${w.siteId}`, [w.targetDate, w.siteId])
      days([...pairs.values()])
    } catch {
      // The store does not answer now: read again at the next tick (it logs its own outage).
    }
  }
  // What was withdrawn before activation is already out of the effective index requeued then.
  read()
  const timer = setInterval(read, WITHDRAWAL_POLL_MS)
  timer.unref()
  return () => clearInterval(timer)
}

function warnOf (log: Logger, what: string): (err: unknown) => void {
  return err => log.warn({ err, code: (err as { code?: string })?.code }, what)
}

/** Hands inputs to the solver: each once as it stands, their `queued` status written soon after. */
class SolverFeed {
  readonly #deps: EnqueueDeps
  readonly #writes: StatusWrites
  readonly #handed: HandedLog

  constructor (deps: EnqueueDeps, writes: StatusWrites) {
    this.#deps = deps
    this.#writes = writes
    this.#handed = new HandedLog(deps.clock)
  }

  /**
   * Hands one turn's inputs to the solver and marks them queued, soon and always before
   * any cycle's `applied` for them. The status write is not awaited: losing `queued` to
   * a crash loses nothing, the next activation queues them again. `marked`: already
   * saved as `queued` (a refusal writes `received` back); `elsewhere`: another instance
   * saved them and owns their status (nothing is written, either way). `again`: fed even
   * if the solver was last handed the same (a requeue); otherwise such an input is not.
   */
  hand (fed: readonly Fed[], marked: boolean | 'elsewhere', again: boolean): void {
    if (fed.length === 0) return
    const { solver, instructions, clock, log } = this.#deps
    const fresh = again ? fed : fed.filter(f => !this.#handed.same(f))
    const inputs = fresh.map(f => f.input)
    try {
      if (inputs.length) solver.enqueueNextCycle(inputs)
    } catch (err) {
      // The instructions are durable: answer 202 all the same; they stay (or go back to)
      // `received` and the next activation queues them again.
      log.error({ err, count: inputs.length }, 'the solver refused the next-cycle inputs')
      if (marked === true) {
        this.#writes.track(instructions.unqueue(inputs.map(i => ({ instructionId: i.instructionId, siteId: i.siteId })), clock.now().toISOString()),
          'could not mark refused instructions received')
      }
      return
    }
    this.#handed.note(fresh)
    if (marked) return
    this.#writes.queue(fed)
  }

  /**
   * The input that clears what the solver was last handed for a site and day (no periods:
   * no constraint), under that instruction's id; undefined when it was handed nothing, or
   * that input already.
   */
  cleared (targetDate: string, siteId: string): Fed | undefined {
    const last = this.#handed.last(targetDate, siteId)
    if (!last || last.digest === CLEARED) return undefined
    return { input: { instructionId: last.instructionId, siteId, targetDate, periods: [] }, digest: CLEARED }
  }
}

/**
 * The status writes: `queued` statuses gathered to share one write, and every write not
 * yet settled, which close() waits for (docs/plugin-contract.md "Guarantees").
 */
class StatusWrites {
  readonly #instructions: Instructions
  readonly #clock: Clock
  readonly #log: Logger
  readonly #pending = new Set<Promise<void>>()
  // Every LMDB commit costs lmdb-js a native write job: the `queued` statuses of all the
  // programmes handed over within a few milliseconds share one.
  #queued: InstructionRef[] = []
  #timer: NodeJS.Timeout | undefined

  constructor (instructions: Instructions, clock: Clock, log: Logger) {
    this.#instructions = instructions
    this.#clock = clock
    this.#log = log
  }

  track (write: Promise<void>, what: string): void {
    const settled = write.catch(warnOf(this.#log, what)).finally(() => this.#pending.delete(settled))
    this.#pending.add(settled)
  }

  /** Handed to the solver: `queued` within QUEUED_WRITE_DELAY_MS. */
  queue (fed: readonly Fed[]): void {
    for (const { input: i } of fed) this.#queued.push({ instructionId: i.instructionId, siteId: i.siteId })
    this.#timer ??= setTimeout(() => this.flushQueued(), QUEUED_WRITE_DELAY_MS).unref()
  }

  flushQueued (): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#queued.length === 0) return
    const refs = this.#queued
    this.#queued = []
    this.track(this.#instructions.markQueued(refs, this.#clock.now().toISOString()), 'could not mark instructions queued')
  }

  async settled (): Promise<void> {
    while (this.#pending.size) await Promise.all(this.#pending)
  }
}

/**
 * What the solver was last handed per target date and site, so the same is not handed
 * twice: a re-send that changes nothing, another instance's save reported again (its
 * feed reconnected), or a save of this process's the feed took for another writer's
 * (one it was too far behind to tell apart, store/postgres/own-writes.ts).
 */
class HandedLog {
  readonly #clock: Clock
  readonly #handed = new Map<string, Map<string, Handed>>()

  constructor (clock: Clock) { this.#clock = clock }

  last (targetDate: string, siteId: string): Handed | undefined {
    return this.#handed.get(targetDate)?.get(siteId)
  }

  same (f: Fed): boolean {
    const last = this.last(f.input.targetDate, f.input.siteId)
    return last !== undefined && last.instructionId === f.input.instructionId && last.digest === f.digest
  }

  note (fed: readonly Fed[]): void {
    for (const { input, digest } of fed) {
      let sites = this.#handed.get(input.targetDate)
      if (!sites) {
        // A new day: the days that are over are dropped, nothing feeds them any more.
        const today = parisDateOf(this.#clock.now())
        for (const day of this.#handed.keys()) if (day < today) this.#handed.delete(day)
        this.#handed.set(input.targetDate, sites = new Map())
      }
      sites.set(input.siteId, { instructionId: input.instructionId, digest })
    }
  }
}

/** The hand-overs, one after the other, so a site's latest input is the newest programme's. */
class HandOrder {
  readonly #log: Logger
  /** The handed-over batches not yet queued (none: all are). */
  #handing: Promise<void> | undefined

  constructor (log: Logger) { this.#log = log }

  get busy (): boolean { return this.#handing !== undefined }

  /** Runs `step` after every hand-over before it, then `done`. */
  inOrder (step: () => Promise<unknown>, what: string, done?: () => void): void {
    const previous = this.#handing ?? Promise.resolve()
    const run: Promise<void> = previous.then(step).then(() => {}, warnOf(this.#log, what)).finally(() => {
      if (this.#handing === run) this.#handing = undefined
      done?.()
    })
    this.#handing = run
  }

  async drained (): Promise<void> {
    while (this.#handing) await this.#handing
  }
}

type Days = ReadonlyArray<readonly [string, string]>

/**
 * Sites and days another instance changed that the store could not read when told (its
 * change feed reconnecting reports what it missed before it answers again): read again,
 * with backoff, until it does. What is effective then is handed, the newest programme's.
 */
class OwedDays {
  readonly #log: Logger
  /** Hands `days` (in order with the hand-overs), owing again what it still cannot read. */
  readonly #retry: (days: Days, owe: (rest: Days, err: unknown) => void) => void
  readonly #owed = new Map<string, readonly [string, string]>()
  #timer: NodeJS.Timeout | undefined
  #delayMs = OWED_RETRY_MIN_MS
  /**
   * A warn once a retry fails too, an info once what was owed is handed: one of each per
   * episode. Not at the first failure: a reconnecting feed answers by the first retry,
   * and the store logs its own outage.
   */
  #warned = false
  #closed = false

  constructor (log: Logger, retry: (days: Days, owe: (rest: Days, err: unknown) => void) => void) {
    this.#log = log
    this.#retry = retry
  }

  owe (days: Days, err: unknown, retried = false): void {
    for (const day of days) this.#owed.set(`${day[0]}/${day[1]}`, day)
    if (retried && !this.#warned) {
      this.#warned = true
      this.#log.warn({ err, code: (err as { code?: string })?.code, sites: this.#owed.size },
        'could not read the instructions another instance saved (the store does not answer): retried until it does')
    }
    if (this.#timer || this.#closed) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      const days = [...this.#owed.values()]
      this.#owed.clear()
      this.#retry(days, (rest, e) => this.owe(rest, e, true))
    }, this.#delayMs)
    this.#timer.unref?.()
    this.#delayMs = Math.min(this.#delayMs * 2, OWED_RETRY_MAX_MS)
  }

  /** After a retry handed what it could: once nothing is owed, the backoff starts afresh. */
  paid (sites: number): void {
    if (this.#owed.size > 0) return
    this.#delayMs = OWED_RETRY_MIN_MS
    if (!this.#warned) return
    this.#warned = false
    this.#log.info({ sites }, 'the instructions another instance saved while the store did not answer are queued')
  }

  /** What is still owed is queued by the next activation. */
  close (): void {
    this.#closed = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = undefined
  }
}

/**
 * The (target date, site) pairs whose effective instruction a change set may have
 * changed: a new effective index entry, or an instruction record rewritten (a re-send
 * of the same id). Statuses and flags are not: they change nothing the solver gets, and
 * each instance writes its own solver's statuses (reacting to them would never end).
 */
export function changedDays (changes: ReadonlyMap<string, readonly unknown[]>): Array<readonly [string, string]> {
  const days = new Map<string, readonly [string, string]>()
  for (const key of changes.get('instruction-effective') ?? []) {
    if (!Array.isArray(key) || typeof key[0] !== 'string' || typeof key[1] !== 'string') continue
    days.set(`${key[0]}/${key[1]}`, [key[0], key[1]])
  }
  for (const key of changes.get('instructions') ?? []) {
    if (entryOf(key) !== 'record') continue
    const [instructionId, siteId] = key as [string, string]
    const targetDate = targetDateOfInstructionId(instructionId)
    if (targetDate) days.set(`${targetDate}/${siteId}`, [targetDate, siteId])
  }
  return [...days.values()]
}

/**
 * The sites of a saved batch, among `[from, to)`, to queue now: effective at its save
 * and not superseded since. Only a site that a later save may have superseded is read
 * back: a newer programme may have committed while the caller yielded.
 */
export function sitesToQueue (instructions: Pick<Instructions, 'supersedersOf' | 'effectiveId'>, batch: InstructionBatch, effective: readonly boolean[], from = 0, to = batch.siteIds.length): number[] {
  const recheck = instructions.supersedersOf(batch)
  const sites: number[] = []
  for (let i = from; i < to; i++) {
    if (!effective[i]) continue
    const siteId = batch.siteIds[i]!
    if ((recheck === 'all' || recheck.has(siteId)) && !stillEffective(instructions, batch.targetDate, siteId, batch.instructionId, true)) continue
    sites.push(i)
  }
  return sites
}

/** Still effective now? When the store cannot say, the caller's own answer (the commit's) stands. */
function stillEffective (instructions: Pick<Instructions, 'effectiveId'>, targetDate: string, siteId: string, instructionId: string, fallback: boolean): boolean {
  try {
    return instructions.effectiveId(targetDate, siteId) === instructionId
  } catch {
    return fallback
  }
}

/** An instruction's input for the solver, and the digest of its slots (what tells a re-send that changes it). */
interface Fed {
  readonly input: SolverInput
  readonly digest: number
}

/** What the solver was last handed for a site and day. */
interface Handed {
  readonly instructionId: string
  readonly digest: number
}

function inputOf (batch: HandedBatch, i: number, nowMs: number): Fed {
  const [a, b] = rangeAt(batch.slotEnds, i)
  return fedOf(batch.instructionId, batch.siteIds[i]!, batch.targetDate, batch.starts, batch.kwh, a, b, batch.slotDurationSecs, nowMs, batch.digests?.[i])
}

function fedOf (instructionId: string, siteId: string, targetDate: string, starts: Float64Array, kwh: Float64Array, a: number, b: number, slotDurationSecs: number, nowMs: number,
  digest = slotsDigest(starts, kwh, a, b, slotDurationSecs)): Fed {
  return { input: lazyInput(instructionId, siteId, targetDate, starts, kwh, a, b, slotDurationSecs, nowMs), digest }
}

/**
 * The solver's input for slots `[a, b)` of parallel arrays. Its periods are built the
 * first time the solver reads them, then kept: ~96 objects a day, ~10 µs of the solver's
 * thread, paid for an input the solver uses, not for each POST (a BSP re-posting a site
 * supersedes inputs the solver never reads) nor for each instruction queued again at
 * activation (the memory row's restarted E held ~6 MB of periods before). The slots stay as they are (16 bytes each) until then, and go once they are built.
 */
function lazyInput (instructionId: string, siteId: string, targetDate: string, starts: Float64Array, kwh: Float64Array, a: number, b: number, slotDurationSecs: number, nowMs: number): SolverInput {
  return new LazyInput(instructionId, siteId, targetDate, starts, kwh, a + periodsOver(starts, a, b, slotDurationSecs, nowMs), b, slotDurationSecs)
}

/**
 * `periods` is an own, enumerable accessor (host/contract.ts: `JSON.stringify` and
 * `structuredClone` copy it), and every input shares its one getter. An object literal's
 * `get periods ()` made a closure and an accessor pair per input, the pair in the old
 * generation: ~0.3 µs an input and the solver's thread's mark-compacts under POST load.
 */
class LazyInput implements SolverInput {
  static readonly #periods: PropertyDescriptor = {
    enumerable: true,
    get (this: LazyInput) { return this.#built ?? this.#build() },
  }

  declare readonly periods: readonly Period[]
  readonly instructionId: string
  readonly siteId: string
  readonly targetDate: string
  #starts: Float64Array
  #kwh: Float64Array
  readonly #a: number
  readonly #b: number
  readonly #slotDurationSecs: number
  #built: Period[] | undefined

  constructor (instructionId: string, siteId: string, targetDate: string, starts: Float64Array, kwh: Float64Array, a: number, b: number, slotDurationSecs: number) {
    this.instructionId = instructionId
    this.siteId = siteId
    this.targetDate = targetDate
    this.#starts = starts
    this.#kwh = kwh
    this.#a = a
    this.#b = b
    this.#slotDurationSecs = slotDurationSecs
    Object.defineProperty(this, 'periods', LazyInput.#periods)
  }

  /**
   * Built, the slots are let go: they are views of the message that handed them over,
   * whose buffer holds every programme of a door's flush, and a solver keeps its inputs in
   * force all day (one input kept would keep them all).
   */
  #build (): Period[] {
    this.#built = periodsOf(this.#starts, this.#kwh, this.#a, this.#b, this.#slotDurationSecs)
    this.#starts = this.#kwh = NO_SLOTS
    return this.#built
  }
}

const NO_SLOTS = new Float64Array(0)

/**
 * How many of slots `[a, b)` are over at `nowMs` (they end at or before it): a
 * programme for today keeps them, but they are not fed to the solver (DECISIONS.md
 * "Inbound"). Slots are in increasing order, so the count stops at the first one not over.
 */
export function periodsOver (starts: ArrayLike<number>, a: number, b: number, slotDurationSecs: number, nowMs: number): number {
  const durationMs = slotDurationSecs * 1000
  let k = a
  while (k < b && starts[k]! + durationMs <= nowMs) k++
  return k - a
}

/**
 * Whether slots `[a, b)` had all begun before `receivedAtMs`: such an instruction is
 * `late` (DECISIONS.md "Inbound"), kept but never handed to the solver, since none of its
 * quarter-hours can still be governed by it (DECISIONS.md "In force"). An instruction of
 * no period is never late: it clears the site's constraints, and is handed. Slots are in
 * increasing order, so the last one decides.
 */
export function isLate (starts: ArrayLike<number>, a: number, b: number, receivedAtMs: number): boolean {
  return a < b && starts[b - 1]! < receivedAtMs
}

function nextTurn (): Promise<void> {
  return new Promise(resolve => setImmediate(resolve))
}
