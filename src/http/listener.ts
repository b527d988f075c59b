/**
 * The mTLS HTTPS door of the API: one node:https server, its timeouts, the per-request
 * pipeline (route → authenticate → handler → error rendering → one log line) and close().
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Server } from 'node:https'
import type { TLSSocket } from 'node:tls'
import { performance } from 'node:perf_hooks'
import { inDataDir, type EpxConfig } from '../config.ts'
import type { Clock, Logger } from '../host/contract.ts'
import { readStore, type Store } from '../store/open-store.ts'
import type { Companies } from '../store/companies.ts'
import type { Tokens } from '../store/tokens.ts'
import { createAuthorizer } from '../auth/authorize.ts'
import { clientCertVerdict } from '../auth/client-cert.ts'
import { watchCrl } from '../auth/revocation.ts'
import { NO_CREDENTIALS, type AnyRoute, type Caller, type Door, type PageHandler, type RouteHandler } from './route.ts'
import { Context } from './request-context.ts'
import { createRouter } from './router.ts'
import { renderError, sendError } from './render-error.ts'
import { isLingering, lingerAfterRefusal, lingerMaxBytes } from './linger.ts'
import { capConnections } from './connection-cap.ts'
import { afterHandlesReleased, createApiServer, listen, ON_END, RATE_LIMIT, type ApiResponse } from './api-server.ts'
import { keepSessionVerdicts } from './tls-sessions.ts'
import type { ApiObserver } from './observer.ts'
import { keepTickObjects } from './tick-objects.ts'
import { budgetKindOf, createRateLimiter, type Bucket } from './rate-limit.ts'
import { EpxError } from '../errors.ts'
import { createReadSummary, isSummarizedRead } from './read-summary.ts'
import { InFlight, type Linked } from './in-flight.ts'

export interface ListenApiOptions {
  readonly config: Readonly<EpxConfig>
  readonly dataDir: string
  readonly log: Logger
  readonly clock: Clock
  readonly store: Store
  readonly companies: Companies
  readonly tokens: Tokens
  readonly routes: readonly AnyRoute[]
  /** Metrics and audit (plugin.ts); none: nothing is told. */
  readonly observer?: ApiObserver
}

export interface ApiListener {
  /** `https://<host>:<actual port>`. */
  readonly url: URL
  /** Stops accepting, lets in-flight requests finish (short grace), then cuts. Idempotent. */
  close(): Promise<void>
  /**
   * At once: stops accepting and destroys every connection, whatever its request's state
   * (a thread about to die, door/worker.ts: no byte is parsed, no handler runs after it).
   * close() still resolves once the server's handles are released.
   */
  abort(): void
  /** The server itself: the door's thread's fault seam throws from its 'request' event. */
  readonly server: Server
}

/** What the log line of a request needs, kept on its response (no closure per request). */
interface RequestState {
  readonly started: number
  readonly method: string
  readonly target: string
  caller: Caller | undefined
  route: AnyRoute | undefined
  door: Door | undefined
  /** The request budget it spent from, once its caller is known (its answer's RateLimit headers). */
  bucket: Bucket | undefined
  code: string | undefined
  failed: boolean
  failure: unknown
  /** Its log line is written (when its handler ended it, or when it closed). */
  told: boolean
  /** Its response, and its neighbours in the listener's requests in flight. */
  readonly res: ServerResponse
  prev: RequestState | undefined
  next: RequestState | undefined
}
/** An open connection, in the listener's list of them. */
interface OpenSocket extends Linked<OpenSocket> { readonly socket: Socket }

// load-bearing: GET 200, GET 304 and POST rows, no closure per request; no figure of its own (bench/README.md#where-the-doors-thread-spends-a-get)
const STATE = Symbol('epx request state')
type Tracked = ServerResponse & { [STATE]?: RequestState }

/** In-flight requests get this long after close() before their connections are cut. */
const CLOSE_GRACE_MS = 1000
/** Longest request target written to the log. */
const MAX_LOGGED_PATH = 512

