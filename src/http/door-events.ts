/**
 * What the API door's worker tells the solver's thread (issue 12; DECISIONS.md
 * "Robustness": the host's loop sees only enqueue calls, cycle reports and batched log
 * records): both ends of the `events` message, the one the solver's thread pays for on
 * every request. So it is built to cost that thread as little as possible:
 *
 * - one message per flush, at most one every few ms of a busy door, not one per request
 *   (each message costs the receiving thread a wake-up and a handler);
 * - its records are one JSON text of small arrays: a structured clone of an object per
 *   request cost the solver's thread several µs to rebuild; `JSON.parse` of tuples is a
 *   fraction of that (bench/README.md, session 6);
 * - a log line's field names, level and message travel once (a *shape*), then each line
 *   is its values alone; a child logger's bindings travel once too;
 * - delivery receipts are deduplicated per flush (the last one of a company, site and
 *   day is all the receipts keep);
 * - metrics' events are recorded only when the solver's thread has metrics;
 * - saved programmes are handed over as their sites' ids and slots (one Float64Array
 *   per flush, transferred), and acknowledged per flush through shared memory: the
 *   solver's thread stores the flush's number, the POSTs waiting on it answer 202.
 * @module
 */
import type { Logger } from '../host/contract.ts'
import type { TokenRecord } from '../store/tokens.ts'
import type { ProgrammeCount } from '../apply/programme-records.ts'
import type { HandedBatch } from '../apply/enqueue.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import type { ApiObserver } from './observer.ts'

/** The `events` message. */
export interface EventsMessage {
  readonly type: 'events'
  /** JSON: an array of records, each an array led by its kind (`R`). */
  readonly text: string
  /** With hand-overs: this flush's number, stored in the hand-over cell once they are queued. */
  readonly seq?: number
  /** The hand-overs' slots, each batch's starts then its energies, in the order of their records. */
  readonly slots?: Float64Array
}

/** What the solver's thread listens to, told to the door at its start (nothing else is recorded). */
export interface Observed { readonly answered: boolean; readonly handshakes: boolean; readonly programmes: boolean }

/** Events rare enough to travel as they are. */
export type RareEvent =
  | { readonly e: 'programme'; readonly c: ProgrammeCount }
  | { readonly e: 'handshakeFailed'; readonly reason: string }
  | { readonly e: 'deadToken'; readonly token: TokenRecord; readonly reason: 'revoked' | 'expired'; readonly nowMs: number }
  | { readonly e: 'storeError' }
  /** A token's last use, written by the host's thread: its writes there are ordered with the host's own. */
  | { readonly e: 'touch'; readonly token: TokenRecord; readonly nowMs: number }

/** Record kinds (exported for the tests that read messages). */
export const R = {
  /** [R.LOGGER, id, parentId, bindings]: a child logger (id 0 is the plugin's logger). */
  LOGGER: 0,
  /** [R.SHAPE, id, level, msg, keys, errors]: what the lines of that shape share (`errors`: which fields were Errors). */
  SHAPE: 1,
  /** [R.LINE, loggerId, shapeId, ...values]: one log line, its fields in the shape's key order. */
  LINE: 2,
  /** [R.LABELS, id, door, method, status, code]: the labels of answered requests. */
  LABELS: 3,
  /** [R.ANSWERED, labelsId, seconds]. */
  ANSWERED: 4,
  /** [R.HANDSHAKES, count]. */
  HANDSHAKES: 5,
  /** [R.RECEIPT, companyId, siteId, targetDate, emittedAtMs, status, atMs]. */
  RECEIPT: 6,
  /** [R.EVENT, RareEvent]. */
  EVENT: 7,
  /** [R.HAND_OVER, instructionId, targetDate, slotDurationSecs, siteIds, slotEnds]: its slots are next in `slots`. */
  HAND_OVER: 8,
} as const

type Level = 'debug' | 'info' | 'warn' | 'error'
interface Shape { readonly level: Level; readonly msg: string | undefined; readonly keys: string[]; readonly errors: number[] }

/** Shapes past this many travel as whole objects (a shape a line: a bug's, not the door's). */
const MAX_SHAPES = 1000

/** The door's side. */
export interface EventsOut {
  /** The plugin's logger, as the door writes to it. */
  readonly log: Logger
  answered(door: string, method: string, status: number, code: string | undefined, seconds: number): void
  handshake(): void
  receipt(companyId: string, siteId: string, targetDate: string, emittedAtMs: number, status: 200 | 304, atMs: number): void
  event(e: RareEvent): void
  /** Hands sites of a saved batch to the solver's queue; resolves once the solver's thread has. */
  handOver(batch: InstructionBatch, sites: readonly number[]): Promise<void>
  /** Sends what is waiting now. */
  flush(): void
}

