// A refusal sent before the body is read reaches a client that writes
// its whole body before it reads (Python's http.client, most Java clients).
import t from 'tap'
import tls from 'node:tls'
import { testPki, type KeyPairPem } from '../helpers/certs.ts'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH } from '../helpers/programme.ts'

const MB5 = 5 * 1024 * 1024
const body = Buffer.alloc(MB5, 0x20)   // spaces: valid JSON whitespace, never parsed here

interface Exchange { status?: number; connection?: string; error?: string }

/**
 * A plain blocking client, as http.client: writes the request head and the whole body,
 * reading nothing meanwhile, then reads the response. A write that fails (the server
 * closed the connection under the upload) is what such a client reports, whatever
 * node's TLS layer may have read meanwhile: no status.
 */
function blockingPost (url: URL, opts: { cert?: KeyPairPem; headers: Record<string, string>; chunked?: boolean }): Promise<Exchange> {
  return new Promise(resolve => {
    const head = [`POST ${INBOUND_PATH} HTTP/1.1`, `host: ${url.host}`]
    for (const [k, v] of Object.entries(opts.headers)) head.push(`${k}: ${v}`)
    head.push(opts.chunked ? 'transfer-encoding: chunked' : `content-length: ${body.length}`)
    const s = tls.connect({
      host: url.hostname, port: Number(url.port), ca: testPki().serverCa.certPem,
      ...(opts.cert ? { cert: opts.cert.certPem, key: opts.cert.keyPem } : {}),
    })
    let writeError: string | undefined
    let response = ''
    s.on('error', err => { writeError ??= (err as NodeJS.ErrnoException).code ?? err.message })
    s.once('secureConnect', () => {
      s.pause()   // read nothing until the whole body is written
      s.write(head.join('\r\n') + '\r\n\r\n')
      if (opts.chunked) {
        for (let at = 0; at < body.length; at += 65536) {
          const piece = body.subarray(at, at + 65536)
          s.write(`${piece.length.toString(16)}\r\n`)
          s.write(piece)
          s.write('\r\n')
        }
        s.write('0\r\n\r\n')
      } else {
        s.write(body)
      }
      s.write('', err => {
        if (err) writeError ??= (err as NodeJS.ErrnoException).code ?? err.message
        s.setEncoding('latin1')
        s.on('data', d => { response += d })
        s.resume()
      })
    })
    s.once('close', () => {
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(response)
      const connection = /\r\nconnection: ([^\r]*)/i.exec(response)?.[1]
      // A blocking client stops at the failed write: what it had been sent is never read.
      resolve(writeError ? { error: writeError } : { status: status ? Number(status[1]) : undefined, connection })
    })
  })
}

t.test('a client that writes a 5 MB body before reading gets every early refusal, every time', async t => {
  const epx = await startEpx(t)
  const { cert } = await epx.addCompany('acme')
  const inbound = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const outboundOnly = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const json = { 'content-type': 'application/json' }
  const cases: Array<[string, number, Parameters<typeof blockingPost>[1]]> = [
    ['no token', 401, { cert, headers: json }],
    ['a bad token', 401, { cert, headers: { ...json, authorization: 'Bearer epx_' + 'A'.repeat(43) } }],
    ['a token without the inbound scope', 403, { cert, headers: { ...json, authorization: `Bearer ${outboundOnly.secret}` } }],
    ['no client certificate', 403, { headers: { ...json, authorization: `Bearer ${inbound.secret}` } }],
    ['Content-Type text/plain', 415, { cert, headers: { 'content-type': 'text/plain', authorization: `Bearer ${inbound.secret}` } }],
  ]
  for (const [what, status, opts] of cases) {
    const got: Exchange[] = []
    for (let i = 0; i < 5; i++) got.push(await blockingPost(epx.url, opts))
    t.same(got, Array(5).fill({ status, connection: 'close' }), `${what}: ${status} with Connection: close, 5 times out of 5`)
  }
})

t.test('a 5 MB body over a 1 MiB limit gets its 413, declared or chunked, every time', async t => {
  const epx = await startEpx(t, { config: { inbound: { maxBodyBytes: 1024 * 1024 } } })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${secret}` }
  for (const chunked of [false, true]) {
    const got: Exchange[] = []
    for (let i = 0; i < 5; i++) got.push(await blockingPost(epx.url, { cert, headers, chunked }))
    t.same(got, Array(5).fill({ status: 413, connection: 'close' }), `${chunked ? 'chunked' : 'Content-Length'}: 413, 5 times out of 5`)
  }
})
