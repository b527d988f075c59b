/**
 * The operator's listener (`metrics.*`; loopback by default, never the BSP door):
 * `GET /metrics` (Prometheus text), `GET /healthz` (the plugin is alive) and
 * `GET /readyz` (store open, API listening, last scheduled publication succeeded).
 * The exposition and the readiness are asked of functions: the registry and the checks
 * live on the solver's thread, and this listener may not (`api.inWorker`, door/asks.ts).
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Registry } from 'prom-client'
import type { Logger } from '../host/contract.ts'
import { EpxError } from '../errors.ts'
import { createServer } from '../node-http.ts'

/** One readiness check: ok, or why not. */
export interface ReadyCheck {
  readonly name: string
  /** Throws or returns a reason when not ready; returns undefined when ready. */
  check(): string | undefined
}

/** One check's verdict, as /readyz shows it. */
export interface ReadyResult { readonly name: string; readonly ok: boolean; readonly reason?: string }

/** Runs the checks where their state lives. */
export function readinessOf (checks: readonly ReadyCheck[]): ReadyResult[] {
  return checks.map(c => {
    let reason: string | undefined
    try { reason = c.check() } catch (err) { reason = (err as Error).message }
    return { name: c.name, ok: reason === undefined, ...(reason === undefined ? {} : { reason }) }
  })
}

/** A registry's exposition, as /metrics serves it. */
export function expositionOf (registry: Registry): () => Promise<{ contentType: string; text: string }> {
  return async () => ({ contentType: registry.contentType, text: await registry.metrics() })
}

export interface MetricsListener {
  readonly url: URL
  /** Stops listening and cuts every connection (a scrape in flight is cut too). */
  close(): Promise<void>
  /** close() without waiting (a thread about to die). */
  abort(): void
}

export async function listenMetrics (opts: {
  host: string
  port: number
  /** The Prometheus text; a rejection (the solver's thread did not answer) is a 503 saying why. */
  exposition: () => Promise<{ contentType: string; text: string }>
  readiness: () => Promise<readonly ReadyResult[]>
  log: Logger
}): Promise<MetricsListener> {
  const send = (res: ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' })
    res.end(body)
  }
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      return send(res, 405, 'text/plain; charset=utf-8', 'only GET\n')
    }
    if (path === '/metrics') {
      let page: { contentType: string; text: string }
      try {
        page = await opts.exposition()
      } catch (err) {
        return send(res, 503, 'text/plain; charset=utf-8', `metrics unavailable: ${(err as Error).message}\n`)
      }
      return send(res, 200, page.contentType, page.text)
    }
    if (path === '/healthz') return send(res, 200, 'application/json', '{"status":"alive"}\n')
    if (path === '/readyz') {
      const checks = await opts.readiness()
      const ready = checks.every(c => c.ok)
      return send(res, ready ? 200 : 503, 'application/json', JSON.stringify({ status: ready ? 'ready' : 'not ready', checks }) + '\n')
    }
    send(res, 404, 'text/plain; charset=utf-8', 'the paths are /metrics, /healthz and /readyz\n')
  }
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      opts.log.error({ err }, 'metrics listener failed to answer')
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'metrics unavailable\n')
      else res.destroy()
    })
  })
  server.keepAliveTimeout = 5000
  await new Promise<void>((resolve, reject) => {
    server.once('error', err => {
      server.close()
      reject(new EpxError('EPX_LISTEN_FAILED', [opts.host, opts.port, `${err.message} (metrics.host / metrics.port)`], { cause: err }))
    })
    server.listen(opts.port, opts.host, () => resolve())
  })
  server.on('error', err => opts.log.error({ err }, 'metrics listener error'))
  const { port } = server.address() as AddressInfo
  const url = new URL(`http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`)
  let closing: Promise<void> | undefined
  const close = () => closing ??= new Promise<void>(resolve => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
  return { url, close, abort: () => { void close() } }
}
