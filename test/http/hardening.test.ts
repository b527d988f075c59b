// The API's hardening — a cap on connections, on requests per
// connection, and `X-Content-Type-Options: nosniff` on every answer of both doors.
import t from 'tap'
import tls from 'node:tls'
import { Client } from 'undici'
import { conformance } from '../helpers/openapi.ts'
import { testPki, type KeyPairPem } from '../helpers/certs.ts'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme } from '../helpers/programme.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'

const DAY = '2026-11-22'

/** A TLS connection: resolves with the socket once the handshake is done, or with the error that ended it. */
function connect (url: URL, cert?: KeyPairPem): Promise<tls.TLSSocket | Error> {
  return new Promise(resolve => {
    const s = tls.connect({
      host: url.hostname, port: Number(url.port), ca: testPki().serverCa.certPem,
      ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
    }, () => resolve(s))
    s.once('error', resolve)
    s.once('close', () => resolve(new Error('closed before the handshake')))
  })
}

t.test('past api.maxConnections a new connection is closed at once, with one warn line per episode', async t => {
  const epx = await startEpx(t, { config: { api: { maxConnections: 2 } } })
  const { cert } = await epx.addCompany('acme')
  const a = await connect(epx.url, cert)
  const b = await connect(epx.url, cert)
  t.ok(a instanceof tls.TLSSocket && b instanceof tls.TLSSocket, 'two connections are taken')
  for (let i = 0; i < 3; i++) t.type(await connect(epx.url, cert), Error, `connection ${i + 3} is refused`)
  await epx.caughtUp()
  const warns = () => epx.logs().filter(l => l.level === 40 && /connection cap reached/.test(l.msg))
  t.equal(warns().length, 1, 'one warn line for three refused connections')
  t.equal(warns()[0].maxConnections, 2)

  ;(a as tls.TLSSocket).destroy()
  while (!epx.logs().some(l => l.msg === 'api connections accepted again')) await new Promise(r => setTimeout(r, 20))
  t.match(epx.logs().find(l => l.msg === 'api connections accepted again'), { level: 30, dropped: 3 })
  const c = await connect(epx.url, cert)
  t.ok(c instanceof tls.TLSSocket, 'a connection is taken again once one has closed')
  t.type(await connect(epx.url, cert), Error, 'and the cap holds again')
  await epx.caughtUp()
  t.equal(warns().length, 2, 'a new episode, a new warn line')
  ;(b as tls.TLSSocket).destroy()
  ;(c as tls.TLSSocket).destroy()
})

t.test('api.maxRequestsPerSocket: the last answer on a connection says Connection: close, the connection then ends cleanly, the next request is answered on a new one', async t => {
  const epx = await startEpx(t, { config: { api: { maxRequestsPerSocket: 3, keepAliveTimeoutMs: 120_000 } } })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  await epx.handle.publish({ targetDate: DAY })
  const path = `${OUTBOUND_PATH}?site_id=${epx.ref.sites[0]!.site_id}&target_date=${DAY}`

  // One raw connection, one request at a time.
  const s = await connect(epx.url, cert) as tls.TLSSocket
  let got = ''
  let ended = false
  let failed: Error | undefined
  s.setEncoding('latin1')
  s.on('data', d => { got += d })
  s.on('end', () => { ended = true })
  s.on('error', err => { failed = err })
  const closed = new Promise(resolve => s.once('close', resolve))
  const answers: string[] = []
  for (let i = 1; i <= 3; i++) {
    got = ''
    s.write(`GET ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${secret}\r\n\r\n`)
    while (!/\r\n\r\n\{[\s\S]*\}$/.test(got)) await new Promise(r => setTimeout(r, 5))
    answers.push(got)
  }
  // Coarse: the connection must not wait for the 120 s keep-alive timeout to end. The bound
  // is cleared once the race is decided: left running, it kept this file's process alive 20 s.
  let bound: NodeJS.Timeout | undefined
  const end = await Promise.race([closed.then(() => 'closed'), new Promise(r => { bound = setTimeout(r, 20_000, 'still open') })])
  clearTimeout(bound)
  t.equal(end, 'closed', 'the server closed the connection after the last answer')
  t.match(answers[0], /^HTTP\/1\.1 200 [\s\S]*\r\nconnection: keep-alive\r\n/i)
  t.match(answers[1], /^HTTP\/1\.1 200 [\s\S]*\r\nconnection: keep-alive\r\n/i)
  t.match(answers[2], /^HTTP\/1\.1 200 [\s\S]*\r\nconnection: close\r\n/i, 'the third answer closes')
  t.ok(ended, 'the server ended the connection (FIN)')
  t.equal(failed, undefined, 'no reset, no error')

  // A client that reuses its connection gets its 4th request answered on a new one.
  const client = new Client(epx.url, { connect: { ca: testPki().serverCa.certPem, cert: cert.certPem, key: cert.keyPem } })
  let connects = 0
  client.on('connect', () => { connects++ })
  const checked = client.compose(conformance)
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) {
    const res = await checked.request({ method: 'GET', path, headers: { authorization: `Bearer ${secret}` } })
    await res.body.text()
    statuses.push(res.statusCode)
  }
  await client.close()
  t.same(statuses, [200, 200, 200, 200])
  t.equal(connects, 2, 'three requests on the first connection, the fourth on a second')
})

