import t, { type Test } from 'tap'
import net from 'node:net'
import tls from 'node:tls'
import pino from 'pino'
import { Agent, request } from 'undici'
import { conformance } from '../helpers/openapi.ts'
import { loadConfig } from '../../src/config.ts'
import { EpxError } from '../../src/errors.ts'
import type { Logger } from '../../src/host/contract.ts'
import { ManualClock } from '../../src/host/reference-host.ts'
import { listenApi } from '../../src/http/listener.ts'
import { OUTBOUND_PATH, type Route } from '../../src/http/route.ts'
import { hashToken, newTokenSecret } from '../../src/auth/tokens.ts'
import { SCOPES } from '../../src/contract/scopes.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openTokens } from '../../src/store/tokens.ts'
import { clientCert, testPki, writePki } from '../helpers/certs.ts'
import { startEpx } from '../helpers/epx.ts'

/** A bare listener over a real store, with routes of the test's choosing. */
async function startListener (t: Test, opts: { api?: object; routes?: Route[] } = {}) {
  const dataDir = t.testdir()
  writePki(dataDir)
  const lines: string[] = []
  const log = pino({ level: 'debug' }, { write: (l: string) => { lines.push(l) } }) as unknown as Logger
  const store = openStore(`${dataDir}/store`)
  const companies = openCompanies(store)
  const tokens = openTokens(store)
  const clock = new ManualClock('2026-11-21T12:30:00Z')
  await companies.add({ id: 'acme', name: 'acme', status: 'active', certSubject: 'CN=acme,O=acme', perimeter: 'all', createdAt: '2026-11-01T00:00:00Z' })
  const secret = newTokenSecret()
  await tokens.add({ id: 'tok_1', hash: hashToken(secret), companyId: 'acme', scopes: [...SCOPES], createdAt: '2026-11-01T00:00:00Z' })
  const config = loadConfig({ api: { host: '127.0.0.1', port: 0, ...opts.api } })
  const api = await listenApi({ config, dataDir, log, clock, store, companies, tokens, routes: opts.routes ?? [] })
  t.teardown(async () => { await api.close(); await store.close() })
  return { api, secret, cert: clientCert('CN=acme,O=acme'), logs: () => lines.map(l => JSON.parse(l)), dataDir, store, companies, tokens, clock, log }
}

const route = (methods: Route['methods']): Route => ({ path: OUTBOUND_PATH, door: 'outbound', scope: 'outbound:besoins-agreges', methods })

/** A raw TLS connection with the acme certificate; resolves once the handshake is done. */
function connectTls (url: URL, withCert = true): Promise<tls.TLSSocket> {
  const cert = clientCert('CN=acme,O=acme')
  return new Promise((resolve, reject) => {
    const s = tls.connect({
      host: url.hostname, port: Number(url.port), ca: testPki().serverCa.certPem,
      ...(withCert ? { cert: cert.certPem, key: cert.keyPem } : {}),
    }, () => resolve(s))
    s.on('error', reject)
  })
}

/** What node's http server writes when headersTimeout or requestTimeout cuts a request short. */
const REQUEST_TIMEOUT_408 = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n'

const closed = (s: net.Socket) => new Promise<string>(resolve => {
  let data = ''
  s.setEncoding('utf8')
  s.on('data', d => { data += d })
  s.on('error', () => {})
  s.on('close', () => resolve(data))
})

t.test('close() is idempotent, closes idle keep-alive connections and leaves no server handle', async t => {
  const servers = () => process.getActiveResourcesInfo().filter(r => r === 'TCPServerWrap').length
  const before = servers()
  const l = await startListener(t, { routes: [route({ GET: (_q, res) => { res.end('ok') } })] })
  t.equal(servers(), before + 1)
  const s = await connectTls(l.api.url)
  const done = closed(s)
  s.write(`GET ${OUTBOUND_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${l.secret}\r\n\r\n`)
  await new Promise(r => s.once('data', r))   // answered; the connection stays open (keep-alive)
  const a = l.api.close()
  t.equal(l.api.close(), a, 'a second call returns the same promise')
  await a
  await done
  t.pass('the idle keep-alive connection was closed')
  t.equal(servers(), before, 'no server handle left')
  await t.resolves(l.api.close(), 'a call after the end resolves')
  const refused = await new Promise<string>(resolve => {
    net.connect(Number(l.api.url.port), '127.0.0.1').on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? '')).on('connect', () => resolve('connected'))
  })
  t.equal(refused, 'ECONNREFUSED', 'no longer accepting')
})

