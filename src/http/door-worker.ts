/**
 * The API door's thread (issue 12): the mTLS listener, its handshakes, request parsing,
 * authentication, validation, the conditional GET and the durable writes of programmes
 * run here, off the solver's event loop, with each programme's audit record and flags
 * (written in its save's transaction, `apply/programme-records.ts`). It opens the same
 * LMDB environment as the main thread. What belongs to the host (the solver's queue,
 * metrics, receipts, the host's logger, the audit of dead tokens) is told to the main
 * thread through `door-protocol.ts`. The console and
 * metrics listeners, when enabled, serve from this thread too (`worker-listeners.ts`).
 * @module
 */
import { parentPort, workerData } from 'node:worker_threads'
import pino from 'pino'
import type { Logger } from '../host/contract.ts'
import type { Caller } from '../auth/caller.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import { openStore } from '../store/open-store.ts'
import { openCompanies } from '../store/companies.ts'
import { openTokens, type TokenRecord } from '../store/tokens.ts'
import { openRevisions } from '../store/revisions.ts'
import { openInstructions } from '../store/instructions.ts'
import { openAudit } from '../store/audit.ts'
import { openInstructionFlags } from '../store/instruction-flags.ts'
import { programmeRecords } from '../apply/programme-records.ts'
import { createProgrammeReader } from '../apply/read-programme.ts'
import { receiveProgramme, type ReceiveParts } from '../apply/receive-programme.ts'
import { listenApi, type ApiListener } from './listener.ts'
import { inboundRoute } from './inbound-route.ts'
import { outboundRoute } from './outbound-route.ts'
import { bindFaults, clockOf, errorData, errorFrom, type DoorEvent, type DoorStart, type FromDoor, type LogRecord, type ToDoor } from './door-protocol.ts'
import { asker } from './door-asks.ts'
import type { WorkerListeners } from '../worker-listeners.ts'

const port = parentPort!
const start = workerData as DoorStart
const post = (m: FromDoor) => port.postMessage(m)

// Events (log lines, metrics, receipts) leave together, every FLUSH_MS of a busy door: a
// message costs each thread ~10-20 µs (its clone and its handler), so one per request
// cost the solver's thread more than serving the request itself had (bench/README.md).
// A log line reaches the host's logger within those few ms, possibly after its client
// has the answer; a crash of this thread loses at most those few ms of lines.
const FLUSH_MS = 5
/** A burst this long leaves at once (bounded messages, bounded memory). */
const FLUSH_EVENTS = 512
let events: DoorEvent[] = []
let timer: NodeJS.Timeout | undefined
const flush = () => {
  if (timer) { clearTimeout(timer); timer = undefined }
  if (events.length === 0) return
  const batch = events
  events = []
  try {
    post({ type: 'events', events: batch })
  } catch {
    // A field that cannot be cloned (a log line's odd object): sent as JSON instead.
    post({ type: 'events', events: JSON.parse(JSON.stringify(batch)) })
  }
}
const tell = (e: DoorEvent) => {
  events.push(e)
  if (events.length >= FLUSH_EVENTS) flush()
  else if (!timer) { timer = setTimeout(flush, FLUSH_MS); timer.unref() }
}

/** A Logger whose lines the main thread writes to the host's logger. */
function forwardingLogger (b: Record<string, unknown>): Logger {
  const line = (l: LogRecord['l']) => (o: object, m?: string) => tell({ e: 'log', r: { b, l, o: plain(o), m } })
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error'), child: c => forwardingLogger({ ...b, ...c }) }
}
/** Errors as pino would print them (their code and own fields kept; a clone would drop them). */
function plain (o: object): object {
  let out: Record<string, unknown> | undefined
  for (const [k, v] of Object.entries(o)) {
    if (v instanceof Error) (out ??= { ...o } as Record<string, unknown>)[k] = pino.stdSerializers.err(v)
  }
  return out ?? o
}

// The console and metrics listeners' questions to the solver's thread (door-asks.ts).
const asks = asker(post)

let nextAck = 0
const acks = new Map<number, { resolve: () => void; reject: (e: unknown) => void }>()
const enqueuer = {
  enqueueBatch (batch: InstructionBatch, effective: readonly boolean[]): Promise<void> {
    const id = nextAck++
    return new Promise<void>((resolve, reject) => {
      acks.set(id, { resolve, reject })
      post({ type: 'enqueue', id, batch, effective })
    })
  },
}

