/**
 * What the API door's worker tells the solver's thread (DECISIONS.md
 * "Robustness": the host's loop sees only enqueue calls, cycle reports and batched log
 * records): the `events` message, the one the solver's thread pays for on every request,
 * and that thread's side of it (the door's side: door/events-out.ts). So it is built to
 * cost that thread as little as possible:
 *
 * - one message per flush, at most one every few ms of a busy door, not one per request
 *   (each message costs the receiving thread a wake-up and a handler);
 * - its records are one JSON text of small arrays: a structured clone of an object per
 *   request cost the solver's thread several µs to rebuild; `JSON.parse` of tuples is a
 *   fraction of that;
 * - a log line's field names, level and message travel once (a *shape*), then each line
 *   is its values alone; a child logger's bindings travel once too;
 * - delivery receipts are deduplicated per flush (the last one of a company, site and
 *   day is all the receipts keep);
 * - metrics' events are recorded only when the solver's thread has metrics;
 * - saved programmes are handed over as their sites' ids and slots (one Float64Array
 *   per flush, transferred), with the flush's other records: their POSTs have answered
 *   202 already (durable), and nothing answers back.
 * @module
 */
import type { Logger } from '../host/contract.ts'
import type { TokenRecord } from '../store/tokens.ts'
import type { ProgrammeCount } from '../apply/programme-records.ts'
import type { HandedBatch } from '../apply/enqueue.ts'
import type { ApiObserver } from '../http/observer.ts'
import { MAX_SHAPES, R, type EventsMessage, type RareEvent, type Shape, type WebhookOutcome } from './protocol.ts'

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

/** What the solver's thread does with what the door told. */
export interface EventsInDeps {
  readonly log: Logger
  readonly observer: ApiObserver & { storeError?(): void; eventsWritten?(type: string, n: number): void; webhookAttempts?(companyId: string, outcome: WebhookOutcome, n: number): void }
  readonly receipts: { record(companyId: string, siteId: string, targetDate: string, emittedAtMs: number, status: 200 | 304, atMs: number): void }
  readonly tokens: { touch(token: TokenRecord, nowMs: number): void }
  readonly programme?: (count: ProgrammeCount) => void
  /** Queues saved batches, in order, then calls `done` (`Enqueuer.handOver`). */
  readonly handOver: (batches: HandedBatch[], done: () => void) => void
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
  const labels: Array<[string, string, string, number, string | undefined]> = []
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
      case 'rateLimited': deps.observer.rateLimited?.(e.companyId, e.door, e.kind, e.nowMs); return
      case 'quotaExceeded': deps.observer.quotaExceeded?.(e.companyId, e.nowMs); return
      case 'touch': deps.tokens.touch(e.token, e.nowMs); return
      case 'storeError': deps.observer.storeError?.(); return
      case 'eventsWritten': deps.observer.eventsWritten?.(e.type, e.n); return
      case 'webhookAttempts': deps.observer.webhookAttempts?.(e.companyId, e.outcome, e.n)
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
            case R.LOGGER: loggers[r[1]] = (loggers[r[2]] ?? deps.log).child(r[3]); break
            case R.SHAPE: shapes[r[1]] = { level: r[2], msg: r[3] ?? undefined, keys: r[4], errors: r[5] }; break
            case R.LABELS: labels[r[1]] = [r[2], r[3], r[4], r[5], r[6] ?? undefined]; break
            case R.HANDSHAKES: for (let k = 0; k < r[1]; k++) deps.observer.handshake?.(); break
            case R.EVENT: rare(r[1]); break
            case R.HAND_OVER: {
              const slotEnds = r[5] as number[]
              const n = slotEnds.length ? slotEnds[slotEnds.length - 1]! : 0
              batches.push({
                instructionId: r[1], targetDate: r[2], slotDurationSecs: r[3], siteIds: r[4], slotEnds, digests: r[6],
                starts: m.slots!.subarray(at, at + n), kwh: m.slots!.subarray(at + n, at + 2 * n),
              })
              at += 2 * n
            }
          }
        } catch {
          // A host's logger or metric that throws must not stop the other records (nor reach the host).
        }
      }
      const answered = m.answered
      if (answered !== undefined && deps.observer.answered) {
        for (let k = 0; k < answered.length; k += 2) {
          const l = labels[answered[k]!]
          try {
            if (l !== undefined) deps.observer.answered(l[0], l[1], l[2], l[3], l[4], answered[k + 1]!)
          } catch {
            // As a record's: a host's metric that throws must not stop the others.
          }
        }
      }
      if (batches.length === 0) return
      outstanding++
      const done = () => {
        if (--outstanding === 0) for (const w of idle.splice(0)) w()
      }
      try {
        deps.handOver(batches, done)
      } catch (err) {
        // The instructions are durable: the next activation queues them again.
        deps.log.error({ err }, 'could not hand the door\'s saved programmes to the solver')
        done()
      }
    },
    settled: () => outstanding === 0 ? Promise.resolve() : new Promise<void>(resolve => { idle.push(resolve) }),
  }
}