t.test('every answer of both doors carries X-Content-Type-Options: nosniff', async t => {
  const epx = await startEpx(t, { config: { inbound: { maxBodyBytes: 2048 } } })
  const { cert } = await epx.addCompany('acme')
  const both = await epx.addToken('acme', ['outbound:besoins-agreges', 'inbound:programme-soutirage'])
  const outOnly = await epx.addToken('acme', ['outbound:besoins-agreges'])
  await epx.handle.publish({ targetDate: DAY })
  const site = epx.ref.sites[0]!.site_id
  const get = (query: Record<string, string>, o: { token?: string; headers?: Record<string, string>; cert?: KeyPairPem | null; method?: string } = {}) =>
    epx.request({ method: o.method ?? 'GET', path: OUTBOUND_PATH, query, cert: o.cert === undefined ? cert : o.cert, token: o.token ?? both.secret, headers: o.headers })
  const post = (body: unknown, o: { token?: string; headers?: Record<string, string> } = {}) =>
    epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: o.token ?? both.secret, body: body as object, headers: o.headers })

  const ok = await get({ site_id: site, target_date: DAY })
  const answers: Array<[string, Promise<{ status: number; headers: Readonly<Record<string, string>> }> | { status: number; headers: Readonly<Record<string, string>> }]> = [
    ['GET 200', ok],
    ['GET 304', get({ site_id: site, target_date: DAY }, { headers: { 'if-none-match': ok.headers.etag! } })],
    ['HEAD 200', get({ site_id: site, target_date: DAY }, { method: 'HEAD' })],
    ['POST 202', post(programme({ slots: 2 }))],
    ['GET 400', get({ site_id: 'nope', target_date: DAY })],
    ['GET 401', get({ site_id: site, target_date: DAY }, { token: 'epx_' + 'A'.repeat(43) })],
    ['GET 403', get({ site_id: site, target_date: DAY }, { cert: null })],
    ['GET 404', get({ site_id: site, target_date: '2026-12-25' })],
    ['GET 404 unknown path', epx.request({ path: '/nope', cert, token: both.secret })],
    ['PUT 405', get({ site_id: site, target_date: DAY }, { method: 'PUT' })],
    ['POST 400', post({ schema_version: 'v0.2' })],
    ['POST 401', post(programme({ slots: 1 }), { token: 'epx_' + 'B'.repeat(43) })],
    ['POST 403', post(programme({ slots: 1 }), { token: outOnly.secret })],
    ['POST 413', post(programme({ slots: 96 }))],
    ['POST 415', epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: both.secret, body: 'x', headers: { 'content-type': 'text/plain' } })],
  ]
  for (const [what, answer] of answers) {
    const res = await answer
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${what} (${res.status})`)
  }
  epx.faults.unavailable = true
  const down = await get({ site_id: site, target_date: DAY })
  t.equal(down.status, 503)
  t.equal(down.headers['x-content-type-options'], 'nosniff', 'GET 503')
  const downIn = await post(programme({ slots: 1 }))
  t.equal(downIn.headers['x-content-type-options'], 'nosniff', `POST ${downIn.status}`)
})
