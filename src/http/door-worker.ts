/**
 * The API door's thread (`api.inWorker`): the mTLS listener, its handshakes, request parsing,
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
// pino's own error serializer, without pino: the worker logs through the host's logger
// on the main thread, and pino's module graph cost this thread ~1.3 MB of heap.
import { err as serializeError } from 'pino-std-serializers'
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
import { bindFaults, clockOf, errorData, type DoorStart, type FromDoor, type ToDoor } from './door-protocol.ts'
import { eventsOut } from './door-events-out.ts'
import { sitesToQueue } from '../apply/enqueue.ts'
import { asker } from './door-asks.ts'
import type { WorkerListeners } from '../worker-listeners.ts'
import { nameThisThread, niceThisThread } from '../os-thread.ts'

const port = parentPort!
const start = workerData as DoorStart
nameThisThread('epx-door')
const niced = niceThisThread(start.config.api.workerNice)
const post = (m: FromDoor, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer)

// Events (log lines, metrics, receipts, saved programmes to queue) leave together, at
// most one message every FLUSH_MS of a busy door (at once on a quiet one: door-events.ts):
// a message costs the solver's thread a wake-up and a handler, so one per request cost it
// more than serving the request itself had (bench/README.md). A log line reaches the
// host's logger within those ms, possibly after its client has the answer; a crash of this
// thread loses at most those ms of lines (never a programme: the restart queues every
// effective one again).
const FLUSH_MS = 20
/** A burst this long leaves at once (bounded messages, bounded memory). */
const FLUSH_RECORDS = 1024
const events = eventsOut(post, {
  observed: start.observed, flushMs: FLUSH_MS, maxRecords: FLUSH_RECORDS,
  // Errors as pino prints them (their code and own fields kept; JSON would drop them).
  errorJson: err => serializeError(err),
})

// The console and metrics listeners' questions to the solver's thread (door-asks.ts).
const asks = asker(post)

async function open (): Promise<{ close(): Promise<void> }> {
  const log = events.log
  if (!niced) log.info({ workerNice: start.config.api.workerNice }, 'the api worker runs at the solver\'s priority: this system lets no thread set its own (api.workerNice)')
  const clock = clockOf(start.clock)
  const { config } = start
  const faults = start.faults ? bindFaults({}, start.faults) : undefined
  const store = openStore(start.storePath, {
    openInThisProcess: true, mapSizeBytes: config.store.mapSizeBytes, faults, log: log.child({ area: 'store' }), onWriteFailed: () => events.event({ e: 'storeError' }),
  })
  const revisions = openRevisions(store, { retentionDays: config.publish.retentionDays })
  const reader = createProgrammeReader(config.inbound)
  const audit = openAudit(store, config.audit)
  const records = programmeRecords({
    audit, flags: openInstructionFlags(store), feasibility: { revisions }, log: log.child({ area: 'inbound' }), counted: c => events.event({ e: 'programme', c }),
  })
  const instructions = openInstructions(store)
  // Saved here, queued by the solver's thread: only the sites still effective, their slots alone.
  const enqueuer = {
    async enqueueBatch (batch: InstructionBatch, effective: readonly boolean[]): Promise<void> {
      const sites = sitesToQueue(instructions, batch, effective)
      if (sites.length) events.handOver(batch, sites)
    },
  }
  const parts: ReceiveParts = { reader, instructions, enqueuer, records }
  const inbound = {
    receive: (bytes: Buffer, caller: Caller, at: Date) => receiveProgramme(bytes, caller, at, parts),
    refusedAtDoor: (error: unknown, caller: Caller, at: Date) => records.refused(caller, error, at),
  }
  const receipts = { record: events.receipt }
  const companies = openCompanies(store)
  const routes = [inboundRoute({ maxBodyBytes: config.inbound.maxBodyBytes, inbound }), outboundRoute({ revisions, receipts })]
  const observer = {
    handshake: events.handshake,
    handshakeFailed: (reason: string) => events.event({ e: 'handshakeFailed', reason }),
    answered: events.answered,
    deadToken: (token: TokenRecord, reason: 'revoked' | 'expired', nowMs: number) => events.event({ e: 'deadToken', token, reason, nowMs }),
  }
  let api: ApiListener | undefined
  let side: WorkerListeners
  try {
    api = await listenApi({
      config: { ...config, api: { ...config.api, port: start.port } },
      dataDir: start.dataDir, log, clock, store, companies, tokens: { ...openTokens(store), touch: (token, nowMs) => events.event({ e: 'touch', token, nowMs }) }, routes, observer,
    })
    // The console and metrics listeners, when enabled, live in this thread too (their code
    // loaded only then: every worker start, restarts included, would pay for it).
    const apiUrl = api.url
    side = !config.console.enabled && !config.metrics.enabled ? { close: async () => {} } : await import('../worker-listeners.ts').then(m => m.openWorkerListeners({
      config, dataDir: start.dataDir, ports: start.sidePorts, store, companies, revisions, instructions, audit, clock, log, apiUrl, asks,
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
  if (m.type === 'answer') {
    asks.answered(m)
  } else if (m.type === 'close') {
    void door!.then(d => d.close()).catch(() => {}).finally(() => {
      asks.failAll('the api worker is closing')
      events.flush()
      post({ type: 'closed' })
      port.close()
    })
  } else if (m.type === 'sync') {
    events.flush()
    post({ type: 'synced', id: m.id })
  } else if (m.type === 'crash') {
    setImmediate(() => { throw new Error('api door crash requested by a test') })
  }
})
door = open()
door.catch((err: unknown) => {
  events.flush()
  post({ type: 'failed', error: errorData(err) })
  port.close()
})
