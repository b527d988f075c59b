/**
 * The operator's listener (`metrics.*`; loopback by default, never the BSP door):
 * `GET /metrics` (Prometheus text), `GET /healthz` (the plugin is alive) and
 * `GET /readyz` (store open, API listening, last scheduled publication succeeded).
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Registry } from 'prom-client'
import type { Logger } from '../host/contract.ts'
import { EpxError } from '../errors.ts'

/** One readiness check: ok, or why not. */
export interface ReadyCheck {
  readonly name: string
  /** Throws or returns a reason when not ready; returns undefined when ready. */
  check(): string | undefined
}

export interface MetricsListener {
  readonly url: URL
  close(): Promise<void>
}

export async function listenMetrics (opts: {
  host: string
  port: number
  registry: Registry
  checks: readonly ReadyCheck[]
  log: Logger
}): Promise<MetricsListener> {
  const readiness = () => opts.checks.map(c => {
    let reason: string | undefined
    try { reason = c.check() } catch (err) { reason = (err as Error).message }
    return { name: c.name, ok: reason === undefined, ...(reason === undefined ? {} : { reason }) }
  })
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
    if (path === '/metrics') return send(res, 200, opts.registry.contentType, await opts.registry.metrics())
    if (path === '/healthz') return send(res, 200, 'application/json', '{"status":"alive"}\n')
    if (path === '/readyz') {
      const checks = readiness()
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
  return {
    url,
    close: () => new Promise<void>(resolve => {
      server.close(() => resolve())
      server.closeAllConnections()
    }),
  }
}
