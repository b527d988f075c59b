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
import { Worker, type MessagePort } from 'node:worker_threads'
import type { Clock, Logger } from '../host/contract.ts'
import type { StoreFaults } from '../store/open-store.ts'
import type { Tokens } from '../store/tokens.ts'
import type { HandedBatch } from '../apply/enqueue.ts'
import type { ProgrammeCount } from '../apply/programme-records.ts'
import { workerSource } from '../apply/read-programme.ts'
import type { ApiObserver } from '../http/observer.ts'
import {
  errorFrom, shareClock, shareFaults, systemOffset,
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
  /** Test seam: the first N workers started end before they listen, telling nothing. */
  readonly silentStarts?: number
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
 * 3 MB more for it (bench/README.md#the-workers-heap-limits). The door's caches and in-flight bodies
 * (up to `inbound.maxBodyBytes` each) use a small part of it.
 */
const HEAP_MB = 2048
/**
 * The worker's young generation (V8: two semi-spaces of a third of this each, so at most
 * 8 MB of new space). Left to V8, a busy worker grows it to 32 MB, all of it resident, on
 * top of the solver thread's own 32 MB, and keeps it while requests keep coming
 * (bench/README.md#the-workers-heap-limits). At 8 MB the worker's scavenges cost ~4 µs more
 * per request than unbounded; at 4 MB or 2 MB, ~17 µs more (a request's survivors fill the small space).
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
/**
 * How many times the first worker is started when it ends before it listens without
 * telling why (exit code 0, no error, no `failed`). A worker that tells of a failure (its
 * port taken, its store refused) fails the activation at once. One that ends unheard has
 * not reached its own code: on Node 20 under a module loader's hooks (coverage, an APM's
 * `--import`), a thread whose modules were still loading has been seen to end so, once in
 * a test suite's thousands of activations; a second start is the restart a door that died
 * later would get.
 */
const SILENT_START_TRIES = 3

/** A worker that ended before it listened and told nothing of why. */
class EndedUnheard extends Error {
  constructor (readonly exitCode: number) {
    super(`the api worker exited with code ${exitCode} before it listened`)
  }
}

export async function startDoor (deps: DoorDeps): Promise<Door> {
  const door = new DoorSupervisor(deps)
  let first: Spawned
  try {
    first = await door.start()
  } catch (err) {
    // A worker that could not listen (its port taken) is still a thread: it ends with
    // the activation that failed, not with the process.
    await door.close().catch(() => {})
    throw err
  }
  return {
    url: first.url,
    consoleUrl: first.consoleUrl,
    metricsUrl: first.metricsUrl,
    get up () { return door.up },
    get standing () { return door.standing },
    get worker () { return door.current },
    get threads () { return door.threadCount },
    caughtUp: () => door.caughtUp(),
    close: () => door.close(),
  }
}

/**
 * The door's lifecycle: the worker that serves, its replacement when it dies (by the
 * standby when one waits, with backoff in a crash loop), and close().
 */
class DoorSupervisor implements Keeper {
  readonly #deps: DoorDeps
  readonly #threads: DoorThreads
  readonly #syncs = new SyncQuestions()
  readonly #launcher: WorkerLauncher
  readonly #backoff = new Backoff()
  #standby: Standby | undefined
  /** The worker serving now; none while it is restarted. */
  #current: Worker | undefined
  #up = false
  #closing: Promise<void> | undefined
  #restartTimer: NodeJS.Timeout | undefined
  /** A restart under way: close() waits for it, then ends what it started. */
  #spawning: Promise<Spawned> | undefined
  /** What a restarted worker binds: the first one's ports (0 in the configuration: the ones it picked). */
  #port = 0
  #sidePorts: SidePorts | undefined
  #url: URL | undefined

  constructor (deps: DoorDeps) {
    this.#deps = deps
    this.#threads = new DoorThreads(deps.log)
    this.#launcher = new WorkerLauncher(deps, this.#threads, this.#syncs, this)
  }

  get current (): Worker | undefined { return this.#current }
  get up (): boolean { return this.#up }
  get closing (): boolean { return this.#closing !== undefined }
  get standing (): boolean { return this.#standby?.standing ?? false }
  get threadCount (): number { return this.#threads.size }

  async start (): Promise<Spawned> {
    const first = await this.#firstListening()
    if (!this.#threads.has(first.worker)) throw new Error('the api worker exited right after it listened')
    this.#url = first.url
    this.#port = Number(first.url.port)
    this.#sidePorts = { console: Number(first.consoleUrl?.port ?? 0), metrics: Number(first.metricsUrl?.port ?? 0) }
    this.#standby = new Standby(() => this.#launcher.spawn(this.#port, this.#sidePorts, true), {
      enabled: this.#deps.start.config.api.standbyWorker, closing: () => this.closing, threads: this.#threads, log: this.#deps.log,
    })
    this.#serving(first.worker)
    this.#standby.later()
    return first
  }

  async #firstListening (): Promise<Spawned> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#launcher.spawn(this.#deps.start.config.api.port).started
      } catch (err) {
        if (!(err instanceof EndedUnheard) || err.exitCode !== 0 || attempt === SILENT_START_TRIES || this.closing) throw err
        this.#deps.log.warn({ attempt, exitCode: err.exitCode }, 'the api worker ended before it listened and told no error; starting it again')
      }
    }
  }

  died (): void {
    this.#current = undefined
    this.#up = false
    if (this.closing) return
    this.#backoff.died()
    this.#scheduleRestart()
  }

  #serving (worker: Worker): void {
    this.#current = worker
    this.#up = true
    this.#backoff.started()
  }

  #scheduleRestart (): void {
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined
      if (this.closing) return
      const next = this.#standby?.takeOver() ?? this.#launcher.spawn(this.#port, this.#sidePorts)
      const spawned = this.#spawning = next.started
      void spawned.finally(() => { if (this.#spawning === spawned) this.#spawning = undefined }).catch(() => {})
      spawned.then(({ worker }) => this.#restarted(worker), (err: unknown) => {
        if (this.closing) return
        this.#deps.log.error({ err, retryInMs: this.#backoff.delayMs }, 'the api worker could not start again; retrying')
        this.#scheduleRestart()
      })
      this.#backoff.tried()
    }, this.#backoff.delayMs)
  }

  #restarted (worker: Worker): void {
    const { log } = this.#deps
    // close() came while it started: close() ends it, as it would the running one.
    if (this.closing) return
    // It told that it listens and ended before this turn (Node hands a thread's last
    // messages over just before its exit): its exit found it not yet the current one.
    if (!this.#threads.has(worker)) {
      log.error({}, 'the api worker stopped; restarting it')
      this.#deps.observer.workerFault?.('exit')
      this.#scheduleRestart()
      return
    }
    this.#serving(worker)
    log.info({ url: this.#url!.href }, 'the api worker restarted')
    this.#standby?.keep()
    // Once its predecessor has ended: what it saved while closing is queued too.
    Promise.all(this.#threads.ending).then(() => this.#deps.onRestart()).catch((err: unknown) => log.error({ err }, 'could not queue the effective instructions again after the api worker restarted'))
  }

  async caughtUp (): Promise<void> {
    const w = this.#current
    if (w) await this.#syncs.ask(w)
    await this.#threads.settled()
  }

  close (): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#restartTimer) clearTimeout(this.#restartTimer)
      this.#up = false
      // A standby has bound nothing: it closes what it opened and ends, alongside.
      // None when the first worker never listened.
      const spare = this.#standby?.close()
      const w = this.#current ?? await this.#spawning?.then(s => s.worker, () => undefined)
      if (w) {
        await this.#threads.end(w)
        this.#current = undefined
      }
      await spare
      await this.#threads.endAll()
    })()
    return this.#closing
  }
}

/**
 * Restarts' backoff (the door's, and the webhook deliverer's thread's, webhooks/thread/start.ts). A new incident (the worker that died had been up STABLE_MS): at once.
 * A crash loop: FIRST_DELAY_MS, then twice as long each time, up to MAX_DELAY_MS.
 */
export class Backoff {
  #delayMs = 0
  #startedAt = 0

  get delayMs (): number { return this.#delayMs }
  /** A worker serves from now. */
  started (): void { this.#startedAt = Date.now() }
  died (): void { if (Date.now() - this.#startedAt > STABLE_MS) this.#delayMs = 0 }
  /** A restart was tried: the next one waits longer. */
  tried (): void { this.#delayMs = Math.min(Math.max(this.#delayMs * 2, FIRST_DELAY_MS), MAX_DELAY_MS) }
}

/**
 * The standby door (`api.standbyWorker`): a worker that has opened everything a door opens
 * (its modules, the store, the validators, the console) and waits to bind. A fault hands
 * the ports to it: what is left between a fault and the door answering again is its
 * binds, not a worker's start (~0.2 s of CPU, seconds on a busy machine). A new standby
 * starts as soon as one takes over, the first one STANDBY_AFTER_MS after the door's
 * start; one that ends before it is needed is not replaced until the next restart (never
 * a loop of starts).
 */
class Standby {
  readonly #spawn: () => Starting
  readonly #enabled: boolean
  readonly #closing: () => boolean
  readonly #threads: DoorThreads
  readonly #log: Logger
  #starting: Starting | undefined
  #timer: NodeJS.Timeout | undefined

  constructor (spawn: () => Starting, opts: { enabled: boolean; closing: () => boolean; threads: DoorThreads; log: Logger }) {
    this.#spawn = spawn
    this.#enabled = opts.enabled
    this.#closing = opts.closing
    this.#threads = opts.threads
    this.#log = opts.log
  }

  get standing (): boolean { return this.#starting?.waiting === true }

  /** The first one, after the door's start. */
  later (): void { this.#timer = setTimeout(() => this.keep(), STANDBY_AFTER_MS).unref() }

  keep (): void {
    this.#timer = undefined
    if (this.#closing() || this.#starting || !this.#enabled) return
    const s = this.#starting = this.#spawn()
    s.started.catch((err: unknown) => {
      if (this.#starting !== s) return   // it took over: its failure is the restart's
      this.#starting = undefined
      if (!this.#closing()) this.#log.warn({ err }, 'the standby api worker ended before it was needed; the next restart starts a worker afresh')
    })
  }

  /**
   * For a restart: the standby, told to bind, when it waits. One still starting (at its
   * lower priority) would be back later than a worker started afresh at the solver's: it
   * is closed, and none is returned.
   */
  takeOver (): Starting | undefined {
    const s = this.#starting
    if (!s) return undefined
    this.#starting = undefined
    if (!s.waiting) {
      this.#threads.standDown(s.worker)
      return undefined
    }
    s.worker.postMessage({ type: 'bind' } satisfies ToDoor)
    return s
  }

  /** Ends the standby, if any; resolves once it has ended. */
  close (): Promise<void> | undefined {
    if (this.#timer) clearTimeout(this.#timer)
    const s = this.#starting
    this.#starting = undefined
    return s && this.#threads.end(s.worker)
  }
}

/** One worker, once it listens. */
interface Spawned { worker: Worker; url: URL; consoleUrl?: URL; metricsUrl?: URL }
/** One worker, until it listens (`started` resolves) or fails to (rejects). `waiting`: a standby that has opened everything and waits for `bind`. */
interface Starting { worker: Worker; started: Promise<Spawned>; waiting: boolean }

/** What a worker's events ask of the door that keeps it: which worker serves, and its death. */
interface Keeper {
  readonly current: Worker | undefined
  readonly closing: boolean
  died(): void
}

/**
 * Every thread the door started that has not exited, with its exit, and what close() waits
 * for besides: whatever state the door is in (a worker serving, failed, ending after a fault
 * or a failed start, a standby loading or waiting), close() resolves only once each has ended.
 */
class DoorThreads {
  readonly #exits = new Map<Worker, Promise<void>>()
  /** Every worker's events, so close() can wait for their hand-overs. */
  readonly #readers = new Set<EventsIn>()
  /** Workers that told of a fault and are still ending. */
  readonly ending = new Set<Promise<void>>()
  /** Standbys closed before they were needed, still ending. */
  readonly #standingDown = new Set<Promise<void>>()
  readonly #log: Logger

  constructor (log: Logger) { this.#log = log }

  get size (): number { return this.#exits.size }
  has (worker: Worker): boolean { return this.#exits.has(worker) }

  /** Its exit, once the thread has left the set. */
  add (worker: Worker): Promise<void> {
    // Out of the set in its exit's own turn: a 'listening' Node hands over with the exit
    // is followed by callbacks that must see it gone.
    const exited = new Promise<void>(resolve => worker.once('exit', () => { this.#exits.delete(worker); resolve() }))
    this.#exits.set(worker, exited)
    return exited
  }

  /** A worker's events, read until they have reached this thread. */
  read (events: EventsIn): void { this.#readers.add(events) }
  forget (events: EventsIn): void { void events.settled().then(() => this.#readers.delete(events)) }
  /** Everything every worker has told so far has reached this thread. */
  settled (): Promise<void> { return Promise.all([...this.#readers].map(r => r.settled())).then(() => {}) }

  /** Asks a worker to close, and waits for it to end. */
  async end (w: Worker): Promise<void> {
    // Its exit as seen from its start: one that has already ended is not waited for.
    const exited = this.#exits.get(w)
    if (!exited) return
    w.postMessage({ type: 'close' } satisfies ToDoor)
    // The worker's listener cuts its connections after a 1 s grace and the worker
    // ends; one still running after this bound is stuck in its own code. Only then is
    // it terminated: terminate() landing while Node's HTTP parser calls into the
    // worker's JavaScript can abort the whole process (nodejs/node#38418, Node 20).
    const bound = setTimeout(() => {
      this.#log.warn({ boundMs: CLOSE_BOUND_MS }, 'the api worker did not end after close; terminating it')
      void w.terminate()
    }, CLOSE_BOUND_MS)
    await exited
    clearTimeout(bound)
  }

  /** A standby no longer wanted: ended alongside, close() waits for it. */
  standDown (w: Worker): void {
    const ended = this.end(w).finally(() => this.#standingDown.delete(ended))
    this.#standingDown.add(ended)
  }

  /** Once every thread has ended, and what they handed over has reached this thread. */
  async endAll (): Promise<void> {
    await Promise.all(this.#standingDown)
    // A worker that had a fault ends by itself (door/worker.ts), within its own bound.
    await Promise.all(this.ending)
    // Any other thread still running: a worker whose start failed during close() and
    // that is still ending, or one no state above names. Each is asked to close, then
    // terminated after its bound, as the current one.
    while (this.#exits.size) await Promise.all([...this.#exits.keys()].map(w => this.end(w)))
    // What the workers handed over before they ended reaches the solver before close() resolves.
    await this.settled()
  }
}

/** caughtUp()'s questions to the worker, by number; a worker's exit answers them all. */
class SyncQuestions {
  readonly #waiting = new Map<number, () => void>()
  #lastId = 0

  ask (w: Worker): Promise<void> {
    const id = ++this.#lastId
    return new Promise<void>(resolve => {
      this.#waiting.set(id, resolve)
      w.postMessage({ type: 'sync', id } satisfies ToDoor)
    })
  }

  answered (id: number): void { this.#waiting.get(id)?.(); this.#waiting.delete(id) }

  /** A dead worker's saves are queued again by its successor (onRestart), not by it. */
  releaseAll (): void {
    for (const resolve of this.#waiting.values()) resolve()
    this.#waiting.clear()
  }
}

/** Starts door workers: each with its clock, its events' reader, and its handlers. */
class WorkerLauncher {
  readonly #deps: DoorDeps
  readonly #offset: number | undefined
  readonly #faults: ReturnType<typeof shareFaults> | undefined
  /** The door records only what this thread listens to. */
  readonly #observed: DoorStart['observed']
  readonly #threads: DoorThreads
  readonly #syncs: SyncQuestions
  readonly #keeper: Keeper
  #silentStarts: number

  constructor (deps: DoorDeps, threads: DoorThreads, syncs: SyncQuestions, keeper: Keeper) {
    this.#deps = deps
    this.#offset = systemOffset(deps.clock)
    this.#faults = deps.faults ? shareFaults(deps.faults) : undefined
    this.#observed = {
      answered: Boolean(deps.observer.answered),
      handshakes: Boolean(deps.observer.handshake),
      programmes: Boolean(deps.programme),
    }
    this.#threads = threads
    this.#syncs = syncs
    this.#keeper = keeper
    this.#silentStarts = deps.silentStarts ?? 0
  }

  spawn (port: number, sidePorts?: SidePorts, standby = false): Starting {
    const deps = this.#deps
    const { clock, asked, transferList } = this.#sharedClock()
    const [module, how] = workerSource(import.meta.url, 'door-worker', './worker.ts')
    // A standby starts beside a serving door and the solver: all of it at the door's lower
    // priority, its modules' loading included.
    const nice = standby ? deps.start.config.api.workerNice : 0
    const source = nice === 0 ? module : nicerFirst(nice) + (how.eval ? String(module) : `import(${JSON.stringify(String(module))})`)
    const events = eventsIn(deps)
    this.#threads.read(events)
    const endSilently = this.#silentStarts > 0 && this.#silentStarts-- > 0
    const workerData: DoorStart = { ...deps.start, port, sidePorts, clock, faults: this.#faults, observed: this.#observed, ...(standby ? { standby } : {}), ...(endSilently ? { endSilently } : {}) }
    const worker = new Worker(source, {
      ...how, ...(nice === 0 ? {} : { eval: true }), workerData, transferList,
      resourceLimits: { maxOldGenerationSizeMb: deps.heapMb ?? HEAP_MB, maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    })
    const exited = this.#threads.add(worker)
    const starting: Starting = { worker, started: undefined!, waiting: false }
    starting.started = new Promise<Spawned>((resolve, reject) => this.#watch(starting, exited, events, asked, resolve, reject))
    return starting
  }

  /** The host's clock as the worker reads it: the system's with an offset, or asked of this thread. */
  #sharedClock (): { clock: SharedClock; asked?: MessagePort; transferList: MessagePort[] } {
    return shareClock(this.#deps.clock, this.#offset)
  }

  /** A worker's messages, errors and exit, from its start to its end. */
  #watch (starting: Starting, exited: Promise<void>, events: EventsIn, asked: MessagePort | undefined,
    resolve: (s: Spawned) => void, reject: (err: unknown) => void): void {
    const { worker } = starting
    const { log, observer } = this.#deps
    const keeper = this.#keeper
    let listening = false
    /** The worker told of its fault (logged then): its exit is not logged again. */
    let faulted = false
    worker.on('message', (m: FromDoor) => {
      switch (m.type) {
        case 'listening':
          listening = true
          resolve({ worker, url: new URL(m.url), ...(m.consoleUrl ? { consoleUrl: new URL(m.consoleUrl) } : {}), ...(m.metricsUrl ? { metricsUrl: new URL(m.metricsUrl) } : {}) })
          return
        case 'ask': answerAsk(this.#deps.answers, m, a => worker.postMessage(a)); return
        case 'synced': this.#syncs.answered(m.id); return
        case 'failed': reject(errorFrom(m.error)); return
        case 'fault':
          if (!listening || worker !== keeper.current || keeper.closing) return
          faulted = true
          log.error({ err: errorFrom(m.error), cause: m.cause }, 'the api worker failed; restarting it')
          observer.workerFault?.(m.cause)
          this.#boundFault(worker, exited, m.tid)
          keeper.died()
          return
        case 'events': events.read(m); return
        case 'standby': starting.waiting = true
      }
    })
    worker.on('error', err => {
      if (!listening) reject(err)
      else if (worker === keeper.current && !keeper.closing && !faulted) {
        faulted = true
        log.error({ err }, 'the api worker failed; restarting it')
        observer.workerFault?.('exception')
      }
    })
    worker.once('exit', code => {
      asked?.close()
      this.#syncs.releaseAll()
      this.#threads.forget(events)
      if (!listening) reject(new EndedUnheard(code))
      else if (worker === keeper.current) {
        // Asked to close, it ends: no fault.
        if (!faulted && !keeper.closing) {
          log.error({ exitCode: code }, 'the api worker stopped; restarting it')
          observer.workerFault?.('exit')
        }
        keeper.died()
      }
    })
  }

  /**
   * A worker that told of its fault: its successor starts now, while it closes its store
   * (its listeners are already cut, and its successor binds their ports when they are free).
   * It ends itself within its own bound (door/worker.ts); one still running after
   * FAULT_BOUND_MS is stuck in synchronous code, which no timer of its own can end. Its
   * listeners were cut at its fault, so no request is parsed when it is terminated.
   */
  #boundFault (worker: Worker, exited: Promise<void>, tid: number | undefined): void {
    const { ending } = this.#threads
    ending.add(exited)
    const since = worker.performance.eventLoopUtilization()
    const cpuFrom = tid === undefined ? undefined : threadCpuMs(tid)
    const bound = setTimeout(() => {
      // Its event loop's share of the bound (near 1: it never went idle) and the CPU its
      // thread used meanwhile (near the bound: it spun; near 0: it waited for a CPU,
      // a thread at api.workerNice on a saturated machine).
      const loopBusy = Number(worker.performance.eventLoopUtilization(since).utilization.toFixed(2))
      const cpuNow = tid === undefined ? undefined : threadCpuMs(tid)
      const cpuMs = cpuFrom === undefined || cpuNow === undefined ? undefined : cpuNow - cpuFrom
      this.#deps.log.warn({ boundMs: FAULT_BOUND_MS, loopBusy, cpuMs }, 'the failed api worker did not end; terminating it')
      void worker.terminate()
    }, FAULT_BOUND_MS)
    void exited.then(() => { clearTimeout(bound); ending.delete(exited) })
  }
}