export interface EventsOutOptions {
  readonly observed: Observed
  /** The hand-over cell (Int32 [0]: the last flush whose hand-overs are queued). */
  readonly handed: SharedArrayBuffer
  /** The least time between two messages of a busy door (a hand-over leaves at once). */
  readonly flushMs: number
  /** A burst this long leaves at once (bounded messages, bounded memory). */
  readonly maxRecords: number
  /** An error as the host's logger would print it (pino's serializer). */
  readonly errorJson: (err: Error) => object
}

export function eventsOut (post: (m: EventsMessage, transfer?: ArrayBuffer[]) => void, o: EventsOutOptions): EventsOut {
  let records: string[] = []
  const receipts = new Map<string, unknown[]>()
  let handshakes = 0
  let handOvers: Array<{ batch: InstructionBatch; sites: readonly number[] }> = []
  let seq = 0
  /** What the POSTs of the next flush's hand-overs wait for. */
  let next: { done: Promise<void>; resolve: () => void } | undefined
  let timer: NodeJS.Timeout | undefined
  let immediate: NodeJS.Immediate | undefined
  const handed = handedWaiter(o.handed)

  /** When the last message left. */
  let sentAt = 0
  /**
   * A flush at once when the last one is `flushMs` old (a quiet door's line is not held
   * back), else when it will be: a busy door sends one message per `flushMs`.
   */
  const arm = () => {
    if (timer || immediate) return
    const wait = sentAt + o.flushMs - Date.now()
    if (wait <= 0) immediate = setImmediate(flush)
    else { timer = setTimeout(flush, wait); timer.unref() }
  }
  const add = (record: string) => {
    records.push(record)
    if (records.length >= o.maxRecords) flush()
    else arm()
  }

  const loggerIds = new Map<string, number>()
  const shapeIds = new Map<string, number>()
  const forwarding = (id: number): Logger => {
    const line = (level: Level) => (obj: object, msg?: string) => logLine(id, level, obj, msg)
    return {
      debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error'),
      child (bindings) {
        const key = `${id}\0${JSON.stringify(bindings)}`
        let child = loggerIds.get(key)
        if (child === undefined) {
          loggerIds.set(key, child = loggerIds.size + 1)
          add(JSON.stringify([R.LOGGER, child, id, bindings]))
        }
        return forwarding(child)
      },
    }
  }
  const logLine = (logger: number, level: Level, obj: object, msg: string | undefined) => {
    const keys: string[] = []
    const values: unknown[] = [R.LINE, logger, 0]
    let errors: number[] | undefined
    for (const k of Object.keys(obj)) {
      const v = (obj as Record<string, unknown>)[k]
      if (v === undefined) continue
      if (v instanceof Error) (errors ??= []).push(keys.length)
      keys.push(k)
      values.push(v instanceof Error ? o.errorJson(v) : v)
    }
    const shapeKey = `${level}\0${msg ?? ''}\0${keys.join('\0')}\0${errors?.join() ?? ''}`
    let shape = shapeIds.get(shapeKey)
    if (shape === undefined && shapeIds.size < MAX_SHAPES) {
      shapeIds.set(shapeKey, shape = shapeIds.size + 1)
      add(JSON.stringify([R.SHAPE, shape, level, msg ?? null, keys, errors ?? []]))
    }
    if (shape === undefined) {
      // A shape 0 line: its shape is its own (values [keys, level, msg, errors, ...values]).
      values.splice(3, 0, keys, level, msg ?? null, errors ?? [])
    } else values[2] = shape
    add(jsonOf(values))
  }

  const labelIds = new Map<string, number>()
  const out: EventsOut = {
    log: forwarding(0),
    answered (door, method, status, code, seconds) {
      if (!o.observed.answered) return
      const key = `${door}\0${method}\0${status}\0${code ?? ''}`
      let id = labelIds.get(key)
      if (id === undefined) {
        labelIds.set(key, id = labelIds.size + 1)
        add(JSON.stringify([R.LABELS, id, door, method, status, code ?? null]))
      }
      add(`[${R.ANSWERED},${id},${seconds}]`)
    },
    handshake () {
      if (!o.observed.handshakes) return
      handshakes++
      arm()
    },
    receipt (companyId, siteId, targetDate, emittedAtMs, status, atMs) {
      // Turned into JSON at the flush: of a site polled in a loop, only the last is sent.
      receipts.set(`${companyId}\0${targetDate}${siteId}`, [R.RECEIPT, companyId, siteId, targetDate, emittedAtMs, status, atMs])
      if (receipts.size >= o.maxRecords) flush()
      else arm()
    },
    event (e) {
      if (e.e === 'programme' && !o.observed.programmes) return
      add(jsonOf([R.EVENT, e]))
    },
    handOver (batch, sites) {
      handOvers.push({ batch, sites })
      if (timer) { clearTimeout(timer); timer = undefined }
      immediate ??= setImmediate(flush)
      if (!next) {
        let resolve!: () => void
        next = { done: new Promise<void>(r => { resolve = r }), resolve }
      }
      return next.done
    },
    flush,
  }

  function flush (): void {
    if (timer) { clearTimeout(timer); timer = undefined }
    if (immediate) { clearImmediate(immediate); immediate = undefined }
    if (records.length === 0 && receipts.size === 0 && handOvers.length === 0 && handshakes === 0) return
    sentAt = Date.now()
    const parts = records
    records = []
    for (const r of receipts.values()) parts.push(JSON.stringify(r))
    receipts.clear()
    if (handshakes) { parts.push(`[${R.HANDSHAKES},${handshakes}]`); handshakes = 0 }
    if (handOvers.length === 0) {
      post({ type: 'events', text: `[${parts.join(',')}]` })
      return
    }
    const batches = handOvers
    handOvers = []
    let size = 0
    for (const h of batches) size += 2 * slotCount(h.batch, h.sites)
    const slots = new Float64Array(size)
    let at = 0
    for (const { batch, sites } of batches) {
      const slotEnds: number[] = []
      let end = 0
      const startsAt = at
      const n = slotCount(batch, sites)
      for (const i of sites) {
        const from = i === 0 ? 0 : batch.slotEnds[i - 1]!
        const to = batch.slotEnds[i]!
        slots.set(batch.starts.subarray(from, to), startsAt + end)
        slots.set(batch.kwh.subarray(from, to), startsAt + n + end)
        end += to - from
        slotEnds.push(end)
      }
      at += 2 * n
      parts.push(JSON.stringify([R.HAND_OVER, batch.instructionId, batch.targetDate, batch.slotDurationSecs, sites.map(i => batch.siteIds[i]), slotEnds]))
    }
    const waiting = next!
    next = undefined
    seq = (seq + 1) | 0
    post({ type: 'events', text: `[${parts.join(',')}]`, seq, slots }, [slots.buffer])
    handed.when(seq, waiting.resolve)
  }
  return out
}

