/**
 * What crosses between the solver's thread and the API door's worker (issue 12): the one
 * module that owns both directions, typed once. Small and explicit: the configuration at
 * start, a close, batches to enqueue (with their ack), programme and door events for the
 * audit trail and metrics, log records in batches, and the questions of the console and
 * metrics listeners that run in the same worker (door-asks.ts). Two things are shared
 * memory, not messages, because the door reads them synchronously on every request: the
 * host's clock (when it is not the system clock) and the store's test fault switches.
 * @module
 */
import type { MessagePort } from 'node:worker_threads'
import type { EpxConfig } from '../config.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import type { ProgrammeCount } from '../apply/programme-records.ts'
import type { Clock } from '../host/contract.ts'
import type { StoreFaults } from '../store/open-store.ts'
import type { TokenRecord } from '../store/tokens.ts'
import { EpxError, isEpxError, type ErrorCode } from '../errors.ts'
import type { AnswerMessage, AskMessage } from './door-asks.ts'

/** workerData: everything the door needs to open, as plain data. */
export interface DoorStart {
  readonly config: EpxConfig
  readonly dataDir: string
  readonly storePath: string
  /** The port to bind: the configured one at first, the one first bound after a restart. */
  readonly port: number
  /** The console's and the metrics listener's ports, likewise (they live in the door's worker). */
  readonly sidePorts?: SidePorts
  readonly clock: SharedClock
  readonly faults?: SharedArrayBuffer
}

export interface SidePorts { readonly console: number; readonly metrics: number }

/** The host clock as the door sees it: the system clock shifted, or asked of the main thread. */
export type SharedClock =
  | { readonly kind: 'system'; readonly offsetMs: number }
  | { readonly kind: 'asked'; readonly cell: SharedArrayBuffer; readonly port: MessagePort }

/** An error as data (EpxError keeps its code, message and details). */
export interface ErrorData { readonly code?: string; readonly message: string; readonly details?: Record<string, string>; readonly stack?: string }

/** One log line: the child bindings it was written under, level, fields, message. */
export interface LogRecord { readonly b: Record<string, unknown>; readonly l: 'debug' | 'info' | 'warn' | 'error'; readonly o: object; readonly m?: string }

/** Door → main. */
export type FromDoor =
  | { readonly type: 'listening'; readonly url: string; readonly consoleUrl?: string; readonly metricsUrl?: string }
  | { readonly type: 'failed'; readonly error: ErrorData }
  /** A saved batch's effective sites, for the solver's next cycle; answered by `enqueued`. */
  | { readonly type: 'enqueue'; readonly id: number; readonly batch: InstructionBatch; readonly effective: readonly boolean[] }
  | { readonly type: 'events'; readonly events: readonly DoorEvent[] }
  | { readonly type: 'closed' }
  /** The console or the metrics listener needs the solver's thread (door-asks.ts); answered by `answer`. */
  | AskMessage

/** Main → door. */
export type ToDoor =
  | { readonly type: 'enqueued'; readonly id: number; readonly error?: ErrorData }
  | { readonly type: 'close' }
  | AnswerMessage
  /** Test seam: the door throws outside any request, as a bug would. */
  | { readonly type: 'crash' }

/** What the door tells the main thread, batched per turn of the door's loop. */
export type DoorEvent =
  | { readonly e: 'log'; readonly r: LogRecord }
  /** A programme's counts (its audit record and flags are written by the door, with its instructions). */
  | { readonly e: 'programme'; readonly c: ProgrammeCount }
  | { readonly e: 'handshake' }
  | { readonly e: 'handshakeFailed'; readonly reason: string }
  | { readonly e: 'answered'; readonly a: [string, string, number, string | undefined, number] }
  | { readonly e: 'deadToken'; readonly token: TokenRecord; readonly reason: 'revoked' | 'expired'; readonly nowMs: number }
  | { readonly e: 'delivered'; readonly a: [string, string, string, number, 200 | 304, number] }
  | { readonly e: 'storeError' }
  /** A token's last use, written by the host's thread: its writes there are ordered with the host's own. */
  | { readonly e: 'touch'; readonly token: TokenRecord; readonly nowMs: number }

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
