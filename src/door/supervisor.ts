/**
 * The main thread's side of the API door's worker (`api.inWorker`): starts it, answers what it
 * asks (the solver's queue, the host's clock, the console's and metrics listener's
 * questions), hands what it tells to the host's logger, metrics and receipts, and
 * keeps it alive. A worker that dies (a bug, its heap
 * limit) is logged at `error` and replaced at once on the same ports, by its standby
 * when there is one (a thread already open, waiting to bind), with backoff in a crash
 * loop; the host notices nothing else. While it is down the port refuses connections; every programme
 * it acknowledged is already durable, and on restart the effective instructions are
 * queued again (`onRestart`), so none whose hand-over was lost with the worker is missed.
 * @module
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads'
import type { Clock, Logger } from '../host/contract.ts'
import type { StoreFaults } from '../store/open-store.ts'
import type { Tokens } from '../store/tokens.ts'
import type { HandedBatch } from '../apply/enqueue.ts'
import type { ProgrammeCount } from '../apply/programme-records.ts'
import { workerSource } from '../apply/read-programme.ts'
import type { ApiObserver } from '../http/observer.ts'
import {
  answerClock, errorFrom, shareFaults, systemOffset,
  type AskAnswers, type DoorStart, type FaultCause, type FromDoor, type SharedClock, type SidePorts, type ToDoor,
} from './protocol.ts'
import { answerAsk } from './asks.ts'
import { eventsIn, type EventsIn } from './events-in.ts'
import { nicerFirst, threadCpuMs } from '../os-thread.ts'

export interface DoorDeps {
  readonly start: Omit<DoorStart, 'clock' | 'faults' | 'port' | 'sidePorts' | 'observed'>
  readonly clock: Clock
  readonly log: Logger
  readonly faults?: StoreFaults
  /** The worker's old-generation limit in MB (default `HEAP_MB`). */
  readonly heapMb?: number
  /** Hands batches the worker saved to the solver's queue, in order; then `done`. */
  handOver(batches: HandedBatch[], done: () => void): void
  /** After a restart: queue again what the dead worker may have saved without telling. */
  onRestart(): Promise<unknown>
  /** A programme's counts (the door's thread wrote its records with its instructions); none: not recorded. */
  readonly programme?: (count: ProgrammeCount) => void
  readonly observer: ApiObserver & {
    storeError?(): void
    /** The worker died (and is being restarted): what ended it. */
    workerFault?(cause: FaultCause): void
  }
  /** Where a token's last use is written (the host's thread: ordered with its other writes). */
  readonly tokens: Pick<Tokens, 'touch'>
  readonly receipts: { record(companyId: string, siteId: string, targetDate: string, emittedAtMs: number, status: 200 | 304, atMs: number): void }
  /** What the worker's console and metrics listeners ask of this thread (door/asks.ts). */
  readonly answers: AskAnswers
}

export interface Door {
  readonly url: URL
  /** The console's and the metrics listener's, when enabled: they serve from the same worker. */
  readonly consoleUrl?: URL
  readonly metricsUrl?: URL
  /** False while the worker is down and being restarted. */
  readonly up: boolean
  /** A standby door is open and waiting to take over (`api.standbyWorker`). */
  readonly standing: boolean
  /**
   * Resolves once everything the worker has told so far has reached this thread: its log
   * lines, receipts, token uses, and the programmes it saved, those in the solver's queue
   * (they follow an answer within the worker's flush interval: a POST's 202 does not
   * wait for its hand-over). For a caller that reads those right after an answer: tests.
   */
  caughtUp(): Promise<void>
  /**
   * Drains (in-flight requests finish within the listener's grace), then ends the thread;
   * resolves once every thread the door started (its standby, one starting or ending) has ended. Idempotent.
   */
  close(): Promise<void>
  /** Test seam: the running worker, to kill it. */
  readonly worker: Worker | undefined
  /** Test seam: threads this door started that have not exited (none once close() resolves). */
  readonly threads: number
}

/**
 * The worker's own old-generation limit: an out-of-memory kills the worker, not the host.
 * Not lower: V8 lets the old generation grow by a factor that shrinks with the limit (4 at
 * 2 GB and above on 64-bit, ~1.4 at 512 MB), so a lower limit means more full collections
 * for the same garbage. At 512 MB a 100-site POST cost the other threads (V8's concurrent
 * marking) ~4.9 ms of CPU, at 1 GB ~4.3 ms, at 2 GB and 4 GB ~2.8 ms; the memory row reads
 * 3 MB more for it (bench/README.md "What the figures are made of"). The door's caches and in-flight bodies
 * (up to `inbound.maxBodyBytes` each) use a small part of it.
 */
