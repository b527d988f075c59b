/**
 * The web console's and the metrics listener's side of the door's worker (`api.inWorker`,
 * docs/plugin-contract.md): they listen in the same thread as the API door, so neither a console
 * page nor a scrape takes the solver's event loop. With plugin.ts, the worker's half of
 * the composition root (the one other module that wires doors together).
 *
 * In the worker: the listeners, their TLS and HTTP work, the console's store reads and
 * writes (users, sessions, tokens, companies, revisions, instructions, its audit
 * records) on the door's own LMDB handle. Asked of the solver's thread (door/asks.ts):
 * the solver's sites, "Publier maintenant", the metrics text and the readiness checks.
 * @module
 */
import type { EpxConfig } from '../config.ts'
import type { Clock, Logger } from '../host/contract.ts'
import type { Store } from '../store/open-store.ts'
import type { Companies } from '../store/companies.ts'
import type { Revisions } from '../store/revisions.ts'
import type { Instructions } from '../store/instructions.ts'
import { openTokens } from '../store/tokens.ts'
import { openUsers } from '../store/users.ts'
import { openSessions } from '../store/sessions.ts'
import type { Audit } from '../store/audit.ts'
import { listenMetrics } from '../metrics/server.ts'
import type { Asker } from './asks.ts'
import type { SidePorts } from './protocol.ts'

/**
 * How long /readyz waits for the solver's thread: a readiness probe wants an answer
 * within its own timeout (Kubernetes: 1 s by default), and a solver's thread that cannot
 * answer in a second is a reason not to be ready (the API's POSTs wait for it too).
 */
export const READY_ASK_MS = 1000
/** How long /metrics waits (Prometheus' default scrape timeout is 10 s). */
export const METRICS_ASK_MS = 8000

export interface WorkerListeners {
  readonly consoleUrl?: URL
  readonly metricsUrl?: URL
  /** Drains both (in-flight pages finish). */
  close(): Promise<void>
  /** At once: both stop accepting and cut every connection (a thread about to die). */
  abort(): void
}

export async function openWorkerListeners (o: {
  readonly config: EpxConfig
  readonly dataDir: string
  /** The ports first bound (a restarted worker binds them again); default the configured ones. */
  readonly ports?: SidePorts
  readonly store: Store
  readonly companies: Companies
  readonly revisions: Revisions
  readonly instructions: Instructions
  /** The door's audit trail (it writes what remains at the door's close). */
  readonly audit: Audit
  readonly clock: Clock
  readonly log: Logger
  readonly apiUrl: URL
  readonly asks: Asker
}): Promise<WorkerListeners> {
  const { config, store, asks } = o
  const closers: Array<() => Promise<void>> = []
  const aborters: Array<() => void> = []
  const close = async () => {
    const errors: unknown[] = []
    for (const c of closers.reverse()) await c().catch((e: unknown) => { errors.push(e) })
    if (errors.length) throw new AggregateError(errors, 'epx: the worker\'s listeners did not close cleanly')
  }
  try {
    let consoleUrl: URL | undefined
    if (config.console.enabled) {
      // Fastify and the pages, loaded only when the console is on.
      const { startConsole } = await import('../console/server.ts')
      const web = await startConsole({
        config: o.ports ? { ...config, console: { ...config.console, port: o.ports.console } } : config,
        dataDir: o.dataDir,
        deps: {
          store, companies: o.companies, tokens: openTokens(store), users: openUsers(store), sessions: openSessions(store),
          revisions: o.revisions, instructions: o.instructions, audit: o.audit,
          publisher: { publish: request => asks.ask({ ask: 'publish', request }) },
          sites: () => asks.ask({ ask: 'sites' }),
          clock: o.clock, log: o.log.child({ area: 'console' }), apiUrl: o.apiUrl,
        },
      })
      closers.push(() => web.close())
      aborters.push(() => web.abort())
      consoleUrl = web.url
    }
    let metricsUrl: URL | undefined
    if (config.metrics.enabled) {
      const metrics = await listenMetrics({
        host: config.metrics.host, port: o.ports?.metrics ?? config.metrics.port, log: o.log,
        exposition: () => asks.ask({ ask: 'metrics' }, METRICS_ASK_MS),
        // /healthz is answered here alone: the listeners are alive; a busy solver is not a dead plugin.
        readiness: () => asks.ask({ ask: 'readiness' }, READY_ASK_MS).catch((err: unknown) =>
          [{ name: 'host', ok: false, reason: (err as Error).message }]),
      })
      closers.push(() => metrics.close())
      aborters.push(() => metrics.abort())
      metricsUrl = metrics.url
    }
    return { consoleUrl, metricsUrl, close, abort: () => { for (const a of aborters) a() } }
  } catch (err) {
    await close().catch(() => {})
    throw err
  }
}
