/**
 * What crosses between the solver's thread and the API door's worker (`api.inWorker`): the one
 * module that owns both directions, typed once. Small and explicit: the configuration at
 * start, a close, the door's events in batches (log records, metrics, receipts and the
 * saved programmes to enqueue: door/events-in.ts), and the questions of the console and
 * metrics listeners that run in the same worker (door/asks.ts). Two things are shared
 * memory, not messages: the host's clock (when it is not the system clock) and the
 * store's test fault switches, because the door reads them synchronously on every
 * request.
 * @module
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads'
import type { EpxConfig } from '../config.ts'
import type { Clock } from '../host/contract.ts'
import type { StoreFaults, StoreThreadShare } from '../store/open-store.ts'
import { EpxError, isEpxError, type ErrorCode } from '../errors.ts'
import type { PublishReport, Site } from '../host/contract.ts'
import type { RunRequest } from '../publish/publish-run.ts'
import type { ReadyResult } from '../metrics/server.ts'
import type { TokenRecord } from '../store/tokens.ts'
import type { ProgrammeCount } from '../apply/programme-records.ts'

/** workerData: everything the door needs to open, as plain data. */
export interface DoorStart {
  readonly config: EpxConfig
  readonly dataDir: string
  readonly storePath: string
  /** store.kind "postgres": the main store's availability cell (its change feed is up), read by the worker's store. */
  readonly storeShare?: StoreThreadShare
  /** The process's event bell (store/event-bell.ts): the door's feed wakes on every thread's events. */
  readonly eventBell: SharedArrayBuffer
  /** The port to bind: the configured one at first, the one first bound after a restart. */
  readonly port: number
  /** The console's and the metrics listener's ports, likewise (they live in the door's worker). */
  readonly sidePorts?: SidePorts
  /** Open everything, then wait for `bind` before binding (door/worker.ts: a standby door). */
  readonly standby?: boolean
  readonly clock: SharedClock
  readonly faults?: SharedArrayBuffer
  /** What the solver's thread listens to: the door records nothing else. */
  readonly observed: Observed
  /** Test seam: end at once with code 0, telling nothing (a thread that never reached its code). */
  readonly endSilently?: boolean
}

export interface SidePorts { readonly console: number; readonly metrics: number }

/** The host clock as the door sees it: the system clock shifted, or asked of the main thread. */
export type SharedClock =
  | { readonly kind: 'system'; readonly offsetMs: number }
  | { readonly kind: 'asked'; readonly cell: SharedArrayBuffer; readonly port: MessagePort }

/** An error as data (EpxError keeps its code, message and details). */
export interface ErrorData { readonly code?: string; readonly message: string; readonly details?: Record<string, string>; readonly stack?: string }

/** Door → main. */
export type FromDoor =
  | { readonly type: 'listening'; readonly url: string; readonly consoleUrl?: string; readonly metricsUrl?: string }
  | { readonly type: 'failed'; readonly error: ErrorData }
  /** Log records, metrics, receipts and saved programmes to queue, in batches (door/events-in.ts). */
  | EventsMessage
  /** Every event up to `sync` number `id` has been sent (messages keep their order). */
  | { readonly type: 'synced'; readonly id: number }
  | { readonly type: 'closed' }
  /** A standby door is open and waits for `bind`. */
  | { readonly type: 'standby' }
  /**
   * The thread had a fault (an exception or rejection no code handled, its heap near its
   * limit): its listeners are cut, it closes its store and exits (door/worker.ts).
   */
  | { readonly type: 'fault'; readonly cause: FaultCause; readonly error: ErrorData; readonly tid?: number }
  /** The console or the metrics listener needs the solver's thread (door/asks.ts); answered by `answer`. */
  | AskMessage

/**
 * How a test makes the door's thread die: an exception thrown on its event loop, one
 * thrown by a request handler while the HTTP parser calls it, a promise rejection no one
 * handles, its heap grown to its limit.
 */
export type DoorFault = 'loop' | 'handler' | 'rejection' | 'heap'
/** What ended a door's thread, as its supervisor logs and counts it. */
export type FaultCause = 'exception' | 'rejection' | 'heap' | 'exit'

/** Main → door. */
export type ToDoor =
  | { readonly type: 'close' }
  /** A standby door takes over: it binds its ports (its predecessor's) and serves. */
  | { readonly type: 'bind' }
  | AnswerMessage
  /** Send what is waiting now, then `synced` (`Door.caughtUp`). */
  | { readonly type: 'sync'; readonly id: number }
  /** Test seam: the door's thread dies as a bug would (`DoorFault`). */
  | { readonly type: 'crash'; readonly how?: DoorFault }

// The door's events (events-out.ts writes them, events-in.ts reads them).

