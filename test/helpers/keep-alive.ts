/**
 * One TLS connection held open by hand, for tests that must prove a rule reaches a
 * connection opened before the change (undici may reconnect behind a test's back).
 *
 *   const conn = await keepAliveConnection(epx.url, cert)   // cert null: none presented
 *   const again = await keepAliveConnection(epx.url, null, { session })   // offers a TLS session; again.reused
 *   const res = await conn.get('/path?x=1', token)          // { status, body, headers }
 *   conn.closed      // false while the one connection lives (it never reconnects); conn.close()
 *
 * Each answer is checked against the published description (`openapi.ts`).
 * Requests go one at a time (HTTP/1.1 keep-alive, no pipelining); a response must carry
 * Content-Length, as every epx answer does.
 * @module
 */
import tls from 'node:tls'
import { testPki, type KeyPairPem } from './certs.ts'
import { conformsToDescription } from './openapi.ts'

export interface RawResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

export interface KeepAliveConnection {
  get(path: string, token?: string): Promise<RawResponse>
  readonly closed: boolean
  /** The server resumed the offered session. */
  readonly reused: boolean
  close(): void
}

export function keepAliveConnection (url: URL, cert: KeyPairPem | null, opts: { session?: Buffer; maxVersion?: tls.SecureVersion } = {}): Promise<KeepAliveConnection> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0)
    let waiting: { resolve: (r: RawResponse) => void; reject: (e: Error) => void } | undefined
    let closed = false
    let reused = false
    const socket = tls.connect({
      host: url.hostname, port: Number(url.port), ca: testPki().serverCa.certPem,
      ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
      ...(opts.session ? { session: opts.session } : {}), ...(opts.maxVersion ? { maxVersion: opts.maxVersion } : {}),
    }, () => { reused = socket.isSessionReused(); resolve(conn) })
    socket.on('error', err => { if (waiting) waiting.reject(err); else reject(err) })
    socket.on('close', () => {
      closed = true
      waiting?.reject(new Error('the server closed the connection'))
    })
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk])
      const end = buffer.indexOf('\r\n\r\n')
      if (end < 0 || !waiting) return
      const lines = buffer.subarray(0, end).toString('latin1').split('\r\n')
      const headers: Record<string, string> = {}
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':')
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
      }
      const length = Number(headers['content-length'] ?? 0)
      if (buffer.length < end + 4 + length) return
      const body = buffer.subarray(end + 4, end + 4 + length).toString('utf8')
      buffer = buffer.subarray(end + 4 + length)
      const w = waiting
      waiting = undefined
      w.resolve({ status: Number(lines[0]!.split(' ')[1]), headers, body })
    })
    const conn: KeepAliveConnection = {
      async get (path, token) {
        const res = await send(path, token)
        await conformsToDescription({ method: 'GET', path: path.split('?')[0]! }, { ...res, text: res.body })
        return res
      },
      get closed () { return closed },
      get reused () { return reused },
      close: () => socket.destroy(),
    }
    const send = (path: string, token?: string): Promise<RawResponse> => {
      if (waiting) return Promise.reject(new Error('one request at a time'))
      return new Promise<RawResponse>((res, rej) => {
        waiting = { resolve: res, reject: rej }
        const auth = token === undefined ? '' : `Authorization: Bearer ${token}\r\n`
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\n${auth}\r\n`)
      })
    }
  })
}
