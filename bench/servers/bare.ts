/**
 * Server A, the limit: a bare `node:https` server with the same TLS options as epx,
 * answering a constant pre-serialized 200 (the same document bytes E serves), a constant
 * 304 when If-None-Match is present, and a POST that drains the body and answers 202.
 * No routing, no auth, no parsing: what TLS + HTTP alone cost in this process.
 * @module
 */
import { createServer } from 'node:https'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { failStart, send, serveControl, serverConfig, tlsOptions } from './harness.ts'

function main (): void {
  const cfg = serverConfig()
  const doc = readFileSync(cfg.documentFile)
  const common = {
    etag: cfg.etag,
    'last-modified': cfg.lastModified,
    'cache-control': 'private, max-age=60, must-revalidate',
  }
  const ok = { ...common, 'content-type': 'application/json', 'content-length': String(doc.length) }
  const accepted = Buffer.from(JSON.stringify({
    status: 'received',
    count: 1,
    instructions: [{ instruction_id: 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000Z', site_id: 'PRM30000000000000', periods_count: 96 }],
    message: '1 instruction(s) persisted; they will be applied at the next solver cycle',
  }))
  const acceptedHeaders = { 'content-type': 'application/json', 'content-length': String(accepted.length) }

  const server = createServer({
    ...tlsOptions(cfg),
    keepAliveTimeout: 65_000,
  }, (req, res) => {
    if (req.method === 'POST') {
      req.on('data', () => {})
      req.on('end', () => { res.writeHead(202, acceptedHeaders); res.end(accepted) })
      return
    }
    if (req.headers['if-none-match'] !== undefined) { res.writeHead(304, common); res.end(); return }
    res.writeHead(200, ok)
    res.end(doc)
  })

  serveControl('A')
  server.listen(0, '127.0.0.1', () => {
    send({ type: 'ready', port: (server.address() as AddressInfo).port })
  })
}

try { main() } catch (err) { failStart('A', err) }
