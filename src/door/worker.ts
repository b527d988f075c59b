/**
 * The API door's thread (`api.inWorker`): the mTLS listener, its handshakes, request parsing,
 * authentication, validation, the conditional GET and the durable writes of programmes
 * run here, off the solver's event loop, with each programme's audit record and flags
 * (written in its save's transaction, `apply/programme-records.ts`). It opens the same
 * LMDB environment as the main thread. What belongs to the host (the solver's queue,
 * metrics, receipts, the host's logger, the audit of dead tokens) is told to the main
 * thread through `protocol.ts`. The API listener, and the console and metrics listeners
 * when enabled, are wired by `wire.ts`, the same function the solver's thread calls when
 * the door runs there; here its port to the host is this thread's messages.
 * @module
 */
import { parentPort, workerData } from 'node:worker_threads'
import { getHeapStatistics } from 'node:v8'
// pino's own error serializer, without pino: the worker logs through the host's logger
// on the main thread, and pino's module graph cost this thread ~1.3 MB of heap.
import { err as serializeError } from 'pino-std-serializers'
import type { Caller } from '../auth/caller.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import { openConfiguredStore } from '../store/open-store.ts'
import { openCompanies } from '../store/companies.ts'
import { tenancyGuard } from '../apply/tenancy-guard.ts'
import { openTokens } from '../store/tokens.ts'
import { openRevisions } from '../store/revisions.ts'
import { openInstructions } from '../store/instructions.ts'
import { openAudit } from '../store/audit.ts'
import { openInstructionFlags } from '../store/instruction-flags.ts'
import { programmeRecords } from '../apply/programme-records.ts'
import { storageQuota } from '../apply/quota.ts'
import { createProgrammeReader } from '../apply/read-programme.ts'
import { receiveProgramme, type ReceiveParts } from '../apply/receive-programme.ts'
import { managedSites } from '../apply/managed-sites.ts'
import { openMetering } from '../store/metering.ts'
import { openEventBell } from '../store/event-bell.ts'
import { announceEvents, openEvents } from '../store/events.ts'
import { bindFaults, clockOf, errorData, type DoorFault, type DoorStart, type FaultCause, type FromDoor, type ToDoor } from './protocol.ts'
import { eventsOut } from './events-out.ts'
import { sitesToQueue } from '../apply/enqueue.ts'
import { asker } from './asks.ts'
import { openDoor, type HostPort, type OpenDoor as WiredDoor } from './wire.ts'
import { nameThisThread, nicedFirst, niceThisThread, thisThreadId } from '../os-thread.ts'
import { keepTickObjects } from '../http/tick-objects.ts'

// First, before this thread's first full collection (http/tick-objects.ts).
keepTickObjects()
const port = parentPort!
const start = workerData as DoorStart
if (start.endSilently) process.exit(0)
nameThisThread('epx-door')
const post = (m: FromDoor, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer)

// Events (log lines, metrics, receipts, saved programmes to queue) leave together, at
// most one message every FLUSH_MS of a busy door (at once on a quiet one: door/events-in.ts):
// a message costs the solver's thread a wake-up and a handler, so one per request cost it
// more than serving the request itself had (bench/README.md#the-doors-events-in-one-message-per-flush). A log line reaches the
// host's logger within those ms, possibly after its client has the answer; a crash of this
// thread loses at most those ms of lines (never a programme: the restart queues every
// effective one again).
const FLUSH_MS = 20
/** A burst this long leaves at once (bounded messages, bounded memory). */
const FLUSH_RECORDS = 1024
/** store.kind "postgres": the door's connections (programmes, audit) beside the main thread's pool. */
const WORKER_POOL_SIZE = 2
const events = eventsOut(post, {
  observed: start.observed, flushMs: FLUSH_MS, maxRecords: FLUSH_RECORDS,
  // Errors as pino prints them (their code and own fields kept; JSON would drop them).
  errorJson: err => serializeError(err),
})

// The console and metrics listeners' questions to the solver's thread (door/asks.ts).
const asks = asker(post)

/**
 * A standby door (`start.standby`) opens everything, console included, then waits here,
 * before its first bind, for its supervisor's word (`bind`) to take over from a door that
 * failed: only the binds are left between a fault and the door answering again.
 */
let takeOver = () => {}
let standDown = (_err: Error) => {}
const called = start.standby ? new Promise<void>((resolve, reject) => { takeOver = resolve; standDown = reject }) : Promise.resolve()
called.catch(() => {})   // a standby closed before it waits: its open() sees the refusal
let waiting = false
/** Closed before it took over: it ends as a closed door does, not as a failed one. */
let stoodDown = false

/**
 * A restarted door starts while its predecessor, after a fault, still closes (its
 * supervisor does not wait for it: the door is back sooner); that one cut its listeners
 * first, but their ports are free only once its loop has closed their handles. So a
 * restart waits for a port in use, up to the bound its predecessor has to end.
 */
