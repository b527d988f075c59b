import t, { type Test as Tap } from 'tap'
import { connect, type TLSSocket } from 'node:tls'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { testPki, type KeyPairPem } from '../helpers/certs.ts'
import { INBOUND_PATH, programme } from '../helpers/programme.ts'

// DECISIONS.md "Inbound": Content-Type (415), body limit (413, the rest never read),
// JSON parsed safely (400 saying where it broke; no prototype keys).

async function setup (t: Tap, config: Record<string, any> = {}) {
  const epx = await startEpx(t, { config })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const post = (body: string | Buffer | object, headers: Record<string, string> = {}) =>
    epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body, headers })
  return { epx, cert, secret, post }
}

/** A raw mTLS connection: write what we like, read what comes back, see when it closes. */
function rawClient (epx: TestEpx, cert: KeyPairPem): Promise<{ socket: TLSSocket; received: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let text = ''
    const socket = connect({
      host: epx.url.hostname, port: Number(epx.url.port), ca: testPki().serverCa.certPem,
      cert: cert.certPem, key: cert.keyPem, servername: 'localhost',
    }, () => resolve({ socket, received: () => text, closed }))
    socket.on('data', d => { text += d.toString('latin1') })
    socket.on('error', () => {})   // EPIPE/ECONNRESET once the server has cut: expected
    const closed = new Promise<void>(res => socket.once('close', () => res()))
    socket.once('error', reject)
  })
}

async function untilResponse (received: () => string): Promise<string> {
  for (let i = 0; i < 500 && !received().includes('\r\n\r\n'); i++) await new Promise(r => setTimeout(r, 10))
  return received()
}

t.test('a Content-Type other than application/json is answered 415 UNSUPPORTED_MEDIA_TYPE', async t => {
  const { post } = await setup(t)
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonp']) {
    const res = await post(JSON.stringify(programme({ slots: 1 })), { 'content-type': type })
    t.equal(res.status, 415, type)
    t.equal(res.json().error.code, 'UNSUPPORTED_MEDIA_TYPE')
    t.match(res.json().error.message, type)
  }
  const none = await post(JSON.stringify(programme({ slots: 1 })), {})
  t.equal(none.status, 415, 'no Content-Type at all')
})

t.test('application/json with parameters, in any case, is accepted', async t => {
  const { post } = await setup(t)
  t.equal((await post(JSON.stringify(programme({ slots: 1 })), { 'content-type': 'application/json; charset=utf-8' })).status, 202)
  t.equal((await post(JSON.stringify(programme({ slots: 1 })), { 'content-type': 'Application/JSON' })).status, 202)
})

t.test('a declared Content-Length over the limit is answered 413 before any of the body is read', async t => {
  const { epx, cert, secret } = await setup(t, { inbound: { maxBodyBytes: 4096 } })
  const { socket, received, closed } = await rawClient(epx, cert)
  // 50 MB announced, 10 bytes sent: only a server that does not wait for the body answers.
  socket.write(`POST ${INBOUND_PATH} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${secret}\r\n` +
    'Content-Type: application/json\r\nContent-Length: 52428800\r\n\r\n{"sites":[')
  const head = await untilResponse(received)
  t.match(head, /^HTTP\/1\.1 413 /)
  t.match(head, /\r\nconnection: close\r\n/i)
  await closed
  t.match(received(), /"code":"PAYLOAD_TOO_LARGE"/)
  t.match(received(), /body exceeds the limit of 4096 bytes/)
})

t.test('a chunked body that grows over the limit is answered 413 and the connection is cut, the rest unread', async t => {
  const { epx, cert, secret } = await setup(t, { inbound: { maxBodyBytes: 4096 } })
  const { socket, received, closed } = await rawClient(epx, cert)
  socket.write(`POST ${INBOUND_PATH} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${secret}\r\n` +
    'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n')
  const chunk = 'x'.repeat(3000)
  socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)
  socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)   // 6000 > 4096
  const head = await untilResponse(received)
  t.match(head, /^HTTP\/1\.1 413 /)
  t.match(head, /\r\nconnection: close\r\n/i)
  await closed   // the server closes: it will not read the rest we could still send
  t.ok(socket.destroyed || !socket.writable, 'nothing more can be sent')
})

t.test('a body within the limit is read whole, chunked or not', async t => {
  const { post } = await setup(t, { inbound: { maxBodyBytes: 20000 } })
  t.equal((await post(programme({ slots: 8 }))).status, 202)
})

t.test('malformed JSON is answered 400 with details "" saying where it broke', async t => {
  const { post } = await setup(t)
  const res = await post('{\n  "schema_version": "v0.2",\n  "type": }', { 'content-type': 'application/json' })
  t.equal(res.status, 400)
  t.same(res.json(), {
    error: {
      code: 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST',
      message: 'request validation failed: the body is not a JSON document we accept',
      details: { '': 'not valid JSON at line 3, column 11 (character 40): found "}"; expected a value (object, array, string, number, true, false or null)' },
    },
  })
})

t.test('an empty body is answered 400 saying so', async t => {
  const { post } = await setup(t)
  const res = await post('', { 'content-type': 'application/json' })
  t.equal(res.status, 400)
  t.match(res.json().error.details[''], /the body is empty/)
})

t.test('__proto__ in the body is refused with 400 and pollutes nothing', async t => {
  const { post } = await setup(t)
  const body = JSON.stringify(programme({ slots: 1 })).replace('{', '{"__proto__":{"isAdmin":true},')
  const res = await post(body, { 'content-type': 'application/json' })
  t.equal(res.status, 400)
  t.match(res.json().error.details[''], /"__proto__".*not allowed/)
  t.equal(({} as Record<string, unknown>).isAdmin, undefined)
  const nested = JSON.stringify(programme({ slots: 1 })).replace('"site_name"', '"constructor":{"prototype":{"isAdmin":true}},"site_name"')
  t.equal((await post(nested, { 'content-type': 'application/json' })).status, 400)
})