/** The `events` message. */
export interface EventsMessage {
  readonly type: 'events'
  /** JSON: an array of records, each an array led by its kind (`R`). */
  readonly text: string
  /** The hand-overs' slots, each batch's starts then its energies, in the order of their records. */
  readonly slots?: Float64Array
  /**
   * The answered requests, a (labels id, seconds) pair each, read after the records (their
   * `R.LABELS` are in this message's or an earlier one's): numbers, not a record text each.
   */
  readonly answered?: Float64Array
}

/** What the solver's thread listens to, told to the door at its start (nothing else is recorded). */
export interface Observed { readonly answered: boolean; readonly handshakes: boolean; readonly programmes: boolean }

/** Events rare enough to travel as they are. */
export type RareEvent =
  | { readonly e: 'programme'; readonly c: ProgrammeCount }
  | { readonly e: 'handshakeFailed'; readonly reason: string }
  | { readonly e: 'deadToken'; readonly token: TokenRecord; readonly reason: 'revoked' | 'expired'; readonly nowMs: number }
  | { readonly e: 'storeError' }
  /** Events this thread wrote, durable (`epx_events_written_total`). */
  | { readonly e: 'eventsWritten'; readonly type: string; readonly n: number }
  /** Webhook attempts of the deliverer's thread (`epx_webhook_deliveries_total`), `n` of one company and outcome. */
  | { readonly e: 'webhookAttempts'; readonly companyId: string; readonly outcome: WebhookOutcome; readonly n: number }
  /** A request refused 429 RATE_LIMITED (`ApiObserver.rateLimited`). */
  | { readonly e: 'rateLimited'; readonly companyId: string; readonly door: string; readonly kind: 'get' | 'post'; readonly nowMs: number }
  /** A programme refused 429 QUOTA_EXCEEDED (`ApiObserver.quotaExceeded`). */
  | { readonly e: 'quotaExceeded'; readonly companyId: string; readonly nowMs: number }
  /** A token's last use, written by the host's thread: its writes there are ordered with the host's own. */
  | { readonly e: 'touch'; readonly token: TokenRecord; readonly nowMs: number }

/** What a webhook attempt came to: a 2xx, or anything else (tried again later, or the endpoint marked failing). */
export type WebhookOutcome = 'delivered' | 'failed-attempt'

/** Record kinds (exported for the tests that read messages). */
export const R = {
  /** [R.LOGGER, id, parentId, bindings]: a child logger (id 0 is the plugin's logger). */
  LOGGER: 0,
  /** [R.SHAPE, id, level, msg, keys, errors]: what the lines of that shape share (`errors`: which fields were Errors). */
  SHAPE: 1,
  /** [R.LINE, loggerId, shapeId, ...values]: one log line, its fields in the shape's key order. */
  LINE: 2,
  /** [R.LABELS, id, door, route, method, status, code]: the labels of answered requests. */
  LABELS: 3,
  /** [R.HANDSHAKES, count]. */
  HANDSHAKES: 5,
  /** [R.RECEIPT, companyId, siteId, targetDate, emittedAtMs, status, atMs]. */
  RECEIPT: 6,
  /** [R.EVENT, RareEvent]. */
  EVENT: 7,
  /** [R.HAND_OVER, instructionId, targetDate, slotDurationSecs, siteIds, slotEnds, digests]: its slots are next in `slots`; a digest per site (`apply/slots-digest.ts`). */
  HAND_OVER: 8,
} as const

export type Level = 'debug' | 'info' | 'warn' | 'error'
export interface Shape { readonly level: Level; readonly msg: string | undefined; readonly keys: string[]; readonly errors: number[] }

/** Shapes past this many travel as whole objects (a shape a line: a bug's, not the door's). */
export const MAX_SHAPES = 1000

// The questions of the worker's console and metrics listeners (asks.ts).

/** Each question (`q`) and its answer (`a`). */
export interface Asks {
  readonly sites: { q: { ask: 'sites' }; a: readonly Site[] }
  readonly publish: { q: { ask: 'publish'; request: RunRequest }; a: PublishReport }
  /** The registry's exposition text, as `GET /metrics` serves it. */
  readonly metrics: { q: { ask: 'metrics' }; a: { contentType: string; text: string } }
  readonly readiness: { q: { ask: 'readiness' }; a: readonly ReadyResult[] }
}
export type Ask = Asks[keyof Asks]['q']
/** The solver's thread's side: one answering function per question. */
export type AskAnswers = { readonly [K in keyof Asks]: (q: Asks[K]['q']) => Promise<Asks[K]['a']> }

/** The messages, as door/protocol.ts carries them. */
export interface AskMessage { readonly type: 'ask'; readonly id: number; readonly q: Ask }
export interface AnswerMessage { readonly type: 'answer'; readonly id: number; readonly a?: unknown; readonly error?: ErrorData }