const BUSY_RETRY_MS = 25
async function whenFree<T> (listen: () => Promise<T>): Promise<T> {
  if (start.standby && !waiting) {
    waiting = true
    post({ type: 'standby' })
  }
  await called
  const until = Date.now() + DIE_BOUND_MS
  for (;;) {
    try {
      return await listen()
    } catch (err) {
      const busy = ((err as { cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code) === 'EADDRINUSE'
      if (!start.sidePorts || !busy || Date.now() > until) throw err
      await new Promise(resolve => setTimeout(resolve, BUSY_RETRY_MS))
    }
  }
}

interface OpenDoor {
  /** Drains the listeners (a short grace), then closes what the door opened. */
  close(): Promise<void>
  /** At once: every listener stops accepting and cuts its connections. */
  abort(): void
  /** Test seam: the next request's 'request' event throws, inside the HTTP parser's call. */
  throwInNextRequest(): void
}

async function open (): Promise<OpenDoor> {
  const log = events.log
  const clock = clockOf(start.clock)
  const { config } = start
  // A standby starts beside a serving door and the solver: at the door's lower priority from the first
  // (its supervisor has its thread made nicer before it loads: then not again).
  const niced = nicedFirst() || (start.standby === true && niceThisThread(config.api.workerNice))
  const faults = start.faults ? bindFaults({}, start.faults) : undefined
  const store = openConfiguredStore(config.store, {
    dataDir: start.dataDir, path: start.storePath, faults, log: log.child({ area: 'store' }), onWriteFailed: () => events.event({ e: 'storeError' }),
    // Its own small pool; the main store follows the change feed into the same replica.
    besideThisProcess: { share: start.storeShare, poolSize: WORKER_POOL_SIZE },
  })
  await store.opened
  // This thread's writes (programmes, the console's perimeters) ring the process's bell too.
  const bell = openEventBell(start.eventBell, () => store.latest())
  announceEvents(store, { bell, written: events.eventsWritten })
  const revisions = openRevisions(store, { retentionDays: config.publish.retentionDays })
  const reader = createProgrammeReader(config.inbound)
  const audit = openAudit(store, config.audit)
  const flags = openInstructionFlags(store)
  const records = programmeRecords({
    audit, flags, feasibility: { revisions }, log: log.child({ area: 'inbound' }), counted: c => events.event({ e: 'programme', c }),
  })
  const instructions = openInstructions(store)
  // Saved here, queued by the solver's thread: only the sites still effective, their slots alone.
  const enqueuer = {
    async enqueueBatch (batch: InstructionBatch, effective: readonly boolean[]): Promise<void> {
      const sites = sitesToQueue(instructions, batch, effective)
      if (sites.length) events.handOver(batch, sites)
    },
  }
  // The solver's sites, asked of its thread (the host's object stays there), kept a while.
  const managed = managedSites({ read: () => asks.ask({ ask: 'sites' }), clock, log: log.child({ area: 'inbound' }) })
  const quota = storageQuota(store, config.inbound.maxBytesPerCompanyPerDay)
  const parts: ReceiveParts = { reader, instructions, enqueuer, records, managed, tenancy: tenancyGuard(store), quota }
  const inbound = {
    receive: (bytes: Buffer, caller: Caller, at: Date) => receiveProgramme(bytes, caller, at, parts),
    refusedAtDoor: (error: unknown, caller: Caller, at: Date) => records.refused(caller, error, at),
  }
  const host: HostPort = {
    tell: {
      observer: {
        handshake: events.handshake,
        handshakeFailed: (reason: string) => events.event({ e: 'handshakeFailed', reason }),
        answered: events.answered,
        deadToken: (token, reason, nowMs) => events.event({ e: 'deadToken', token, reason, nowMs }),
        rateLimited: (companyId, door, kind, nowMs) => events.event({ e: 'rateLimited', companyId, door, kind, nowMs }),
        quotaExceeded: (companyId, nowMs) => events.event({ e: 'quotaExceeded', companyId, nowMs }),
      },
      receipt: events.receipt,
      touch: (token, nowMs) => events.event({ e: 'touch', token, nowMs }),
    },
    ask: asks.ask,
  }
  let wired: WiredDoor
  try {
    wired = await openDoor({
      config, dataDir: start.dataDir, ports: { api: start.port, ...start.sidePorts },
      store, companies: openCompanies(store, { now: () => clock.now().getTime() }), tokens: openTokens(store), revisions, instructions, flags, audit, inbound, quota, clock, log,
      metering: openMetering(store, { now: () => clock.now().getTime(), retentionDays: config.inbound.retentionDays }),
      events: openEvents(store), bell,
      listen: whenFree,
    }, host)
  } catch (err) {
    await reader.close()
    records.close()
    revisions.close()
    await audit.flush().catch(() => {})
    await store.close()
    throw err
  }
  // Nicer only once it serves (a standby: from its start): a door started afresh after a
  // fault starts at the solver's priority (~0.2 s of CPU), or on a busy machine it would
  // take seconds to be back.
  if (!niced && !niceThisThread(config.api.workerNice)) log.info({ workerNice: config.api.workerNice }, 'the api worker runs at the solver\'s priority: this system lets no thread set its own (api.workerNice)')
  post({ type: 'listening', url: wired.url.href, consoleUrl: wired.consoleUrl?.href, metricsUrl: wired.metricsUrl?.href })
  const listening = wired
  let closing: Promise<void> | undefined
  return {
    abort () {
      listening.abort()
    },
    throwInNextRequest () {
      listening.api.server.prependOnceListener('request', () => { throw new Error('api door crash requested by a test (in a request)') })
    },
    // Once: a fault may come while the door closes, and closes it too.
    close: () => closing ??= (async () => {
      try {
        await listening.close().catch(() => {})
        await reader.close()
      } finally {
        records.close()
        await audit.flush().catch(() => {})
        revisions.close()
        await store.close()
      }
    })(),
  }
}

let door: Promise<OpenDoor> | undefined
/** The door once open: a fault cuts its listeners at once, not a turn later. */
let opened: OpenDoor | undefined

/**
 * A fault anywhere in this thread ends it in order, never by Node's own teardown.
 * Node ends a worker that has an uncaught exception (or reaches its heap limit) by
 * stopping its isolate wherever it is: with connections still being parsed, the next
 * store read of a request runs while the thread is torn down, and lmdb-js's native code,
 * which cannot throw into a dying isolate, aborts the whole process (the solver's with
 * it). So this thread handles its own faults: it cuts every connection of its listeners
 * at once (no request is parsed, no handler runs after), tells the solver's thread why,
 * closes its store (writes already accepted land; reads refuse) and only then exits. A
 * thread stuck in that close is ended after DIE_BOUND_MS (by then nothing is parsed).
 */
const DIE_BOUND_MS = 2000
let dying = false
const die = (cause: FaultCause, err: unknown) => {
  if (dying) return   // a fault while ending: the first one is told
  dying = true
  opened?.abort()
  clearInterval(heapWatch)
  events.flush()
  post({ type: 'fault', cause, tid: thisThreadId(), error: { ...errorData(err), ...(err instanceof Error ? {} : { message: `a non-error was thrown: ${String(err)}` }) } })
  const bound = setTimeout(() => process.exit(1), DIE_BOUND_MS)
  void door!.then(d => { d.abort(); return d.close() }).catch(() => {}).finally(() => {
    asks.failAll('the api worker failed')
    events.flush()
    clearTimeout(bound)
    process.exit(1)
  })
}
process.on('uncaughtException', err => die('exception', err))
process.on('unhandledRejection', err => die('rejection', err))

/**
 * The heap's own guard: at HEAP_FULL of its limit the thread ends in order (as above),
 * before V8 stops it wherever it is. A leak grows over many requests and is seen here; a
 * single allocation larger than what is left still meets V8's limit (Node's teardown).
 */
const HEAP_FULL = 0.85
const HEAP_CHECK_MS = 50
const heapWatch = setInterval(() => {
  const h = getHeapStatistics()
  if (h.used_heap_size > HEAP_FULL * h.heap_size_limit) {
    die('heap', new Error(`the api worker's heap reached ${Math.round(h.used_heap_size / 2 ** 20)} MB of its ${Math.round(h.heap_size_limit / 2 ** 20)} MB limit`))
  }
}, HEAP_CHECK_MS).unref()

/** The test seam's faults (`DoorFault`): each as a bug would make it. */
const leak: unknown[] = []
const crash = (how: DoorFault = 'loop') => {
  if (how === 'loop') setImmediate(() => { throw new Error('api door crash requested by a test') })
  else if (how === 'rejection') void Promise.reject(new Error('api door crash requested by a test (a rejection)'))
  else if (how === 'handler') opened?.throwInNextRequest()
  else {
    // A leak: a MB more each few ms, requests still served between.
    const grow = () => { leak.push(new Array(2 ** 17).fill(leak.length)); setTimeout(grow, 10) }
    grow()
  }
}

port.on('message', (m: ToDoor) => {
  if (m.type === 'answer') {
    asks.answered(m)
  } else if (m.type === 'bind') {
    takeOver()
  } else if (m.type === 'close') {
    if (dying) return   // it ends already
    if (start.standby && !opened) {
      stoodDown = true
      standDown(new Error('the standby api worker was closed before it took over'))
    }
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
    crash(m.how)
  }
})
door = open()
door.then(d => { opened = d }, (err: unknown) => {
  if (stoodDown) return   // its close ends it
  events.flush()
  post({ type: 'failed', error: errorData(err) })
  // What open() opened is closed: ending here is safe (the host's terminate() might not be).
  process.exit(1)
})
