/**
 * The door's one wiring: the API listener with its routes, the web console and the
 * metrics listener, built from the parts they need, wherever the door runs. What belongs
 * to the host (the solver's sites, "Publier maintenant", the metrics text, the readiness
 * checks, the metrics and receipts a request leaves behind, a token's last use) goes
 * through a small port: `tell` (never answered) and `ask` (one answer per question).
 * With `api.inWorker` (the default) the door's worker (worker.ts) calls `openDoor` with a
 * port over its messages to the solver's thread (protocol.ts); otherwise the plugin
 * calls it on the solver's thread with `portHere`, which calls the host's parts
 * directly. Both topologies run this same code; only the transport differs.
 * @module
 */
import type { EpxConfig } from '../config.ts'
import type { Clock, Logger } from '../host/contract.ts'
import type { Store } from '../store/open-store.ts'
import type { Companies } from '../store/companies.ts'
import type { Revisions } from '../store/revisions.ts'
import type { Instructions } from '../store/instructions.ts'
import type { InstructionFlags } from '../store/instruction-flags.ts'
import type { TokenRecord, Tokens } from '../store/tokens.ts'
import { openUsers } from '../store/users.ts'
import { openSessions } from '../store/sessions.ts'
import type { Audit } from '../store/audit.ts'
import type { Inbound } from '../apply/receive-programme.ts'
import type { StorageQuota } from '../apply/quota.ts'
import { listenApi, type ApiListener } from '../http/listener.ts'
import type { AnyRoute } from '../http/route.ts'
import { inboundRoute } from '../http/inbound-route.ts'
import { outboundRoute } from '../http/outbound-route.ts'
import { realiseRoute } from '../http/realise-route.ts'
import { sitesRoute } from '../http/sites-route.ts'
import { errorPageRoutes } from '../http/error-pages.ts'
import { eventsRoute } from '../http/events-route.ts'
import type { Events } from '../store/events.ts'
import type { EventBell } from '../store/event-bell.ts'
import type { Metering } from '../store/metering.ts'
import { openTenure, type Tenure } from '../store/tenure.ts'
import type { ApiObserver } from '../http/observer.ts'
import { listenMetrics } from '../metrics/server.ts'
import type { AskAnswers, Asks, SidePorts } from './protocol.ts'

/**
 * How long /readyz waits for the solver's thread: a readiness probe wants an answer
 * within its own timeout (Kubernetes: 1 s by default), and a solver's thread that cannot
 * answer in a second is a reason not to be ready (the API's POSTs wait for it too).
 */
export const READY_ASK_MS = 1000
/** How long /metrics waits (Prometheus' default scrape timeout is 10 s). */
export const METRICS_ASK_MS = 8000

/** The door's way to the host. */
export interface HostPort {
  /** What the door tells the host; nothing answers. */
  readonly tell: {
    /** Metrics of handshakes and answers, the audit of dead tokens. */
    readonly observer: ApiObserver
    /** A delivery receipt of a GET (the host's thread keeps the receipts). */
    receipt(companyId: string, siteId: string, targetDate: string, emittedAtMs: number, status: 200 | 304, atMs: number, pairKey?: string): void
    /** A token's last use (written by the host's thread: ordered with its other writes). */
    touch(token: TokenRecord, nowMs: number): void
  }
  /** Asks the host; `withinMs`: fails with a message saying so when it takes longer. */
  ask<K extends keyof Asks>(q: { ask: K } & Asks[K]['q'], withinMs?: number): Promise<Asks[K]['a']>
}

/** The port of a door on the host's own thread: every tell and ask is a call. */
export function portHere (o: {
  readonly observer: ApiObserver
  readonly receipts: { record: HostPort['tell']['receipt'] }
  readonly tokens: Pick<Tokens, 'touch'>
  readonly answers: AskAnswers
}): HostPort {
  return {
    tell: {
      observer: o.observer,
      receipt: (...a) => o.receipts.record(...a),
      touch: (token, nowMs) => o.tokens.touch(token, nowMs),
    },
    ask (q, withinMs) {
      const answer = Promise.resolve().then(() => (o.answers[q.ask] as (q: unknown) => Promise<any>)(q))
      if (withinMs === undefined) return answer
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`the solver's thread did not answer within ${withinMs} ms`)), withinMs)
      })
      return Promise.race([answer, late]).finally(() => clearTimeout(timer))
    },
  }
}

/** What the door is made of: the store's records on this thread's handle, and the inbound feature. */
export interface DoorParts {
  readonly config: EpxConfig
  readonly dataDir: string
  /** The ports first bound (a restarted worker binds them again); default the configured ones. */
  readonly ports?: { readonly api: number } & Partial<SidePorts>
  readonly store: Store
  readonly companies: Companies
  readonly tokens: Tokens
  readonly revisions: Revisions
  readonly instructions: Instructions
  readonly flags: Pick<InstructionFlags, 'get'>
  /** The meter values the host reports (the realise read). */
  readonly metering: Metering
  /** The companies' events (the feed) and the bell their writes ring. */
  readonly events: Pick<Events, 'page'>
  readonly bell: EventBell
  readonly audit: Audit
  /** Receives programmes (saves them, hands them to the solver's queue) and reports the door's refusals. */
  readonly inbound: Pick<Inbound, 'receive' | 'refusedAtDoor'>
  /** The storage quota: the inbound route refuses a POST that cannot fit before its body; the console shows it. */
  readonly quota?: StorageQuota
  readonly clock: Clock
  readonly log: Logger
  /** Binds a listener (a restarted worker waits there for its predecessor's ports); default: at once. */
  readonly listen?: <T>(open: () => Promise<T>) => Promise<T>
}

