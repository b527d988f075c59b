/**
 * The webhook deliverer's thread, `epx-webhooks` (DECISIONS.md "Events for BSPs"): the
 * deliverer (webhooks/deliverer.ts) runs here, so its TLS handshakes, requests, JSON
 * parses, HMACs and store writes cost the solver's event loop nothing. It opens the store
 * beside the plugin's (`Store.threadShare()`: the same LMDB environment, or the same
 * PostgreSQL replica, which the main thread's handle keeps following), waits on the
 * process's event bell (shared memory: every thread's events ring it), and reads the host's
 * clock as the door's worker does (`door/protocol.ts` `clockOf`). Its log lines and counts
 * reach the main thread as the door's do, in batched `events` messages (door/events-out.ts).
 * Its starter (start.ts) restarts it when it ends unasked: the cursors and leases are in
 * the store, so a restart loses nothing (at least once).
 * @module
 */
import { parentPort, workerData } from 'node:worker_threads'
import { err as serializeError } from 'pino-std-serializers'
import { openConfiguredStore, type Store } from '../../store/open-store.ts'
import { openEventBell } from '../../store/event-bell.ts'
import { clockOf, errorData } from '../../door/protocol.ts'
import { eventsOut } from '../../door/events-out.ts'
import { nameThisThread, niceThisThread } from '../../os-thread.ts'
import { startDeliverer, type Deliverer } from '../deliverer.ts'
import { connectOptionsOf } from '../echo-check.ts'
import type { FromDeliveries, ToDeliveries, DeliveriesStart } from './start.ts'

const port = parentPort!
const start = workerData as DeliveriesStart
nameThisThread('epx-webhooks')
const post = (m: FromDeliveries) => port.postMessage(m)
/** Its log lines and counts leave together, at most one message every FLUSH_MS. */
const FLUSH_MS = 100
const events = eventsOut(post, {
  observed: { answered: false, handshakes: false, programmes: false }, flushMs: FLUSH_MS, maxRecords: 1024, errorJson: err => serializeError(err),
})
const log = events.log.child({ area: 'webhooks' })
/** store.kind "postgres": its connection beside the main thread's pool (the claims, the settlements: one write at a time). */
const POOL_SIZE = 1

async function open (): Promise<{ store: Store; deliverer: Deliverer }> {
  const { config } = start
  // Behind the solver's thread when both want the CPU, as the door is (api.workerNice).
  niceThisThread(config.api.workerNice)
  const store = openConfiguredStore(config.store, {
    dataDir: start.dataDir, path: start.storePath, log: events.log.child({ area: 'store' }), onWriteFailed: () => events.event({ e: 'storeError' }),
    besideThisProcess: { share: start.storeShare, poolSize: POOL_SIZE },
  })
  try {
    await store.opened
    const deliverer = startDeliverer({
      store, bell: openEventBell(start.eventBell, () => store.latest()), clock: clockOf(start.clock), log,
      connect: connectOptionsOf(config.webhooks, start.dataDir), counted: events.webhookAttempt,
    })
    return { store, deliverer }
  } catch (err) {
    await store.close()
    throw err
  }
}

const opened = open()
let ending: Promise<void> | undefined
/** The deliverer's own close (an attempt under way gets its second, leases released), then the store's. */
const end = (): Promise<void> => ending ??= opened.then(async ({ store, deliverer }) => {
  try { await deliverer.close() } finally { await store.close() }
}, () => {})

/**
 * A fault ends the thread in order, never by Node's teardown, which stops the isolate
 * wherever it is (door/worker.ts says why that can take the process down with lmdb-js):
 * told, then closed (what it holds released), then exited; stuck, after DIE_BOUND_MS.
 */
const DIE_BOUND_MS = 5000
let dying = false
const die = (err: unknown): void => {
  if (dying) return
  dying = true
  post({ type: 'fault', error: errorData(err) })
  setTimeout(() => process.exit(1), DIE_BOUND_MS).unref()
  void end().catch(() => {}).finally(() => { events.flush(); process.exit(1) })
}
process.on('uncaughtException', die)
process.on('unhandledRejection', die)

port.on('message', (m: ToDeliveries) => {
  if (m.type === 'wake') {
    void opened.then(({ deliverer }) => deliverer.wake(), () => {})
  } else if (m.type === 'close') {
    if (dying) return
    void end().catch(() => {}).finally(() => {
      events.flush()
      post({ type: 'closed' })
      port.close()
    })
  } else if (m.type === 'crash') {
    setImmediate(() => { throw new Error('webhook deliverer crash requested by a test') })
  }
})

opened.then(({ deliverer }) => post({ type: 'running', owner: deliverer.owner }), (err: unknown) => {
  events.flush()
  post({ type: 'failed', error: errorData(err) })
  process.exit(1)
})