const HEAP_MB = 2048
/**
 * The worker's young generation (V8: two semi-spaces of a third of this each, so at most
 * 8 MB of new space). Left to V8, a busy worker grows it to 32 MB, all of it resident, on
 * top of the solver thread's own 32 MB, and keeps it while requests keep coming (bench/README.md,
 * "What the figures are made of"). At 8 MB the worker's scavenges cost ~4 µs more per request than
 * unbounded; at 4 MB or 2 MB, ~17 µs more (a request's survivors fill the small space).
 */
const YOUNG_GENERATION_MB = 12
const FIRST_DELAY_MS = 100
const MAX_DELAY_MS = 5000
/**
 * A worker up this long has earned a fresh backoff: its fault is a new incident, and its
 * successor starts at once (docs/plugin-contract.md: the door back within a second). Only a
 * worker that dies sooner (a fault at start, a request that kills every worker at once)
 * waits longer each time, up to MAX_DELAY_MS.
 */
const STABLE_MS = 1000
/**
 * The first standby door starts this long after the door: the solver's activation and the
 * door's first clients come first, and a solver that activates epx and closes it at once
 * (a command, a test) starts no standby.
 */
const STANDBY_AFTER_MS = 1000
/** How long a worker that told of its fault has to end itself before it is terminated. */
const FAULT_BOUND_MS = 5000
/** How long close() waits for the worker to drain and end before it terminates it. */
const CLOSE_BOUND_MS = 5000