t.test('close() lets an in-flight request finish before the server is gone', async t => {
  let release!: () => void
  const gate = new Promise<void>(r => { release = r })
  let entered!: () => void
  const inside = new Promise<void>(r => { entered = r })
  const l = await startListener(t, { routes: [route({ GET: async (_q, res) => { entered(); await gate; res.end('late but whole') } })] })
  const s = await connectTls(l.api.url)
  const done = closed(s)
  s.write(`GET ${OUTBOUND_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${l.secret}\r\n\r\n`)
  await inside
  const closing = l.api.close()
  release()
  await closing
  t.match(await done, /^HTTP\/1\.1 200[\s\S]*late but whole$/)
})

t.test('close() asks every request in flight to end its connection: each answer says Connection: close', async t => {
  let release!: () => void
  const gate = new Promise<void>(r => { release = r })
  let inside = 0
  let allInside!: () => void
  const entered = new Promise<void>(r => { allInside = r })
  const l = await startListener(t, { routes: [route({ GET: async (_q, res) => { if (++inside === 3) allInside(); await gate; res.end('done') } })] })
  const sockets = await Promise.all([connectTls(l.api.url), connectTls(l.api.url), connectTls(l.api.url)])
  const answers = sockets.map(s => closed(s))
  for (const s of sockets) s.write(`GET ${OUTBOUND_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${l.secret}\r\n\r\n`)
  await entered
  const started = Date.now()
  const closing = l.api.close()
  release()
  await closing
  for (const answer of await Promise.all(answers)) t.match(answer, /^HTTP\/1\.1 200[\s\S]*\r\nConnection: close\r\n[\s\S]*done$/i)
  t.ok(Date.now() - started < 900, 'each connection ends with its answer, not at the grace period\'s cut')
})

t.test('the url is https://<host>:<actual port>', async t => {
  const l = await startListener(t)
  t.match(l.api.url.href, /^https:\/\/127\.0\.0\.1:\d+\/$/)
  t.not(l.api.url.port, '0')
})

t.test('a slow client that never finishes its headers is cut by headersTimeout', async t => {
  const l = await startListener(t, { api: { headersTimeoutMs: 200, requestTimeoutMs: 400 } })
  const s = await connectTls(l.api.url)
  const done = closed(s)
  s.write(`GET ${OUTBOUND_PATH} HTTP/1.1\r\nHost: x\r\n`)   // and nothing more
  // Resolves only when the server closes the socket; without headersTimeout the test times out.
  t.equal(await done, REQUEST_TIMEOUT_408, 'a 408 and the close, nothing else')
})

t.test('a slow client that sends its headers but never finishes its body is cut by requestTimeout', async t => {
  let ended = false
  const l = await startListener(t, {
    api: { headersTimeoutMs: 200, requestTimeoutMs: 300 },
    routes: [route({ GET: (req, res) => { req.resume(); req.on('end', () => { ended = true; res.end('ok') }) } })],
  })
  const s = await connectTls(l.api.url)
  const done = closed(s)
  s.write(`GET ${OUTBOUND_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${l.secret}\r\nContent-Length: 1000\r\n\r\n0123456789`)
  const answer = await done   // without requestTimeout this waits for the 30 s default and the test times out
  t.notOk(ended, 'the handler never saw a whole body')
  t.equal(answer, REQUEST_TIMEOUT_408, 'a 408 and the close, never the handler answer')
})

t.test('a client that never completes the TLS handshake is cut by handshakeTimeout', async t => {
  const l = await startListener(t, { api: { handshakeTimeoutMs: 200 } })
  const s = net.connect(Number(l.api.url.port), '127.0.0.1')
  t.equal(await closed(s), '', 'the raw TCP connection was closed without a byte')
  t.ok(l.logs().some(x => x.msg === 'tls handshake failed'), 'logged at debug')
})

t.test('Expect: 100-continue is answered only once the caller is authenticated', async t => {
  const l = await startListener(t, { routes: [route({ GET: (_q, res) => { res.end('ok') } })] })
  const s = await connectTls(l.api.url, false)
  const done = closed(s)
  s.write(`GET ${OUTBOUND_PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`)
  const answer = await done
  t.match(answer, /^HTTP\/1\.1 403 /, 'the first answer is the 403, not 100 Continue')
  t.notMatch(answer, /100 Continue/)
  t.match(answer, /connection: close/i, 'the unread body is not drained')
})