export interface OpenDoor {
  readonly url: URL
  readonly consoleUrl?: URL
  readonly metricsUrl?: URL
  /** The API listener (the worker's fault seam throws from its server's 'request' event). */
  readonly api: ApiListener
  /** Drains the three listeners (in-flight requests and pages finish within their grace). */
  close(): Promise<void>
  /** At once: every listener stops accepting and cuts its connections (a thread about to die). */
  abort(): void
}

/** The API listener's URL on `port` (as http/listener.ts names it once bound). */
function apiUrlOf (host: string, port: number): URL {
  return new URL(`https://${host.includes(':') ? `[${host}]` : host}:${port}`)
}

/** The API's routes: every path a BSP reaches is registered here, the problem types' pages too. */
function routesOf (parts: DoorParts, host: HostPort): AnyRoute[] {
  const { config } = parts
  // Who held a site when (DECISIONS.md "Tenure"): a company's realise read covers its own tenure.
  const tenure = openTenure(parts.store)
  return [
    inboundRoute({ maxBodyBytes: config.inbound.maxBodyBytes, inbound: parts.inbound, status: { instructions: parts.instructions, flags: parts.flags }, quota: parts.quota }),
    outboundRoute({ revisions: parts.revisions, receipts: { record: host.tell.receipt } }),
    realiseRoute({ instructions: parts.instructions, metering: parts.metering, tolerance: config.delivery, holders: (siteId, fromMs, untilMs) => tenure.holdersDuring(siteId, fromMs, untilMs) }),
    sitesRoute({ heldSince: (companyId, siteId) => heldSince(tenure, companyId, siteId) }),
    eventsRoute({ events: parts.events, bell: parts.bell }),
    ...errorPageRoutes(),
  ]
}

/** Since when the company has held the site without a break: the start of its span that has not ended. */
function heldSince (tenure: Pick<Tenure, 'heldSpans'>, companyId: string, siteId: string): number | undefined {
  const last = tenure.heldSpans(companyId, siteId, -Infinity, Number.MAX_SAFE_INTEGER).at(-1)
  return last?.untilMs === Number.MAX_SAFE_INTEGER ? last.fromMs : undefined
}

export async function openDoor (parts: DoorParts, host: HostPort): Promise<OpenDoor> {
  const { config, store, log } = parts
  const listen = parts.listen ?? (<T>(open: () => Promise<T>) => open())
  const closers: Array<() => Promise<void>> = []
  const aborters: Array<() => void> = []
  const close = async () => {
    const errors: unknown[] = []
    // All at once, as the worker did: each listener's grace runs alongside the others'.
    const results = await Promise.allSettled(closers.reverse().map(c => c()))
    for (const r of results) if (r.status === 'rejected') errors.push(r.reason)
    if (errors.length) throw new AggregateError(errors, 'epx: the door\'s listeners did not close cleanly')
  }
  try {
    // The web console: its own listener, so none of its work is on the API's path. Built
    // before the API binds when the API's port is known (a standby door builds it all
    // ahead and binds only when it takes over: door/supervisor.ts); else once it is bound.
    const prepareWeb = async (apiUrl: URL) => {
      // Fastify and the pages, loaded only when the console is on (a worker's every start would pay for them).
      const { prepareConsole } = await import('../console/server.ts')
      const consolePort = parts.ports?.console
      const prepared = await prepareConsole({
        config: consolePort === undefined ? config : { ...config, console: { ...config.console, port: consolePort } },
        dataDir: parts.dataDir,
        deps: {
          store, companies: parts.companies, tokens: parts.tokens, users: openUsers(store), sessions: openSessions(store),
          revisions: parts.revisions, instructions: parts.instructions, audit: parts.audit,
          publisher: { publish: request => host.ask({ ask: 'publish', request }) },
          sites: () => host.ask({ ask: 'sites' }),
          clock: parts.clock, log: log.child({ area: 'console' }), apiUrl,
        },
        bell: parts.bell,
      })
      closers.push(() => prepared.close())
      return prepared
    }
    const knownApiPort = parts.ports?.api ?? config.api.port
    let web = config.console.enabled && knownApiPort !== 0 ? await prepareWeb(apiUrlOf(config.api.host, knownApiPort)) : undefined

    const api = await listen(() => listenApi({
      config: parts.ports ? { ...config, api: { ...config.api, port: parts.ports.api } } : config,
      dataDir: parts.dataDir, log, clock: parts.clock, store, companies: parts.companies,
      tokens: { ...parts.tokens, touch: host.tell.touch },
      routes: routesOf(parts, host),
      observer: host.tell.observer,
    }))
    closers.push(() => api.close())
    aborters.push(() => api.abort())

    let consoleUrl: URL | undefined
    if (config.console.enabled) {
      web ??= await prepareWeb(api.url)
      const ready = web
      const running = await listen(() => ready.listen())
      aborters.push(() => running.abort())
      consoleUrl = running.url
    }

    let metricsUrl: URL | undefined
    if (config.metrics.enabled) {
      const metrics = await listen(() => listenMetrics({
        host: config.metrics.host, port: parts.ports?.metrics ?? config.metrics.port, log,
        exposition: () => host.ask({ ask: 'metrics' }, METRICS_ASK_MS),
        // /healthz is answered here alone: the listeners are alive; a busy solver is not a dead plugin.
        readiness: () => host.ask({ ask: 'readiness' }, READY_ASK_MS).catch((err: unknown) =>
          [{ name: 'host', ok: false, reason: (err as Error).message }]),
      }))
      closers.push(() => metrics.close())
      aborters.push(() => metrics.abort())
      metricsUrl = metrics.url
    }
    return { url: api.url, consoleUrl, metricsUrl, api, close, abort: () => { for (const a of aborters) a() } }
  } catch (err) {
    await close().catch(() => {})
    throw err
  }
}
