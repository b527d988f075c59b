/**
 * The door's side of its events (door/events-in.ts): records collected as small JSON
 * tuples, flushed in one message at most every few ms of a busy door, saved programmes
 * packed for their hand-over in the same message.
 * @module
 */
import type { Logger } from '../host/contract.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import { MAX_SHAPES, R, type EventsMessage, type Level, type Observed, type RareEvent, type WebhookOutcome } from './protocol.ts'
import { pairKeyOf } from '../store/revisions.ts'
import { slotsDigest } from '../apply/slots-digest.ts'

/** The door's side. */
export interface EventsOut {
  /** The plugin's logger, as the door writes to it. */
  readonly log: Logger
  answered(door: string, route: string, method: string, status: number, code: string | undefined, seconds: number): void
  handshake(): void
  receipt(companyId: string, siteId: string, targetDate: string, emittedAtMs: number, status: 200 | 304, atMs: number, pairKey?: string): void
  event(e: RareEvent): void
  /** Events written for the companies' feeds (the metric `epx_events_written_total`): counted here, one record per type a flush. */
  eventsWritten(type: string, n: number): void
  /** A webhook delivery's attempt (the metric `epx_webhook_deliveries_total`): counted here, one record per company and outcome a flush. */
  webhookAttempt(companyId: string, outcome: WebhookOutcome): void
  /**
   * Hands sites of a saved (durable) batch to the solver's queue with the next flush: at
   * once from a quiet door, within `flushMs` from a busy one (DECISIONS.md: "right after
   * the commit"). Its POST does not wait for it: a worker that dies before its flush
   * loses no instruction, its restart queues every effective one again (door/supervisor.ts).
   */
  handOver(batch: InstructionBatch, sites: readonly number[]): void
  /** Sends what is waiting now. */
  flush(): void
}

export interface EventsOutOptions {
  readonly observed: Observed
  /** The least time between two messages of a busy door. */
  readonly flushMs: number
  /** A burst this long leaves at once (bounded messages, bounded memory). */
  readonly maxRecords: number
  /** An error as the host's logger would print it (pino's serializer). */
  readonly errorJson: (err: Error) => object
}