export async function listenApi (opts: ListenApiOptions): Promise<ApiListener> {
  // The door's thread serves with node's streams, several ticks a request (the worker did it first thing).
  keepTickObjects()
  const { api } = opts.config
  const { log, clock } = opts
  const server = createApiServer(opts.dataDir, api)
  // The client CA's revocation list, re-read when its file changes (auth/revocation.ts).
  const revocation = api.tls.crlFile === undefined ? undefined : await watchCrl({
    crlPath: inDataDir(opts.dataDir, api.tls.crlFile), caPath: inDataDir(opts.dataDir, api.tls.clientCaFile), log, clock,
  })

  // Every TCP connection, handshaking or not, so close() can cut what the grace left
  // (a list, not a Set, for the reason the requests in flight are one: in-flight.ts).
  const sockets = new InFlight<OpenSocket>()
  const cap = capConnections(server, api.maxConnections, () => sockets.size, log)
  server.on('connection', (s: Socket) => {
    const open: OpenSocket = { socket: s, prev: undefined, next: undefined }
    sockets.add(open)
    s.once('close', () => { sockets.delete(open); cap.onClosed() })
  })
  // The certificate verdict is cached per connection: no renegotiation may change it.
  server.on('secureConnection', (s: TLSSocket) => { s.disableRenegotiation(); opts.observer?.handshake?.() })
  keepSessionVerdicts(server, { size: api.tls.sessionCacheSize, timeoutSeconds: api.tls.sessionTimeoutSeconds, clock }, revocation)
  server.on('tlsClientError', (err: Error & { code?: string }) => {
    log.debug({ code: err.code, reason: err.message }, 'tls handshake failed')
    opts.observer?.handshakeFailed?.(err.code ?? 'unknown')
  })

  await listen(server, api.host, api.port).catch((err: unknown) => { revocation?.close(); throw err })
  const { port } = server.address() as AddressInfo
  const url = new URL(`https://${api.host.includes(':') ? `[${api.host}]` : api.host}:${port}`)
  const baseUrl = (api.publicBaseUrl ?? url.origin).replace(/\/+$/, '')
  const router = createRouter(opts.routes, url.origin)
  // The metrics' route label: the path's last segment, made once per route.
  const routeLabels = new Map(opts.routes.map(r => [r, r.scope === NO_CREDENTIALS ? r.label : r.path.slice(r.path.lastIndexOf('/') + 1)]))
  const authorizer = createAuthorizer({ tokens: opts.tokens, companies: opts.companies, onDeadToken: opts.observer?.deadToken })
  const limiter = createRateLimiter(api.rateLimit)
  const reads = api.logRequests && api.logReads === 'summary'
    ? createReadSummary(log, api.readSummarySeconds, () => clock.now().getTime())
    : undefined
  server.on('error', (err: Error) => log.error({ err }, 'api listener error'))

  // Responses in progress: close() asks them to end their connection when done.
  const inflight = new InFlight<RequestState>()

  /**
   * The store generation, read once per turn of the loop: lmdb-js reads a turn's gets from
   * one snapshot anyway (its read transaction is renewed per turn), so the requests of a
   * turn would all read the same value; one read of it cost a GET ~1.8 µs (a get and its
   * msgpack decoding: bench/README.md#where-the-doors-thread-spends-a-get).
   */
  // load-bearing: GET 200 and GET 304, −1.8 µs a request (bench/README.md#where-the-doors-thread-spends-a-get)
  let generation: number | undefined
  const forgetGeneration = () => { generation = undefined }
  const generationNow = (): number => {
    if (generation === undefined) {
      // The turn's first request: its snapshot holds what another thread of this process has
      // committed, however recently (a revocation, a pin: store/environment.ts), and the
      // turn's requests read from it alone.
      opts.store.fresh()
      generation = readStore(opts.tokens.generation)
      setImmediate(forgetGeneration).unref()
    }
    return generation
  }
  let closing: Promise<void> | undefined
  const closeWhenDone = (res: ServerResponse) => {
    if (!res.headersSent) res.shouldKeepAlive = false   // sends Connection: close
    res.once('finish', () => setImmediate(() => server.closeIdleConnections()))
  }

  // The caller's fields are serialized once per caller (a pino child), not on every line:
  // a caller lives as long as its connection's cached authentication.
  const callerLogs = new WeakMap<Caller, Logger>()
  const callerLog = (caller: Caller): Logger => {
    let l = callerLogs.get(caller)
    if (!l) callerLogs.set(caller, l = log.child({ companyId: caller.companyId, tokenId: caller.tokenId }))
    return l
  }

  /** Ends a request: leaves the requests in flight and is told (if its handler did not end it). */
  function onClose (this: ServerResponse): void {
    inflight.delete((this as Tracked)[STATE]!)
    tell(this, true)
  }
  function onEnd (this: ServerResponse): void { tell(this, false) }

  /** The request's one log line (if enabled) and its metrics, once, when it is ended or cut. */
  function tell (res: ServerResponse, closed: boolean): void {
    const state = (res as Tracked)[STATE]!
    if (state.told) return
    state.told = true
    // Ended by its handler: the status is the one it set (its head may go with these bytes).
    const status = !closed || res.headersSent ? res.statusCode : undefined
    opts.observer?.answered?.(state.door ?? 'none', state.route ? routeLabels.get(state.route)! : 'none', state.method, status ?? 0, state.code, (performance.now() - state.started) / 1000)
    if (!api.logRequests) return
    const durationMs = Math.round((performance.now() - state.started) * 10) / 10
    // A successful read is counted in the periodic summary (read-summary.ts), unless cut.
    if (reads && state.caller && !state.failed && !(closed && !res.writableFinished) && isSummarizedRead(state.method, status)) {
      reads.count(state.caller.companyId, routeLabels.get(state.route!)!, status!, durationMs)
      return
    }
    // Exactly one line per other request, written when the exchange ends (or is cut).
    const line: Record<string, unknown> = { method: state.method, path: loggablePath(state.target), status, durationMs }
    if (state.code !== undefined) line.code = state.code
    if (state.failed) line.err = state.failure
    if (closed && !res.writableFinished) line.aborted = true
    const out = state.caller ? callerLog(state.caller) : log
    if (state.failed) out.error(line, 'api request failed')
    else out.info(line, 'api request')
  }

  /**
   * One request. Synchronous up to the handler, and a promise only when the handler
   * returns one: a GET costs no promise and no microtask of its own.
   */
  function handle (req: IncomingMessage, res: ServerResponse, expectContinue: boolean): void {
    const state: RequestState = {
      started: performance.now(), method: req.method ?? '', target: req.url ?? '',
      caller: undefined, route: undefined, door: undefined, bucket: undefined, code: undefined, failed: false, failure: undefined, told: false,
      res, prev: undefined, next: undefined,
    }
    ;(res as Tracked)[STATE] = state
    ;(res as ApiResponse)[ON_END] = onEnd
    // node 20 writes Connection: close on a connection's last allowed request
    // (maxRequestsPerSocket) but keeps it open until keepAliveTimeout; this closes it.
    if ((res as { maxRequestsOnConnectionReached?: boolean }).maxRequestsOnConnectionReached) res.shouldKeepAlive = false
    inflight.add(state)
    res.on('close', onClose)   // 'close' is emitted once: no `once` wrapper needed
    if (closing) closeWhenDone(res)
    try {
      const m = router.match(state.method, state.target)
      const { route } = m
      state.route = route
      state.door = route.door
      if (route.scope === NO_CREDENTIALS) {
        // The API's own documentation (a problem type's page): nobody's data, so no token and
        // no certificate beyond what the handshake asked for, and no company's budget.
        ;(m.handler as PageHandler)(req, res)
        return
      }
      // One Date per request: the same instant authenticates and stamps the request.
      const now = clock.now()
      // For every cache behind the request (callers, latest revisions).
      const generation = generationNow()
      const caller = state.caller = authorizer({
        cert: clientCertVerdict(req.socket as TLSSocket, revocation, Date.now()),
        authorization: req.headers.authorization,
        scope: route.scope,
        now,
        generation,
      }, req.socket)
      // DECISIONS.md "Rate limits and quotas": after the chain, before the body is read.
      const kind = budgetKindOf(state.method)
      const bucket = state.bucket = limiter.bucketOf(caller, kind)
      if (!bucket.take(limiter.budgetOf(caller, kind), now.getTime())) {
        opts.observer?.rateLimited?.(caller.companyId, m.route.door, kind, now.getTime())
        throw new EpxError('RATE_LIMITED', [caller.companyId, kind.toUpperCase(), bucket.perSecond, bucket.burst, bucket.retryAfterSeconds()])
      }
      ;(res as ApiResponse)[RATE_LIMIT] = [bucket.policy, bucket.remaining()]
      // Expect: 100-continue is honoured only once the caller is known (RFC 9110 §10.1.1).
      if (expectContinue) res.writeContinue()
      const done = (m.handler as RouteHandler)(req, res, new Context(m, caller, now, generation, callerLog))
      if (done) done.then(undefined, (err: unknown) => fail(req, res, state, err))
    } catch (err) {
      fail(req, res, state, err)
    }
  }

  /** Renders what a request threw in its door's format; never throws itself. */
  function fail (req: IncomingMessage, res: ServerResponse, state: RequestState, err: unknown): void {
    try {
      const door = state.door ?? router.routeOf(state.target)?.door
      let rendered = renderError(err, door, baseUrl)
      const { bucket } = state
      // An error to a known caller tells its budget too (sendError replaces every header).
      if (bucket) rendered = { ...rendered, headers: { ...rendered.headers, 'ratelimit-policy': bucket.policy, ratelimit: bucket.remaining() } }
      state.code = rendered.code
      // Refused before its body or at its save, alike (apply/quota.ts).
      if (rendered.code === 'QUOTA_EXCEEDED' && state.caller) opts.observer?.quotaExceeded?.(state.caller.companyId, clock.now().getTime())
      if (rendered.code === 'INTERNAL') {
        state.failed = true
        state.failure = err
        if (!api.logRequests) log.error({ err, method: state.method, path: loggablePath(state.target) }, 'api request failed')
      }
      const bodyUnread = declaresUnreadBody(req)
      // The refusal must reach a client still uploading: close only after its body (linger.ts).
      if (bodyUnread) lingerAfterRefusal(req, lingerBytes)
      ;(res as ApiResponse)[RATE_LIMIT] = undefined   // the rendered error says the budget itself
      sendError(res, rendered, { head: state.method === 'HEAD', bodyUnread })
    } catch (bug) {
      // Only a bug in the error path itself lands here; never let it reach the host.
      log.error({ err: bug }, 'api door failed to answer')
      res.destroy()
    }
  }

  const lingerBytes = lingerMaxBytes(opts.config.inbound.maxBodyBytes)
  // A request pipelined behind a refusal that closes the connection is not served.
  server.on('request', (req: IncomingMessage, res: ServerResponse) => isLingering(req.socket) ? req.socket.destroy() : handle(req, res, false))
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => isLingering(req.socket) ? req.socket.destroy() : handle(req, res, true))

  const close = () => {
    revocation?.close()
    if (!closing) for (const r of opts.routes) if ('close' in r) r.close?.()
    closing ??= new Promise<void>(resolve => {
      const cut = setTimeout(() => { for (const { socket } of sockets.now()) socket.destroy() }, CLOSE_GRACE_MS)
      server.close(() => { clearTimeout(cut); reads?.close(); afterHandlesReleased(resolve) })
      server.closeIdleConnections()
      for (const { res } of inflight.now()) closeWhenDone(res)
    })
    return closing
  }
  return {
    url,
    server,
    close,
    abort () {
      void close()
      for (const { socket } of sockets.now()) socket.destroy()
    },
  }
}

/** A request body is left unread when one was announced and the request is not over. */
function declaresUnreadBody (req: IncomingMessage): boolean {
  if (req.complete) return false
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/** The request target for the log: query kept (site_id, target_date), token-shaped text masked. */
function loggablePath (target: string): string {
  if (target.length <= MAX_LOGGED_PATH && !target.includes('epx_')) return target
  return target.slice(0, MAX_LOGGED_PATH).replace(/epx_[A-Za-z0-9_-]+/g, 'epx_[redacted]')
}