function slotCount (batch: Pick<InstructionBatch, 'slotEnds'>, sites: readonly number[]): number {
  let n = 0
  for (const i of sites) n += batch.slotEnds[i]! - (i === 0 ? 0 : batch.slotEnds[i - 1]!)
  return n
}

interface SerializedError { readonly type?: string; readonly message?: string; readonly stack?: string }
/** Error classes by name, so an error crosses with its type (`TypeError`, `EpxError`). */
const errorClasses = new Map<string, new (message?: string) => Error>()

function errorAgain (e: SerializedError): Error {
  const type = typeof e?.type === 'string' ? e.type : 'Error'
  let Class = errorClasses.get(type)
  if (!Class && errorClasses.size < MAX_SHAPES) errorClasses.set(type, Class = ({ [type]: class extends Error {} })[type]!)
  const err = new (Class ?? Error)(e?.message)
  const { type: _type, ...fields } = e ?? {}
  return Object.assign(err, fields)
}

/** A record's JSON; a value JSON cannot carry (a BigInt, a cycle) becomes a note, not a lost line. */
function jsonOf (values: unknown[]): string {
  try {
    return JSON.stringify(values)
  } catch (err) {
    return JSON.stringify(values.map(v => {
      try { JSON.stringify(v); return v } catch { return `[not serializable: ${(err as Error).message}]` }
    }))
  }
}

type WaitAsync = (cell: Int32Array, index: number, value: number) => { async: boolean; value: Promise<unknown> | string }

/** Door side of the hand-over cell: resolves each flush's waiters once its number is stored. */
function handedWaiter (cell: SharedArrayBuffer) {
  const handed = new Int32Array(cell)
  const waiting: Array<{ seq: number; resolve: () => void }> = []
  let watching = false
  const watch = async () => {
    watching = true
    try {
      while (waiting.length) {
        const now = Atomics.load(handed, 0)
        // Numbers wrap at 2³¹: a flush is done when the stored one is not behind it.
        while (waiting.length && ((now - waiting[0]!.seq) | 0) >= 0) waiting.shift()!.resolve()
        if (!waiting.length) break
        const w = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync(handed, 0, now)
        if (w.async) await w.value
      }
    } finally {
      watching = false
    }
  }
  return {
    when (seq: number, resolve: () => void) {
      waiting.push({ seq, resolve })
      if (!watching) void watch()
    },
  }
}

