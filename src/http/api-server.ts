/**
 * The API's HTTPS server as DECISIONS.md "Robustness" wants it (mTLS options, no session
 * tickets, every slow-client timeout), its listen, and the wait for its handle to go.
 * Session resumption, which must keep the certificate verdict, is `tls-sessions.ts`.
 * The request pipeline that runs on it is `listener.ts`.
 * @module
 */
import type { IncomingMessage } from 'node:http'
import { createServer, type Server } from 'node:https'
import { constants } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { inDataDir, type EpxConfig } from '../config.ts'
import { EpxError } from '../errors.ts'
import { ServerResponse } from '../node-http.ts'

/**
 * DECISIONS.md "Robustness": the certificate check is ours (`rejectUnauthorized: false`
 * so a missing certificate gets a 403, not a dropped handshake), no session tickets (a
 * session resumes only from the server's own cache, `tls-sessions.ts`), and every
 * slow-client timeout is set on purpose.
 */
export function createApiServer (dataDir: string, api: EpxConfig['api']): Server {
  const files = {
    cert: inDataDir(dataDir, api.tls.certFile),
    key: inDataDir(dataDir, api.tls.keyFile),
    ca: inDataDir(dataDir, api.tls.clientCaFile),
  }
  const pem: Record<keyof typeof files, Buffer> = {} as never
  for (const [k, path] of Object.entries(files) as Array<[keyof typeof files, string]>) {
    try {
      pem[k] = readFileSync(path)
    } catch (err) {
      throw new EpxError('EPX_TLS_FILES', [path, (err as Error).message], { cause: err })
    }
  }
  // node refuses headersTimeout > requestTimeout; the stricter value wins.
  const headersTimeout = Math.min(api.headersTimeoutMs, api.requestTimeoutMs)
  try {
    const server = createServer({
      ServerResponse: ApiResponse,
      cert: pem.cert,
      key: pem.key,
      ca: pem.ca,
      requestCert: true,
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
      // No tickets: a session resumes only from tls-sessions.ts's cache, which keeps the
      // verdict of its full handshake (node keeps no session cache of its own).
      secureOptions: constants.SSL_OP_NO_TICKET,
      sessionTimeout: api.tls.sessionTimeoutSeconds,
      handshakeTimeout: api.handshakeTimeoutMs,
      headersTimeout,
      requestTimeout: api.requestTimeoutMs,
      keepAliveTimeout: api.keepAliveTimeoutMs,
      // The default check runs every 30 s, which would make the two timeouts above lax.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 2))),
      maxHeaderSize: api.maxHeaderSize,
    })
    // The last answer on a connection says Connection: close; the client reconnects.
    server.maxRequestsPerSocket = api.maxRequestsPerSocket
    return server
  } catch (err) {
    throw new EpxError('EPX_TLS_FILES', [`${files.cert} / ${files.key} / ${files.ca}`, (err as Error).message], { cause: err })
  }
}

/** Set on a response by its door: called once its handler ends it, before its last bytes leave. */
// load-bearing: GET 200, GET 304 and POST rows, one shared callback, no closure per response; no figure of its own (bench/README.md#where-the-doors-thread-spends-a-get)
export const ON_END = Symbol('epx on end')

/**
 * Set on a response by its door once the caller's budget is spent from: the `RateLimit-Policy`
 * and `RateLimit` values every answer of its handler carries (DECISIONS.md "Rate limits and
 * quotas"). An error the door renders carries its own and clears these.
 */
export const RATE_LIMIT = Symbol('epx rate limit')

/**
 * A response that tells its door when it is ended, before the bytes go: the request's
 * log line then reaches the host's logger (across threads, door/worker.ts) before the
 * client has the answer, so a client that reads the log after its answer finds the line.
 * Its head carries the caller's budget, added to the handler's own fields: a field set
 * before `writeHead` (`setHeader`) sends node down its slow path, where every field of the
 * head is set again one by one, each checked and lowercased into a table of its own
 * (bench/README.md#where-the-doors-thread-spends-a-get).
 */
export class ApiResponse<R extends IncomingMessage = IncomingMessage> extends ServerResponse<R> {
  declare [ON_END]?: (this: ServerResponse) => void
  declare [RATE_LIMIT]?: readonly [policy: string, remaining: string]
  override end (...args: unknown[]): this {
    this[ON_END]?.()
    return (super.end as (...a: unknown[]) => this)(...args)
  }

  // node's own signature, with its reason phrase optional (and its implicit call with the status alone).
  override writeHead (statusCode: number, reasonOrHeaders?: unknown, headers?: unknown): this {
    const write = super.writeHead as (code: number, a?: unknown, b?: unknown) => this
    const limit = this[RATE_LIMIT]
    if (limit === undefined) return write.call(this, statusCode, reasonOrHeaders, headers)
    const reason = typeof reasonOrHeaders === 'string' ? reasonOrHeaders : undefined
    const fields = flatFields(reason === undefined ? reasonOrHeaders : headers)
    fields.push('ratelimit-policy', limit[0], 'ratelimit', limit[1])
    return reason === undefined ? write.call(this, statusCode, fields) : write.call(this, statusCode, reason, fields)
  }
}

/** `writeHead`'s headers (an object, `[name, value]` pairs or a flat list) as a new flat list. */
function flatFields (headers: unknown): unknown[] {
  const out: unknown[] = []
  if (headers === undefined || headers === null) return out
  if (Array.isArray(headers)) {
    if (Array.isArray(headers[0])) for (const [k, v] of headers as unknown[][]) out.push(k, v)
    else for (const x of headers) out.push(x)
    return out
  }
  const o = headers as Record<string, unknown>
  for (const k in o) if (Object.hasOwn(o, k)) out.push(k, o[k])
  return out
}

export function listen (server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      server.off('listening', onListening)
      server.close()   // a failed listen still holds a handle: a failed activation leaves nothing
      reject(new EpxError('EPX_LISTEN_FAILED', [host, port, err.message], { cause: err }))
    }
    const onListening = () => {
      server.off('error', onError)
      resolve()
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(port, host)
  })
}

/**
 * Node emits the server's 'close' before libuv has closed its
 * listening handle, and until the loop's close phase has run that native handle keeps
 * the server, its listeners and so the whole activation (store, caches, loggers)
 * reachable. A host that activates and closes without an I/O turn in between kept
 * every activation (~60 KB each). Two check phases straddle a close phase, so `done`
 * runs once the handle is gone.
 */
export function afterHandlesReleased (done: () => void): void {
  setImmediate(() => setImmediate(done))
}