export async function startDoor (deps: DoorDeps): Promise<Door> {
  const { log } = deps
  const offset = systemOffset(deps.clock)
  const faults = deps.faults ? shareFaults(deps.faults) : undefined
  let current: Worker | undefined
  let up = false
  let closing: Promise<void> | undefined
  let restartTimer: NodeJS.Timeout | undefined
  let delay = 0

  // The door records only what this thread listens to.
  const observed = {
    answered: Boolean(deps.observer.answered),
    handshakes: Boolean(deps.observer.handshake),
    programmes: Boolean(deps.programme),
  }
  /** Every worker's events, so close() can wait for their hand-overs. */
  const readers = new Set<EventsIn>()
  /** caughtUp()'s questions to the worker, by number. */
  const syncs = new Map<number, () => void>()
  let syncId = 0
  /**
   * Every thread this door started that has not exited, with its exit: whatever state the
   * door is in (a worker serving, failed, ending after a fault or a failed start, a standby
   * loading or waiting), close() resolves only once each has ended.
   */
  const threads = new Map<Worker, Promise<void>>()
  const settled = () => Promise.all([...readers].map(r => r.settled())).then(() => {})

  /** One worker, until it listens (resolves) or fails to (rejects). */
  type Spawned = { worker: Worker; url: URL; consoleUrl?: URL; metricsUrl?: URL }
  /** `waiting`: a standby that has opened everything and waits for `bind`. */
  type Starting = { worker: Worker; started: Promise<Spawned>; waiting: boolean }
  const spawn = (port: number, sidePorts?: SidePorts, standby = false): Starting => {
    let clock: SharedClock
    let asked: MessagePort | undefined
    const transferList: MessagePort[] = []
    if (offset !== undefined) clock = { kind: 'system', offsetMs: offset }
    else {
      const { port1, port2 } = new MessageChannel()
      const cell = new SharedArrayBuffer(16)
      answerClock(deps.clock, port1, cell)
      port1.unref()
      asked = port1
      clock = { kind: 'asked', cell, port: port2 }
      transferList.push(port2)
    }
    const [module, how] = workerSource(import.meta.url, 'door-worker', './worker.ts')
    // A standby starts beside a serving door and the solver: all of it at the door's lower
    // priority, its modules' loading included.
    const nice = standby ? deps.start.config.api.workerNice : 0
    const source = nice === 0 ? module : nicerFirst(nice) + (how.eval ? String(module) : `import(${JSON.stringify(String(module))})`)
    const events = eventsIn(deps)
    readers.add(events)
    const workerData: DoorStart = { ...deps.start, port, sidePorts, clock, faults, observed, ...(standby ? { standby } : {}) }
    const worker = new Worker(source, {
      ...how, ...(nice === 0 ? {} : { eval: true }), workerData, transferList,
      resourceLimits: { maxOldGenerationSizeMb: deps.heapMb ?? HEAP_MB, maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    })
    // Out of the set in its exit's own turn: a 'listening' Node hands over with the exit
    // is followed by callbacks that must see it gone.
    const exited = new Promise<void>(resolve => worker.once('exit', () => { threads.delete(worker); resolve() }))
    threads.set(worker, exited)
    const starting: Starting = { worker, started: undefined!, waiting: false }
    starting.started = new Promise<Spawned>((resolve, reject) => {
      let listening = false
      /** The worker told of its fault (logged then): its exit is not logged again. */
      let faulted = false
      worker.on('message', (m: FromDoor) => {
        switch (m.type) {
          case 'listening':
            listening = true
            resolve({ worker, url: new URL(m.url), ...(m.consoleUrl ? { consoleUrl: new URL(m.consoleUrl) } : {}), ...(m.metricsUrl ? { metricsUrl: new URL(m.metricsUrl) } : {}) })
            return
          case 'ask': answerAsk(deps.answers, m, a => worker.postMessage(a)); return
          case 'synced': syncs.get(m.id)?.(); syncs.delete(m.id); return
          case 'failed': reject(errorFrom(m.error)); return
          case 'fault':
            if (!listening || worker !== current || closing) return
            faulted = true
            log.error({ err: errorFrom(m.error), cause: m.cause }, 'the api worker failed; restarting it')
            deps.observer.workerFault?.(m.cause)
            // Its successor starts now, while it closes its store: its listeners are
            // already cut, and its successor binds their ports when they are free.
            ending.add(exited)
            // It ends itself within its own bound (door/worker.ts); one still running after
            // FAULT_BOUND_MS is stuck in synchronous code, which no timer of its own can end.
            // Its listeners were cut at its fault, so no request is parsed when it is terminated.
            {
              const since = worker.performance.eventLoopUtilization()
              const cpuFrom = m.tid === undefined ? undefined : threadCpuMs(m.tid)
              const bound = setTimeout(() => {
                // Its event loop's share of the bound (near 1: it never went idle) and the CPU its
                // thread used meanwhile (near the bound: it spun; near 0: it waited for a CPU,
                // a thread at api.workerNice on a saturated machine).
                const loopBusy = Number(worker.performance.eventLoopUtilization(since).utilization.toFixed(2))
                const cpuNow = m.tid === undefined ? undefined : threadCpuMs(m.tid)
                const cpuMs = cpuFrom === undefined || cpuNow === undefined ? undefined : cpuNow - cpuFrom
                log.warn({ boundMs: FAULT_BOUND_MS, loopBusy, cpuMs }, 'the failed api worker did not end; terminating it')
                void worker.terminate()
              }, FAULT_BOUND_MS)
              void exited.then(() => { clearTimeout(bound); ending.delete(exited) })
            }
            died(1)
            return
          case 'events': events.read(m); return
          case 'standby': starting.waiting = true
        }
      })
      worker.on('error', err => {
        if (!listening) reject(err)
        else if (worker === current && !closing && !faulted) {
          faulted = true
          log.error({ err }, 'the api worker failed; restarting it')
          deps.observer.workerFault?.('exception')
        }
      })
      worker.once('exit', code => {
        asked?.close()
        // A dead worker's saves are queued again by its successor (onRestart), not by it.
        for (const resolve of syncs.values()) resolve()
        syncs.clear()
        void events.settled().then(() => readers.delete(events))
        if (!listening) reject(new Error(`the api worker exited with code ${code} before it listened`))
        else if (worker === current) {
          // Asked to close, it ends: no fault.
          if (!faulted && !closing) {
            log.error({ exitCode: code }, 'the api worker stopped; restarting it')
            deps.observer.workerFault?.('exit')
          }
          died(code)
        }
      })
    })
    return starting
  }

  let startedAt = 0
  /** A restart under way: close() waits for it, then ends what it started. */
  let spawning: Promise<Spawned> | undefined
  /**
   * The standby door (`api.standbyWorker`): a worker that has opened everything a door opens
   * (its modules, the store, the validators, the console) and waits to bind. A fault hands
   * the ports to it: what is left between a fault and the door answering again is its
   * binds, not a worker's start (~0.3 s of CPU, seconds on a busy machine). A new standby
   * starts as soon as one takes over, the first one STANDBY_AFTER_MS after the door's
   * start; one that ends before it is needed is not replaced until the next restart (never
   * a loop of starts).
   */
  let standby: Starting | undefined
  let standbyTimer: NodeJS.Timeout | undefined
  const keepStandby = () => {
    standbyTimer = undefined
    if (closing || standby || !deps.start.config.api.standbyWorker) return
    const s = standby = spawn(Number(first.url.port), sidePorts, true)
    s.started.catch((err: unknown) => {
      if (standby !== s) return   // it took over: its failure is the restart's
      standby = undefined
      if (!closing) log.warn({ err }, 'the standby api worker ended before it was needed; the next restart starts a worker afresh')
    })
  }
  /** Workers that told of a fault and are still ending: close() waits for them too. */
  const ending = new Set<Promise<void>>()
  /** Standbys closed before they were needed, still ending: close() waits for them too. */
  const standingDown = new Set<Promise<void>>()
  const died = (code: number) => {
    current = undefined
    up = false
    if (closing) return
    // A new incident: at once. A crash loop: FIRST_DELAY_MS, then twice as long each time.
    if (Date.now() - startedAt > STABLE_MS) delay = 0
    scheduleRestart()
  }
  const scheduleRestart = () => {
    restartTimer = setTimeout(() => {
      restartTimer = undefined
      if (closing) return
      // A standby still starting (at its lower priority) would be back later than a worker
      // started afresh at the solver's: it is closed, and one is.
      if (standby && !standby.waiting) {
        const ended = endWorker(standby.worker).finally(() => standingDown.delete(ended))
        standingDown.add(ended)
        standby = undefined
      }
      const next = standby ?? spawn(Number(first.url.port), sidePorts)
      if (next === standby) {
        standby = undefined
        next.worker.postMessage({ type: 'bind' } satisfies ToDoor)
      }
      const spawned = spawning = next.started
      void spawned.finally(() => { if (spawning === spawned) spawning = undefined }).catch(() => {})
      spawned.then(({ worker }) => {
        // close() came while it started: close() ends it, as it would the running one.
        if (closing) return
        // It told that it listens and ended before this turn (Node hands a thread's last
        // messages over just before its exit): its exit found it not yet the current one.
        if (!threads.has(worker)) {
          log.error({}, 'the api worker stopped; restarting it')
          deps.observer.workerFault?.('exit')
          scheduleRestart()
          return
        }
        current = worker
        up = true
        startedAt = Date.now()
        log.info({ url: first.url.href }, 'the api worker restarted')
        keepStandby()
        // Once its predecessor has ended: what it saved while closing is queued too.
        Promise.all(ending).then(() => deps.onRestart()).catch((err: unknown) => log.error({ err }, 'could not queue the effective instructions again after the api worker restarted'))
      }, (err: unknown) => {
        if (closing) return
        log.error({ err, retryInMs: delay }, 'the api worker could not start again; retrying')
        scheduleRestart()
      })
      delay = Math.min(Math.max(delay * 2, FIRST_DELAY_MS), MAX_DELAY_MS)
    }, delay)
  }

  /** Asks a worker to close, and waits for it to end. */
  const endWorker = async (w: Worker) => {
    // Its exit as seen from its start: one that has already ended is not waited for.
    const exited = threads.get(w)
    if (!exited) return
    w.postMessage({ type: 'close' } satisfies ToDoor)
    // The worker's listener cuts its connections after a 1 s grace and the worker
    // ends; one still running after this bound is stuck in its own code. Only then is
    // it terminated: terminate() landing while Node's HTTP parser calls into the
    // worker's JavaScript can abort the whole process (nodejs/node#38418, Node 20).
    const bound = setTimeout(() => {
      log.warn({ boundMs: CLOSE_BOUND_MS }, 'the api worker did not end after close; terminating it')
      void w.terminate()
    }, CLOSE_BOUND_MS)
    await exited
    clearTimeout(bound)
  }

  const first = await spawn(deps.start.config.api.port).started
  if (!threads.has(first.worker)) throw new Error('the api worker exited right after it listened')
  // A restarted worker binds the ports the first one bound (0 in the configuration: the ones it picked).
  const sidePorts: SidePorts = { console: Number(first.consoleUrl?.port ?? 0), metrics: Number(first.metricsUrl?.port ?? 0) }
  current = first.worker
  up = true
  startedAt = Date.now()
  standbyTimer = setTimeout(keepStandby, STANDBY_AFTER_MS).unref()

  return {
    url: first.url,
    consoleUrl: first.consoleUrl,
    metricsUrl: first.metricsUrl,
    get up () { return up },
    get standing () { return standby?.waiting === true },
    get worker () { return current },
    get threads () { return threads.size },
    async caughtUp () {
      const w = current
      if (w) {
        const id = ++syncId
        await new Promise<void>(resolve => {
          syncs.set(id, resolve)
          w.postMessage({ type: 'sync', id } satisfies ToDoor)
        })
      }
      await settled()
    },
    close () {
      closing ??= (async () => {
        if (restartTimer) clearTimeout(restartTimer)
        if (standbyTimer) clearTimeout(standbyTimer)
        up = false
        // A standby has bound nothing: it closes what it opened and ends, alongside.
        const spare = standby && endWorker(standby.worker)
        standby = undefined
        const w = current ?? await spawning?.then(s => s.worker, () => undefined)
        if (w) {
          await endWorker(w)
          current = undefined
        }
        await spare
        await Promise.all(standingDown)
        // A worker that had a fault ends by itself (door/worker.ts), within its own bound.
        await Promise.all(ending)
        // Any other thread still running: a worker whose start failed during close() and
        // that is still ending, or one no state above names. Each is asked to close, then
        // terminated after its bound, as the current one.
        while (threads.size) await Promise.all([...threads.keys()].map(endWorker))
        // What the workers handed over before they ended reaches the solver before close() resolves.
        await settled()
      })()
      return closing
    },
  }
}
