/**
 * One HTTP/1.1 GET on its own TLS connection (`Connection: close`), to control the TLS
 * session by hand: the version, the certificate, a session to offer.
 *
 *   const r = await tlsGet(epx.url, { maxVersion: 'TLSv1.2', cert?, session? }, path, token)
 *   r.status, r.body, r.reused (the server resumed the offered session), r.session (to offer next)
 *   const raw = await headOnly(epx.url, { cert, token }, 1_000_000)   // a POST's head alone
 *
 * `reused` is read when the handshake ends: once the socket has closed node answers null.
 * @module
 */
import tls from 'node:tls'
import { testPki, type KeyPairPem } from './certs.ts'
import { INBOUND_PATH } from '../../src/http/route.ts'

export interface TlsAnswer { status: number; body: string; reused: boolean; session?: Buffer }

export interface TlsGetOptions {
  readonly maxVersion?: tls.SecureVersion
  readonly cert?: KeyPairPem
  readonly session?: Buffer
}

export function tlsGet (url: URL, opts: TlsGetOptions, path: string, token: string): Promise<TlsAnswer> {
  return new Promise((resolve, reject) => {
    let session: Buffer | undefined
    let reused = false
    let data = ''
    const socket = tls.connect({
      host: url.hostname, port: Number(url.port), ca: testPki().serverCa.certPem,
      ...(opts.maxVersion ? { maxVersion: opts.maxVersion } : {}),
      ...(opts.cert ? { cert: opts.cert.certPem, key: opts.cert.keyPem } : {}),
      ...(opts.session ? { session: opts.session } : {}),
    }, () => {
      reused = socket.isSessionReused()
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`)
    })
    socket.on('session', s => { session = s })
    socket.setEncoding('utf8')
    socket.on('data', d => { data += d })
    socket.on('error', reject)
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n')
      resolve({ status: Number(head.split(' ')[1]), body, reused, session })
    })
  })
}

/**
 * Sends only the head of a POST to `path` announcing `length` bytes of body, never the
 * body; resolves to the whole answer (head and body): what a door that refuses a POST
 * before reading its body answers.
 */
export function headOnly (url: URL, who: { readonly cert: KeyPairPem; readonly token: string }, length: number, path = INBOUND_PATH): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: url.hostname, port: Number(url.port), ca: testPki().serverCa.certPem, cert: who.cert.certPem, key: who.cert.keyPem })
    let got = ''
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`no answer without the body; got ${JSON.stringify(got)}`)) }, 10_000)
    s.setEncoding('latin1')
    const done = () => { clearTimeout(timer); s.destroy(); resolve(got) }
    s.on('data', d => {
      got += d
      const end = got.indexOf('\r\n\r\n')
      const length = /\r\ncontent-length: (\d+)/i.exec(got)
      if (end !== -1 && length && got.length >= end + 4 + Number(length[1])) done()
    })
    s.on('error', reject)
    s.once('close', done)
    s.once('secureConnect', () => s.write([`POST ${path} HTTP/1.1`, `host: ${url.host}`, `authorization: Bearer ${who.token}`,
      'content-type: application/json', `content-length: ${length}`, '', ''].join('\r\n')))
  })
}
