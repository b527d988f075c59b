/**
 * The main thread's side of the webhook deliverer's thread (worker.ts): starts it, hands
 * what it tells (log lines, counts: door/events-in.ts) to the host's logger and metrics,
 * forwards wakes, and keeps it alive: a thread that ends unasked is logged at `error` and
 * started again, at once, then with the door's backoff in a crash loop (door/supervisor.ts
 * `Backoff`). Nothing is lost meanwhile: the cursors and leases are in the store.
 *
 * Started once there is an endpoint to deliver to (at activation, or seen later within
 * LOOK_MS, or told by `wake`): a plugin with none carries no idle thread.
 * @module
 */
import { Worker } from 'node:worker_threads'
import type { EpxConfig } from '../../config.ts'
import type { Clock, Logger } from '../../host/contract.ts'
import type { StoreThreadShare } from '../../store/open-store.ts'
import { errorFrom, shareClock, systemOffset, type ErrorData, type EventsMessage, type SharedClock } from '../../door/protocol.ts'
import { eventsIn, type EventsInDeps } from '../../door/events-in.ts'
import { Backoff } from '../../door/supervisor.ts'
import { workerSource } from '../../apply/read-programme.ts'

/** workerData: what the thread needs to open, as plain data. */
export interface DeliveriesStart {
  readonly config: EpxConfig
  readonly dataDir: string
  readonly storePath: string
  readonly storeShare?: StoreThreadShare
  /** The process's event bell (store/event-bell.ts): rung by every thread's events. */
  readonly eventBell: SharedArrayBuffer
  readonly clock: SharedClock
}

/** Main → thread. */
export type ToDeliveries =
  /** Look at every endpoint now (a change another writer made; a test that moved the host's clock). */
  | { readonly type: 'wake' }
  /** The deliverer's close, then the store's; then `closed`. */
  | { readonly type: 'close' }
  /** Test seam: an exception on the thread's loop, as a bug would throw. */
  | { readonly type: 'crash' }

/** Thread → main. */
export type FromDeliveries =
  /** The deliverer runs, as `owner` in the endpoints' leases. */
  | { readonly type: 'running'; readonly owner: string }
  | { readonly type: 'failed'; readonly error: ErrorData }
  /** An exception or rejection no code handled: it closes and exits. */
  | { readonly type: 'fault'; readonly error: ErrorData }
  | { readonly type: 'closed' }
  | EventsMessage

export interface DeliveryThreadDeps {
  readonly start: Omit<DeliveriesStart, 'clock'>
  readonly clock: Clock
  readonly log: Logger
  /** Whether any endpoint is registered: the thread starts once one is. */
  readonly hasEndpoints: () => boolean
  readonly observer: EventsInDeps['observer']
}

export interface DeliveryThread {
  /** The running deliverer's name in the endpoints' leases (undefined while none runs). */
  readonly owner: string | undefined
  /** Look at every endpoint now; starts the thread if it has not started. */
  wake(): void
  /** Resolves once a deliverer runs (started now if none was). */
  running(): Promise<void>
  /** Test seam: the thread dies of an exception, and is started again. */
  crash(): void
  /** Ends the thread after the deliverer's own close; resolves once it has exited. Idempotent. */
  close(): Promise<void>
}

/** While no thread runs: how often the endpoints are looked at (the console and the CLI write them elsewhere). */
const LOOK_MS = 1000
/** How long close() waits for the thread to end before it terminates it (the deliverer's close takes a second at most). */
const CLOSE_BOUND_MS = 10_000

export function startDeliveryThread (deps: DeliveryThreadDeps): DeliveryThread {
  // Its own lines; the thread's come with their own bindings (worker.ts).
  const log = deps.log.child({ area: 'webhooks' })
  const offset = systemOffset(deps.clock)
  const backoff = new Backoff()
  const readers = { receipts: { record () {} }, tokens: { touch () {} }, handOver: (_: unknown, done: () => void) => done() }
  let current: { worker: Worker; owner?: string; exited: Promise<void> } | undefined
  let closing: Promise<void> | undefined
  let restart: NodeJS.Timeout | undefined
  const waiters: Array<() => void> = []

  const spawn = (): void => {
    const { clock, asked, transferList } = shareClock(deps.clock, offset)
    const [module, how] = workerSource(import.meta.url, 'webhooks-worker', './worker.ts')
    const worker = new Worker(module, { ...how, workerData: { ...deps.start, clock } satisfies DeliveriesStart, transferList })
    const events = eventsIn({ log: deps.log, observer: deps.observer, ...readers })
    const exited = new Promise<void>(resolve => worker.once('exit', () => resolve()))
    const self: NonNullable<typeof current> = current = { worker, exited }
    let faulted = false
    worker.on('message', (m: FromDeliveries) => {
      switch (m.type) {
        case 'events': events.read(m); return
        case 'running':
          self.owner = m.owner
          backoff.started()
          for (const w of waiters.splice(0)) w()
          return
        case 'failed': log.error({ err: errorFrom(m.error) }, 'the webhook deliverer\'s thread could not start; starting it again'); faulted = true; return
        case 'fault': log.error({ err: errorFrom(m.error) }, 'the webhook deliverer\'s thread failed; restarting it'); faulted = true
      }
    })
    worker.on('error', err => { if (!closing && !faulted) { faulted = true; log.error({ err }, 'the webhook deliverer\'s thread failed; restarting it') } })
    worker.once('exit', code => {
      asked?.close()
      if (current === self) current = undefined
      if (closing) return
      if (!faulted) log.error({ exitCode: code }, 'the webhook deliverer\'s thread stopped; restarting it')
      // One that never ran (its start failed) leaves the backoff growing.
      if (self.owner !== undefined) backoff.died()
      restart = setTimeout(() => { restart = undefined; if (!closing) { spawn(); backoff.tried() } }, backoff.delayMs)
    })
  }

  const ensure = (): void => {
    if (current || restart || closing) return
    clearInterval(looking)
    spawn()
  }
  const looking = setInterval(() => {
    try { if (deps.hasEndpoints()) ensure() } catch {}   // a store that cannot answer now: looked at again
  }, LOOK_MS).unref()
  try { if (deps.hasEndpoints()) ensure() } catch {}

  return {
    get owner () { return current?.owner },
    wake () {
      if (current) current.worker.postMessage({ type: 'wake' } satisfies ToDeliveries)
      else ensure()
    },
    running () {
      if (closing) return Promise.resolve()
      ensure()
      return current?.owner !== undefined ? Promise.resolve() : new Promise<void>(resolve => { waiters.push(resolve) })
    },
    crash () { current?.worker.postMessage({ type: 'crash' } satisfies ToDeliveries) },
    close () {
      closing ??= (async () => {
        clearInterval(looking)
        clearTimeout(restart)
        for (const w of waiters.splice(0)) w()
        const c = current
        if (!c) return
        c.worker.postMessage({ type: 'close' } satisfies ToDeliveries)
        const bound = setTimeout(() => {
          log.warn({ boundMs: CLOSE_BOUND_MS }, 'the webhook deliverer\'s thread did not end after close; terminating it')
          void c.worker.terminate()
        }, CLOSE_BOUND_MS)
        await c.exited
        clearTimeout(bound)
      })()
      return closing
    },
  }
}
