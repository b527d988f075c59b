/**
 * A BSP's webhook endpoint for tests: a real HTTPS server on loopback with the test PKI's
 * server certificate (trusted by giving epx `WEBHOOK_CA`), that answers the echo check,
 * verifies each delivery's signature with `verifyWebhook` and keeps what it received.
 *
 *   const r = await startReceiver(t, { secret: () => s, answer: n => n < 2 ? 500 : 204, nowSeconds? })
 *   r.url, r.received (every POST: id, body, verdict), r.ids() (the ids answered 2xx, in order)
 * @module
 */
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import { verifyWebhook, type WebhookVerdict } from '../../src/contract/webhook-signature.ts'
import { testPki } from './certs.ts'

/** The CA of the receiver's certificate, for `webhooks.caFile` or `connect.ca`. */
export const WEBHOOK_CA = (): string => testPki().serverCa.certPem

export interface Received {
  readonly id: string
  readonly body: string
  readonly verdict: WebhookVerdict
  readonly status: number
}

export interface Receiver {
  readonly url: string
  readonly received: Received[]
  /** The ids of the deliveries answered 2xx, in the order they came. */
  ids(): string[]
  close(): Promise<void>
}

export interface ReceiverOptions {
  /** The secrets it verifies with (several during a rotation). */
  readonly secret: () => string | readonly string[]
  /** The status of the n-th POST (from 0); undefined: never answers. Default 204. */
  readonly answer?: (n: number, id: string) => number | undefined
  /** The receiver's clock for the timestamp's tolerance (a test on a manual clock). */
  readonly nowSeconds?: () => number
  /** What the echo check is answered: the value (default), or another status or body. */
  readonly echo?: (value: string) => { status: number; body: string }
}

export async function startReceiver (t: Test, o: ReceiverOptions): Promise<Receiver> {
  const { server: pair } = testPki()
  const received: Received[] = []
  const server = createServer({ cert: pair.certPem, key: pair.keyPem }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      if (req.method === 'GET') {
        const value = new URL(req.url ?? '/', 'https://receiver').searchParams.get('echo') ?? ''
        const a = o.echo?.(value) ?? { status: 200, body: value }
        res.writeHead(a.status, { 'content-type': 'text/plain' }).end(a.body)
        return
      }
      const body = Buffer.concat(chunks).toString('utf8')
      const verdict = verifyWebhook({ secret: o.secret(), headers: req.headers, body, ...(o.nowSeconds ? { nowSeconds: o.nowSeconds() } : {}) })
      const id = String(req.headers['webhook-id'])
      const status = o.answer ? o.answer(received.length, id) : 204
      received.push({ id, body, verdict, status: status ?? 0 })
      if (status !== undefined) res.writeHead(status).end()
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const close = async (): Promise<void> => {
    server.closeAllConnections()
    await new Promise<void>(resolve => server.close(() => resolve()))
  }
  t.teardown(close)
  return {
    url: `https://localhost:${(server.address() as AddressInfo).port}/hooks/epx`,
    received,
    ids: () => received.filter(r => r.status >= 200 && r.status < 300).map(r => r.id),
    close,
  }
}