export function eventsOut (post: (m: EventsMessage, transfer?: ArrayBuffer[]) => void, o: EventsOutOptions): EventsOut {
  let records: string[] = []
  /** Per company, then per pair (`pairKeyOf`): the last receipt of each since the last flush. */
  const receipts = new Map<string, Map<string, unknown[]>>()
  let receiptCount = 0
  let handshakes = 0
  /** Per type, events written since the last flush: one count a flush, not a record per write (each POST writes one). */
  const written = new Map<string, number>()
  /** Likewise the webhook attempts, by company and outcome. */
  const attempts = new Map<string, { companyId: string; outcome: WebhookOutcome; n: number }>()
  let handOvers: Array<{ batch: BatchSlots; sites: readonly number[] }> = []
  let timer: NodeJS.Timeout | undefined
  let immediate: NodeJS.Immediate | undefined

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
  /**
   * The shapes met by level and message, each with its keys and error positions: a line
   * finds its shape by comparing its keys with these (property names and messages are
   * interned strings: comparisons by reference), not by building and hashing a key text
   * per line.
   */
  const shapesSeen = new Map<string, Map<string, Array<{ keys: string[]; errors: string; id: number | undefined }>>>()
  const shapeOf = (level: Level, msg: string | undefined, keys: string[], errors: number[] | undefined): number | undefined => {
    let byMsg = shapesSeen.get(level)
    if (!byMsg) shapesSeen.set(level, byMsg = new Map())
    let known = byMsg.get(msg ?? '')
    if (!known) byMsg.set(msg ?? '', known = [])
    const errorText = errors?.join() ?? ''
    for (const k of known) {
      if (k.errors === errorText && sameKeys(k.keys, keys)) return k.id
    }
    const shapeKey = `${level}\0${msg ?? ''}\0${keys.join('\0')}\0${errorText}`
    let shape = shapeIds.get(shapeKey)
    if (shape === undefined && shapeIds.size < MAX_SHAPES) {
      shapeIds.set(shapeKey, shape = shapeIds.size + 1)
      add(JSON.stringify([R.SHAPE, shape, level, msg ?? null, keys, errors ?? []]))
    }
    // Kept only while its list is short: a message logged with ever-new keys is a shape 0 line.
    if (shape !== undefined && known.length < 8) known.push({ keys, errors: errorText, id: shape })
    return shape
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
    const shape = shapeOf(level, msg, keys, errors)
    if (shape === undefined) {
      // A shape 0 line: its shape is its own (values [keys, level, msg, errors, ...values]).
      values.splice(3, 0, keys, level, msg ?? null, errors ?? [])
    } else values[2] = shape
    add(jsonOf(values))
  }

  /**
   * The label sets met, by status, found by comparing the request's own texts (constants and
   * node's interned method names): no key text made per request.
   */
  const labelsByStatus = new Map<number, Array<{ door: string; route: string; method: string; code: string | undefined; id: number }>>()
  let labelCount = 0
  const labelsId = (door: string, route: string, method: string, status: number, code: string | undefined): number => {
    let known = labelsByStatus.get(status)
    if (known === undefined) labelsByStatus.set(status, known = [])
    for (const l of known) if (l.route === route && l.method === method && l.door === door && l.code === code) return l.id
    const id = ++labelCount
    known.push({ door, route, method, code, id })
    add(JSON.stringify([R.LABELS, id, door, route, method, status, code ?? null]))
    return id
  }
  /** (labels id, seconds) of the requests answered since the last flush; its size bounds a flush. */
  const answers = new Float64Array(2 * o.maxRecords)
  let answerCount = 0

  const out: EventsOut = {
    log: forwarding(0),
    // A pair of numbers a request: a record text each cost the door's thread its number's
    // formatting, and the solver's thread its parse (bench/README.md#where-the-doors-thread-spends-a-get).
    answered (door, route, method, status, code, seconds) {
      if (!o.observed.answered) return
      const id = labelsId(door, route, method, status, code)
      answers[answerCount++] = id
      answers[answerCount++] = seconds
      if (answerCount === answers.length) flush()
      else arm()
    },
    handshake () {
      if (!o.observed.handshakes) return
      handshakes++
      arm()
    },
    receipt (companyId, siteId, targetDate, emittedAtMs, status, atMs, pairKey = pairKeyOf(siteId, targetDate)) {
      // Turned into JSON at the flush: of a site polled in a loop, only the last is sent.
      // Keyed by texts the request already holds, none made here (a GET's own cost).
      let ofCompany = receipts.get(companyId)
      if (ofCompany === undefined) receipts.set(companyId, ofCompany = new Map())
      const r = ofCompany.get(pairKey)
      if (r !== undefined) {
        r[4] = emittedAtMs
        r[5] = status
        r[6] = atMs
      } else {
        ofCompany.set(pairKey, [R.RECEIPT, companyId, siteId, targetDate, emittedAtMs, status, atMs])
        receiptCount++
      }
      if (receiptCount >= o.maxRecords) flush()
      else arm()
    },
    event (e) {
      if (e.e === 'programme' && !o.observed.programmes) return
      add(jsonOf([R.EVENT, e]))
    },
    eventsWritten (type, n) {
      written.set(type, (written.get(type) ?? 0) + n)
      arm()
    },
    webhookAttempt (companyId, outcome) {
      const key = `${companyId}\0${outcome}`
      const a = attempts.get(key)
      if (a) a.n++
      else attempts.set(key, { companyId, outcome, n: 1 })
      arm()
    },
    // load-bearing: POST 1 × 96, the solver's thread from 25-28 to ~7 µs a POST with the log off (bench/README.md#the-doors-events-in-one-message-per-flush)
    handOver (batch, sites) {
      // One message carries every POST's hand-over of a busy flush: a message per POST
      // cost both threads a wake-up each (~45 µs of the
      // solver's thread under load: the context switch into a thread asleep in epoll).
      // Only what the flush reads: the rest of the batch (its stored records) is free at once,
      // not held for up to `flushMs` into the old generation.
      const { instructionId, targetDate, slotDurationSecs, siteIds, starts, kwh, slotEnds } = batch
      handOvers.push({ batch: { instructionId, targetDate, slotDurationSecs, siteIds, starts, kwh, slotEnds }, sites })
      arm()
    },
    flush,
  }

  function flush (): void {
    if (timer) { clearTimeout(timer); timer = undefined }
    if (immediate) { clearImmediate(immediate); immediate = undefined }
    if (records.length === 0 && answerCount === 0 && receiptCount === 0 && handOvers.length === 0 && handshakes === 0 && written.size === 0 && attempts.size === 0) return
    sentAt = Date.now()
    const parts = records
    records = []
    drain(written, (n, type) => parts.push(JSON.stringify([R.EVENT, { e: 'eventsWritten', type, n }])))
    drain(attempts, a => parts.push(JSON.stringify([R.EVENT, { e: 'webhookAttempts', ...a }])))
    drain(receipts, ofCompany => { for (const r of ofCompany.values()) parts.push(JSON.stringify(r)) })
    receiptCount = 0
    if (handshakes) { parts.push(`[${R.HANDSHAKES},${handshakes}]`); handshakes = 0 }
    const answered = answerCount === 0 ? undefined : answers.slice(0, answerCount)
    answerCount = 0
    if (handOvers.length === 0) {
      if (answered === undefined) post({ type: 'events', text: `[${parts.join(',')}]` })
      else post({ type: 'events', text: `[${parts.join(',')}]`, answered }, [answered.buffer])
      return
    }
    const batches = handOvers
    handOvers = []
    let size = 0
    for (const h of batches) size += 2 * slotCount(h.batch, h.sites)
    const slots = new Float64Array(size)
    let at = 0
    for (const { batch, sites } of batches) {
      const siteIds: string[] = []
      const slotEnds: number[] = []
      const digests: number[] = []
      let end = 0
      const startsAt = at
      const n = slotCount(batch, sites)
      for (const i of sites) {
        siteIds.push(batch.siteIds[i]!)
        const from = i === 0 ? 0 : batch.slotEnds[i - 1]!
        const to = batch.slotEnds[i]!
        slots.set(batch.starts.subarray(from, to), startsAt + end)
        slots.set(batch.kwh.subarray(from, to), startsAt + n + end)
        // Here, not on the solver's thread: ~0.22 µs of hashing a site of 96 slots (bench/README.md#the-doors-events-in-one-message-per-flush).
        digests.push(slotsDigest(batch.starts, batch.kwh, from, to, batch.slotDurationSecs))
        end += to - from
        slotEnds.push(end)
      }
      at += 2 * n
      parts.push(JSON.stringify([R.HAND_OVER, batch.instructionId, batch.targetDate, batch.slotDurationSecs, siteIds, slotEnds, digests]))
    }
    if (answered === undefined) post({ type: 'events', text: `[${parts.join(',')}]`, slots }, [slots.buffer])
    else post({ type: 'events', text: `[${parts.join(',')}]`, slots, answered }, [slots.buffer, answered.buffer])
  }
  return out
}

/** What a hand-over sends of its batch (the solver's side reads it as `HandedBatch`, apply/enqueue.ts). */
type BatchSlots = Pick<InstructionBatch, 'instructionId' | 'targetDate' | 'slotDurationSecs' | 'siteIds' | 'starts' | 'kwh' | 'slotEnds'>

/** The same names in the same order. A loop, not `every` with a closure made per line (bench/README.md#closures-made-per-request). */
function sameKeys (a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

function slotCount (batch: Pick<InstructionBatch, 'slotEnds'>, sites: readonly number[]): number {
  let n = 0
  for (const i of sites) n += batch.slotEnds[i]! - (i === 0 ? 0 : batch.slotEnds[i - 1]!)
  return n
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

/**
 * Each entry of a map, then gone from it: deleted one by one, not cleared, because a
 * cleared map's old table keeps what it held, reached from the old generation until a full
 * collection (the same reason as http/in-flight.ts), and these are emptied at every flush.
 */
function drain<K, V> (map: Map<K, V>, each: (value: V, key: K) => void): void {
  for (const [key, value] of map) {
    each(value, key)
    map.delete(key)
  }
}