t.test('a handler that throws anything but an EpxError answers 500 INTERNAL, logged, and the server lives on', async t => {
  const l = await startListener(t, {
    routes: [route({
      GET: () => { throw new TypeError('boom at line 1') },
      HEAD: async () => { await Promise.resolve(); throw new EpxError('EPX_CONFIG_INVALID', ['operator-only']) },
    })],
  })
  const agent = new Agent({ connect: { ca: testPki().serverCa.certPem, cert: l.cert.certPem, key: l.cert.keyPem } }).compose(conformance)
  t.teardown(() => agent.close())
  const headers = { authorization: `Bearer ${l.secret}` }
  const res = await request(new URL(OUTBOUND_PATH, l.api.url), { dispatcher: agent, headers })
  t.equal(res.statusCode, 500)
  const p = await res.body.json() as Record<string, unknown>
  t.match(p, { type: `${l.api.url.origin}/errors/internal`, status: 500 })
  t.notOk(JSON.stringify(p).includes('boom'), 'no internals on the wire')
  const head = await request(new URL(OUTBOUND_PATH, l.api.url), { dispatcher: agent, headers, method: 'HEAD' })
  t.equal(head.statusCode, 500)
  t.equal(await head.body.text(), '', 'HEAD has no body')
  const failed = l.logs().filter(x => x.msg === 'api request failed')
  t.equal(failed.length, 2)
  t.match(failed[0], { level: 50, status: 500, code: 'INTERNAL', err: { type: 'TypeError', message: 'boom at line 1' } })
})

t.test('a handler that fails after it started answering gets its connection cut', async t => {
  const l = await startListener(t, {
    routes: [route({
      GET: async (_q, res) => {
        res.writeHead(200, { 'content-length': '100' })
        res.write('part')
        await new Promise(r => setImmediate(r))
        throw new Error('late')
      },
    })],
  })
  const s = await connectTls(l.api.url)
  const done = closed(s)
  s.write(`GET ${OUTBOUND_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${l.secret}\r\n\r\n`)
  const text = await done
  t.match(text, /^HTTP\/1\.1 200/)
  t.notMatch(text, /HTTP\/1\.1 500/, 'the connection was cut instead of a second status line')
})