export function errorData (err: unknown): ErrorData {
  if (isEpxError(err)) return { code: err.code, message: err.message, details: err.details ? { ...err.details } : undefined }
  const e = err as Error | undefined
  return { message: e?.message ?? String(err), stack: e?.stack }
}

/** The error again on this side: an EpxError with its code and message, or an Error. */
export function errorFrom (data: ErrorData): Error {
  if (data.code === undefined) return Object.assign(new Error(data.message), data.stack ? { stack: data.stack } : {})
  const err = new EpxError(data.code as ErrorCode, [], data.details ? { details: data.details } : {})
  err.message = data.message
  return err
}

/** Cell layout of an asked clock (16 bytes): [0] Int32 flag (1 = answered), [8..16) the host's now in ms. */
/**
 * The host clock as the door will read it: the system clock (or one at a fixed offset
 * from it) is read in the worker at no cost to the host (the offset is returned); any
 * other clock (a test's manual clock, a host replaying time) is asked of the main
 * thread, exactly (undefined: `answerClock`).
 */
export function systemOffset (clock: Clock): number | undefined {
  const a = clock.now().getTime() - Date.now()
  // Two readings 2 ms apart: a clock that stands still (or jumps) is not the system's.
  const until = Date.now() + 2
  while (Date.now() < until) { /* a 2 ms wait, once per activation */ }
  const b = clock.now().getTime() - Date.now()
  return Math.abs(a - b) <= 1 && Math.abs(a) <= 1000 ? b : undefined
}

/** Main side of an asked clock: each question is answered with the host's now. */
export function answerClock (clock: Clock, port: MessagePort, cell: SharedArrayBuffer): void {
  const flag = new Int32Array(cell, 0, 1)
  const ms = new Float64Array(cell, 8, 1)
  port.on('message', () => {
    ms[0] = clock.now().getTime()
    Atomics.store(flag, 0, 1)
    Atomics.notify(flag, 0)
  })
}

/**
 * The host's clock for a worker about to start (`offsetMs`: `systemOffset`'s reading): the
 * system's with its offset, or asked of this thread over a new channel, whose port here
 * (`asked`) is closed when the worker ends and whose other port travels in `transferList`.
 */
export function shareClock (clock: Clock, offsetMs: number | undefined): { clock: SharedClock; asked?: MessagePort; transferList: MessagePort[] } {
  if (offsetMs !== undefined) return { clock: { kind: 'system', offsetMs }, transferList: [] }
  const { port1, port2 } = new MessageChannel()
  const cell = new SharedArrayBuffer(16)
  answerClock(clock, port1, cell)
  port1.unref()
  return { clock: { kind: 'asked', cell, port: port2 }, asked: port1, transferList: [port2] }
}

/** How long the door waits for the main thread's answer before it reads its last one (a busy host). */
const ASK_TIMEOUT_MS = 1000

/** Door side: the host clock, synchronous. */
export function clockOf (shared: SharedClock): Clock {
  if (shared.kind === 'system') {
    const offset = shared.offsetMs
    return { now: () => new Date(Date.now() + offset) }
  }
  const flag = new Int32Array(shared.cell, 0, 1)
  const ms = new Float64Array(shared.cell, 8, 1)
  const port = shared.port
  return {
    now () {
      Atomics.store(flag, 0, 0)
      port.postMessage(0)
      Atomics.wait(flag, 0, 0, ASK_TIMEOUT_MS)
      return new Date(ms[0]!)
    },
  }
}

const FAULT_KEYS = ['unavailable', 'failWriteAfter'] as const
/** Int32 per key: `unavailable` 0/1; `failWriteAfter` -1 when unset. */
const UNSET = -1

/**
 * The test fault switches, shared: the object a test holds keeps working (its fields
 * become accessors over shared memory), and the door's store reads the same memory.
 */
export function shareFaults (faults: StoreFaults): SharedArrayBuffer {
  const cell = new SharedArrayBuffer(4 * FAULT_KEYS.length)
  const now = { ...faults }
  Atomics.store(new Int32Array(cell), 1, UNSET)
  bindFaults(faults, cell)
  Object.assign(faults, now)
  return cell
}

/** Fault switches over shared memory (the door's side, or the test's object made shared). */
export function bindFaults (target: StoreFaults, cell: SharedArrayBuffer): StoreFaults {
  const cells = new Int32Array(cell)
  Object.defineProperties(target, {
    unavailable: {
      get: () => Atomics.load(cells, 0) === 1 ? true : undefined,
      set: (v: boolean | undefined) => { Atomics.store(cells, 0, v ? 1 : 0) },
      enumerable: true, configurable: true,
    },
    failWriteAfter: {
      get: () => { const v = Atomics.load(cells, 1); return v === UNSET ? undefined : v },
      set: (v: number | undefined) => { Atomics.store(cells, 1, v === undefined ? UNSET : v) },
      enumerable: true, configurable: true,
    },
  })
  return target
}