async function open (): Promise<{ close(): Promise<void> }> {
  const log = forwardingLogger({})
  const clock = clockOf(start.clock)
  const { config } = start
  const faults = start.faults ? bindFaults({}, start.faults) : undefined
  const store = openStore(start.storePath, {
    openInThisProcess: true, mapSizeBytes: config.store.mapSizeBytes, faults, log: log.child({ area: 'store' }), onWriteFailed: () => tell({ e: 'storeError' }),
  })
  const revisions = openRevisions(store, { retentionDays: config.publish.retentionDays })
  const reader = createProgrammeReader(config.inbound)
  const audit = openAudit(store, config.audit)
  const records = programmeRecords({
    audit, flags: openInstructionFlags(store), feasibility: { revisions }, log: log.child({ area: 'inbound' }), counted: c => tell({ e: 'programme', c }),
  })
  const parts: ReceiveParts = { reader, instructions: openInstructions(store), enqueuer, records }
  const inbound = {
    receive: (bytes: Buffer, caller: Caller, at: Date) => receiveProgramme(bytes, caller, at, parts),
    refusedAtDoor: (error: unknown, caller: Caller, at: Date) => records.refused(caller, error, at),
  }
  const receipts = { record: (...a: [string, string, string, number, 200 | 304, number]) => tell({ e: 'delivered', a }) }
  const companies = openCompanies(store)
  const routes = [inboundRoute({ maxBodyBytes: config.inbound.maxBodyBytes, inbound }), outboundRoute({ revisions, receipts })]
  const observer = {
    handshake: () => tell({ e: 'handshake' }),
    handshakeFailed: (reason: string) => tell({ e: 'handshakeFailed', reason }),
    answered: (...a: [string, string, number, string | undefined, number]) => tell({ e: 'answered', a }),
    deadToken: (token: TokenRecord, reason: 'revoked' | 'expired', nowMs: number) => tell({ e: 'deadToken', token, reason, nowMs }),
  }
  let api: ApiListener | undefined
  let side: WorkerListeners
  try {
    api = await listenApi({
      config: { ...config, api: { ...config.api, port: start.port } },
      dataDir: start.dataDir, log, clock, store, companies, tokens: { ...openTokens(store), touch: (token, nowMs) => tell({ e: 'touch', token, nowMs }) }, routes, observer,
    })
    // The console and metrics listeners, when enabled, live in this thread too (their code
    // loaded only then: every worker start, restarts included, would pay for it).
    const apiUrl = api.url
    side = !config.console.enabled && !config.metrics.enabled ? { close: async () => {} } : await import('../worker-listeners.ts').then(m => m.openWorkerListeners({
      config, dataDir: start.dataDir, ports: start.sidePorts, store, companies, revisions, instructions: parts.instructions, audit, clock, log, apiUrl, asks,
    }))
  } catch (err) {
    await api?.close().catch(() => {})
    await reader.close()
    revisions.close()
    await audit.flush().catch(() => {})
    await store.close()
    throw err
  }
  post({ type: 'listening', url: api.url.href, consoleUrl: side.consoleUrl?.href, metricsUrl: side.metricsUrl?.href })
  const listening = api
  return {
    async close () {
      try {
        await Promise.allSettled([listening.close(), side.close()])
        await reader.close()
      } finally {
        records.close()
        await audit.flush().catch(() => {})
        revisions.close()
        await store.close()
      }
    },
  }
}

let door: Promise<{ close(): Promise<void> }> | undefined
port.on('message', (m: ToDoor) => {
  if (m.type === 'enqueued') {
    const ack = acks.get(m.id)
    acks.delete(m.id)
    if (m.error) ack?.reject(errorFrom(m.error))
    else ack?.resolve()
  } else if (m.type === 'answer') {
    asks.answered(m)
  } else if (m.type === 'close') {
    void door!.then(d => d.close()).catch(() => {}).finally(() => {
      asks.failAll('the api worker is closing')
      flush()
      post({ type: 'closed' })
      port.close()
    })
  } else if (m.type === 'crash') {
    setImmediate(() => { throw new Error('api door crash requested by a test') })
  }
})
door = open()
door.catch((err: unknown) => {
  flush()
  post({ type: 'failed', error: errorData(err) })
  port.close()
})