t.test('keep-alive requests on one connection each pass the chain', async t => {
  const l = await startListener(t, { routes: [route({ GET: (_q, res) => { res.end('ok') } })] })
  const s = await connectTls(l.api.url)
  const done = closed(s)
  for (let i = 0; i < 3; i++) s.write(`GET ${OUTBOUND_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${l.secret}\r\n\r\n`)
  s.write(`GET ${OUTBOUND_PATH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  const text = await done
  t.equal(text.match(/HTTP\/1\.1 200/g)?.length, 3, 'three answers on the same connection')
  t.match(text, /HTTP\/1\.1 401/, 'and the token is still checked on each request')
})

t.test('unreadable TLS files are EPX_TLS_FILES naming the file', async t => {
  const dataDir = t.testdir()
  const store = openStore(`${dataDir}/store`)
  t.teardown(() => store.close())
  const config = loadConfig({ api: { host: '127.0.0.1', port: 0 } })
  const log = pino({ level: 'silent' }) as unknown as Logger
  await t.rejects(listenApi({
    config, dataDir, log, clock: new ManualClock('2026-11-21T12:30:00Z'), store,
    companies: openCompanies(store), tokens: openTokens(store), routes: [],
  }), { code: 'EPX_TLS_FILES', message: /pki\/server\.crt/ })
})

t.test('a port in use is EPX_LISTEN_FAILED', async t => {
  const first = await startListener(t)
  const dataDir = t.testdir()
  writePki(dataDir)
  const config = loadConfig({ api: { host: '127.0.0.1', port: Number(first.api.url.port) } })
  await t.rejects(listenApi({
    config, dataDir, log: first.log, clock: first.clock, store: first.store,
    companies: first.companies, tokens: first.tokens, routes: [],
  }), { code: 'EPX_LISTEN_FAILED' })
})

t.test('the per-request log: one line per request, never a secret', async t => {
  const epx = await startEpx(t, { config: { api: { publicBaseUrl: 'https://epx.example.net/' } } })
  const { cert } = await epx.addCompany('acme')
  const { id, secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const query = { site_id: 'PRM30000000000001', target_date: '2026-11-22' }
  const before = epx.logs().filter(x => x.msg === 'api request').length
  const answers = [
    await epx.request({ path: OUTBOUND_PATH, query, cert, token: secret }),
    await epx.request({ path: OUTBOUND_PATH, query: { ...query, access_token: secret }, cert }),
    await epx.request({ path: '/nope', token: secret }),
    await epx.request({ method: 'POST', path: OUTBOUND_PATH, cert, token: secret, body: { a: 1 } }),
  ]
  // With the door in its worker (the default), its lines reach the host's logger in batches, a few ms after the answers.
  const requestLines = () => epx.logs().filter(x => x.msg === 'api request').slice(before)
  for (let i = 0; i < 200 && requestLines().length < answers.length; i++) await new Promise(r => setTimeout(r, 10))
  const lines = requestLines()
  t.equal(lines.length, answers.length, 'exactly one line per request')
  t.match(lines[0], {
    level: 30, method: 'GET', path: `${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-22`,
    status: answers[0]!.status, durationMs: Number, companyId: 'acme', tokenId: id,
  })
  t.same(lines.map(l => l.status), answers.map(a => a.status))
  t.equal(lines[1].companyId, undefined, 'no caller when the chain failed')
  const all = JSON.stringify(epx.logs())
  t.notOk(all.includes(secret.slice(4)), 'the secret never reaches the log, not even from a query string')
  t.notOk(/authorization|bearer/i.test(all), 'no Authorization header in the log')

  t.test('publicBaseUrl is the base of problem types', async t => {
    t.equal(answers[2]!.json().type, 'https://epx.example.net/errors/unknown-path')
  })
})

t.test('logRequests: false writes no request line', async t => {
  const epx = await startEpx(t, { config: { api: { logRequests: false } } })
  await epx.request({ path: '/nope' })
  t.equal(epx.logs().filter(x => x.msg === 'api request').length, 0)
})

t.test('startEpx restart(): same data folder, new listener, data kept', async t => {
  const epx = await startEpx(t)
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const first = epx.url.href
  await epx.restart()
  t.not(epx.url.href, first, 'a new port')
  const res = await epx.request({ path: OUTBOUND_PATH, cert, token: secret })
  t.equal(res.status, 400, 'the company and token survived the restart: past the door, the missing site_id is what is refused')
  const ref = epx.ref
  await epx.restart({ solver: true })
  t.not(epx.ref, ref, 'a new reference host')
})

t.test('successful reads are counted in a periodic summary, every other request keeps its line (docs/operating.md "What is logged where")', async t => {
  for (const logReads of ['summary', 'each'] as const) {
    const epx = await startEpx(t, { config: { api: { logReads, readSummarySeconds: 1 } } })
    const { cert } = await epx.addCompany('acme')
    const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
    const day = '2026-11-22'
    await epx.handle.publish({ targetDate: day })
    const get = (site: number, headers: Record<string, string> = {}) =>
      epx.request({ path: OUTBOUND_PATH, query: { site_id: `PRM3000000000000${site}`, target_date: day }, cert, token: secret, headers })
    const before = epx.logs().length
    const first = await get(1)
    t.equal(first.status, 200)
    await get(2)
    await get(1)
    t.equal((await get(1, { 'if-none-match': first.headers.etag! })).status, 304)
    t.equal((await epx.request({ path: '/nope', cert, token: secret })).status, 404)
    const lines = () => epx.logs().slice(before)
    const requests = () => lines().filter(l => l.msg === 'api request')
    const summary = () => lines().filter(l => l.msg === 'api reads')
    if (logReads === 'summary') {
      for (let i = 0; i < 300 && summary().length < 2; i++) await new Promise(r => setTimeout(r, 10))
      t.same(requests().map(l => l.status), [404], 'the refusal has its line, the reads none')
      t.match(summary().sort((a, b) => a.status - b.status), [
        { level: 30, companyId: 'acme', route: 'besoins-agreges', status: 200, count: 3, meanMs: Number, maxMs: Number, fromUtc: String, untilUtc: String },
        { companyId: 'acme', route: 'besoins-agreges', status: 304, count: 1 },
      ], 'one summary line per company, route and status')
    } else {
      for (let i = 0; i < 300 && requests().length < 5; i++) await new Promise(r => setTimeout(r, 10))
      t.same(requests().map(l => l.status), [200, 200, 200, 304, 404], '"each": a line per read')
      t.same(summary(), [])
    }
  }
})