/** What the solver's thread does with what the door told. */
export interface EventsInDeps {
  readonly log: Logger
  readonly observer: ApiObserver & { storeError?(): void }
  readonly receipts: { record(companyId: string, siteId: string, targetDate: string, emittedAtMs: number, status: 200 | 304, atMs: number): void }
  readonly tokens: { touch(token: TokenRecord, nowMs: number): void }
  readonly programme?: (count: ProgrammeCount) => void
  /** Queues saved batches, in order, then calls `done` (`Enqueuer.handOver`). */
  readonly handOver: (batches: HandedBatch[], done: () => void) => void
  /** The hand-over cell this door's flushes are acknowledged in. */
  readonly handed: SharedArrayBuffer
}

export interface EventsIn {
  read(m: EventsMessage): void
  /** Resolves once every hand-over read so far is queued (or failed). */
  settled(): Promise<void>
}

/** The solver's thread's side, one per worker (ids are the worker's). */
export function eventsIn (deps: EventsInDeps): EventsIn {
  const loggers: Logger[] = [deps.log]
  const shapes: Shape[] = []
  const labels: Array<[string, string, number, string | undefined]> = []
  const handed = new Int32Array(deps.handed)
  /** Hand-overs read and not yet queued, and who waits for none to be left. */
  let outstanding = 0
  const idle: Array<() => void> = []

  const line = (r: any[]) => {
    const logger = loggers[r[1]] ?? deps.log
    const shape: Shape = r[2] === 0 ? { keys: r[3], level: r[4], msg: r[5] ?? undefined, errors: r[6] } : shapes[r[2]]!
    const from = r[2] === 0 ? 7 : 3
    const { keys } = shape
    const obj: Record<string, unknown> = {}
    for (let k = 0; k < keys.length; k++) obj[keys[k]!] = r[from + k]
    // An error field is an Error again, so the host's serializer prints its type and stack.
    for (const k of shape.errors) obj[keys[k]!] = errorAgain(obj[keys[k]!] as SerializedError)
    logger[shape.level](obj, shape.msg)
  }
  const rare = (e: RareEvent) => {
    switch (e.e) {
      case 'programme': deps.programme?.(e.c); return
      case 'handshakeFailed': deps.observer.handshakeFailed?.(e.reason); return
      case 'deadToken': deps.observer.deadToken?.(e.token, e.reason, e.nowMs); return
      case 'touch': deps.tokens.touch(e.token, e.nowMs); return
      case 'storeError': deps.observer.storeError?.()
    }
  }

  return {
    read (m) {
      const batches: HandedBatch[] = []
      let at = 0
      let records: any[][] = []
      try {
        records = JSON.parse(m.text) as any[][]
      } catch (err) {
        deps.log.error({ err }, 'the api worker sent events this thread could not read')
      }
      for (const r of records) {
        try {
          switch (r[0]) {
            case R.LINE: line(r); break
            case R.RECEIPT: deps.receipts.record(r[1], r[2], r[3], r[4], r[5], r[6]); break
            case R.ANSWERED: { const l = labels[r[1]]!; deps.observer.answered?.(l[0], l[1], l[2], l[3], r[2]); break }
            case R.LOGGER: loggers[r[1]] = (loggers[r[2]] ?? deps.log).child(r[3]); break
            case R.SHAPE: shapes[r[1]] = { level: r[2], msg: r[3] ?? undefined, keys: r[4], errors: r[5] }; break
            case R.LABELS: labels[r[1]] = [r[2], r[3], r[4], r[5] ?? undefined]; break
            case R.HANDSHAKES: for (let k = 0; k < r[1]; k++) deps.observer.handshake?.(); break
            case R.EVENT: rare(r[1]); break
            case R.HAND_OVER: {
              const slotEnds = r[5] as number[]
              const n = slotEnds.length ? slotEnds[slotEnds.length - 1]! : 0
              batches.push({
                instructionId: r[1], targetDate: r[2], slotDurationSecs: r[3], siteIds: r[4], slotEnds,
                starts: m.slots!.subarray(at, at + n), kwh: m.slots!.subarray(at + n, at + 2 * n),
              })
              at += 2 * n
            }
          }
        } catch {
          // A host's logger or metric that throws must not stop the other records (nor reach the host).
        }
      }
      if (m.seq === undefined) return
      const seq = m.seq
      outstanding++
      const done = () => {
        // The POSTs waiting on this flush answer 202 (door-events.ts, door side).
        Atomics.store(handed, 0, seq)
        Atomics.notify(handed, 0)
        if (--outstanding === 0) for (const w of idle.splice(0)) w()
      }
      try {
        deps.handOver(batches, done)
      } catch (err) {
        // Acknowledged all the same: the instructions are durable, and the next activation queues them again.
        deps.log.error({ err }, 'could not hand the door\'s saved programmes to the solver')
        done()
      }
    },
    settled: () => outstanding === 0 ? Promise.resolve() : new Promise<void>(resolve => { idle.push(resolve) }),
  }
}
