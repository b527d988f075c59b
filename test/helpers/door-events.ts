/**
 * Both ends of the door's events in one thread (`src/door/events-in.ts`,
 * `door/events-out.ts`): each message cloned as postMessage would (its slots transferred),
 * read at once by the solver's side, whose logger, receipts, metrics and queue are recorded.
 *
 *   const p = eventsPair(t, { observed?, handOver?, flushMs? })
 *   p.door.log.info({ ... }, 'msg'); p.door.flush(); p.lines (parsed pino lines), p.messages
 *
 * `batch(id, sites, slotsEach)` makes an instruction batch whose slots are told apart.
 * @module
 */
import type { Test } from 'tap'
import pino from 'pino'
import { eventsIn } from '../../src/door/events-in.ts'
import type { EventsMessage, Observed } from '../../src/door/protocol.ts'
import { eventsOut } from '../../src/door/events-out.ts'
import type { HandedBatch } from '../../src/apply/enqueue.ts'
import type { Logger } from '../../src/host/contract.ts'
import type { InstructionBatch } from '../../src/contract/instruction.ts'

export const ALL: Observed = { answered: true, handshakes: true, programmes: true }

export function eventsPair (t: Test, o: { observed?: Observed; handOver?: (b: HandedBatch[], done: () => void) => void; flushMs?: number } = {}) {
  const lines: any[] = []
  const log = pino({ level: 'debug' }, { write: (l: string) => { lines.push(JSON.parse(l)) } }) as unknown as Logger
  const receipts: unknown[][] = []
  const answered: unknown[][] = []
  const programmes: unknown[] = []
  let handshakes = 0
  const eventsWritten: Array<[string, number]> = []
  const webhookAttempts: Array<[string, string, number]> = []
  const handed: HandedBatch[][] = []
  const messages: EventsMessage[] = []
  const main = eventsIn({
    log,
    observer: { answered: (...a) => { answered.push(a) }, handshake: () => { handshakes++ }, eventsWritten: (type, n) => { eventsWritten.push([type, n]) }, webhookAttempts: (company, outcome, n) => { webhookAttempts.push([company, outcome, n]) } },
    receipts: { record: (...a) => { receipts.push(a) } },
    tokens: { touch () {} },
    programme: c => { programmes.push(c) },
    handOver: o.handOver ?? ((b, done) => { handed.push(b); done() }),
  })
  const door = eventsOut((m, transfer) => {
    const copy = structuredClone(m, { transfer })
    messages.push(copy)
    main.read(copy)
  }, { observed: o.observed ?? ALL, flushMs: o.flushMs ?? 60_000, maxRecords: 1000, errorJson: err => pino.stdSerializers.err(err) })
  t.teardown(() => door.flush())
  return { door, lines, receipts, answered, programmes, eventsWritten, webhookAttempts, handed, messages, handshakes: () => handshakes, main }
}

export const records = (m: EventsMessage) => JSON.parse(m.text) as unknown[][]

/** A batch of `sites` sites, each with its own slots. */
export function batch (id: string, sites: string[], slotsEach: number): InstructionBatch {
  const n = sites.length * slotsEach
  const starts = new Float64Array(n)
  const kwh = new Float64Array(n)
  for (let k = 0; k < n; k++) { starts[k] = Date.UTC(2026, 10, 21, 23) + (k % slotsEach) * 900_000; kwh[k] = k }
  return {
    instructionId: id, targetDate: '2026-11-22', emittedAt: '2026-11-21T12:00:00Z', emittedAtMs: 0, emittedAtNanos: 0, slotDurationSecs: 900,
    siteIds: sites, records: new Uint8Array(0), recordEnds: new Uint32Array(sites.length),
    starts, kwh, slotEnds: Uint32Array.from(sites, (_, i) => (i + 1) * slotsEach),
  }
}

