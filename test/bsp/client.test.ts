import t, { type Test } from 'tap'
import { createServer } from 'node:https'
import { testPki, clientCert } from '../helpers/certs.ts'
import { createBspClient } from '../../src/bsp/client.ts'

/** A TLS server that answers what the test says: how the client reads answers epx does not send (proxies, other versions). */
async function server (t: Test, answer: (path: string) => { status: number; headers?: Record<string, string>; body?: string }, o: { prefix?: string; ca?: string } = {}) {
  const pki = testPki()
  const s = createServer({ cert: pki.server.certPem, key: pki.server.keyPem }, (req, res) => {
    const a = answer(req.url ?? '')
    res.writeHead(a.status, a.headers)
    res.end(a.body)
  })
  await new Promise<void>(resolve => s.listen(0, '127.0.0.1', resolve))
  t.teardown(() => s.close())
  const cert = clientCert('CN=acme,O=acme')
  const client = createBspClient({ url: `https://127.0.0.1:${(s.address() as { port: number }).port}${o.prefix ?? ''}`, cert: cert.certPem, key: cert.keyPem, ca: o.ca ?? pki.serverCa.certPem, token: 'epx_x', now: () => new Date('2026-11-21T07:00:00Z') })
  t.teardown(() => client.close())
  return client
}

t.test('Retry-After as an HTTP date, or absent; error bodies that are not JSON', async t => {
  let next: { status: number; headers?: Record<string, string>; body?: string } = { status: 503 }
  const client = await server(t, () => next)
  next = { status: 503, headers: { 'retry-after': 'Sat, 21 Nov 2026 07:00:30 GMT' }, body: '<html>busy</html>' }
  const busy = await client.getBesoins({ siteId: 'PRM30000000000001', targetDate: '2026-11-22' })
  t.match(busy, { kind: 'retry', status: 503, detail: 'HTTP 503' })
  t.equal(busy.kind === 'retry' && busy.retryAfterSecs, 30, 'seconds from the client\'s clock until that date')
  next = { status: 404, headers: { 'retry-after': 'soon' } }
  t.match(await client.getBesoins({ siteId: 'PRM30000000000001', targetDate: '2026-11-22', lastModified: 'Sat, 21 Nov 2026 07:00:00 GMT' }), { kind: 'retry', status: 404, retryAfterSecs: undefined })
  // A wrong path is no "not yet": the client does not poll it again.
  next = { status: 404, headers: { 'content-type': 'application/problem+json' }, body: '{"type":"x/errors/unknown-path","title":"Not Found","status":404,"detail":"no resource at /x","code":"UNKNOWN_PATH"}' }
  t.match(await client.getBesoins({ siteId: 'PRM30000000000001', targetDate: '2026-11-22' }), { kind: 'refused', status: 404, code: 'UNKNOWN_PATH', detail: 'no resource at /x' })
  next = { status: 502, body: 'bad gateway' }
  t.match(await client.getBesoins({ siteId: 'PRM30000000000001', targetDate: '2026-11-22' }), { kind: 'refused', status: 502, detail: 'HTTP 502' })
  t.match(await client.postProgramme('{}'), { kind: 'refused', status: 502, message: 'HTTP 502', details: {} })
  next = { status: 503, headers: { 'retry-after': '7' }, body: '{"error":{"code":"NO_STORE","message":"storage unavailable"}}' }
  t.match(await client.postProgramme({}), { kind: 'retry', status: 503, retryAfterSecs: 7, detail: 'storage unavailable' })
})

const UNKNOWN = { status: 404, headers: { 'content-type': 'application/problem+json' }, body: '{"type":"x/errors/unknown-path","title":"Not Found","status":404,"detail":"no resource at /gw/x","code":"UNKNOWN_PATH"}' }

t.test('every call keeps the path of the base URL, and reads the problem+json of a wrong path with its code', async t => {
  const paths: string[] = []
  const client = await server(t, path => { paths.push(path); return UNKNOWN }, { prefix: '/gw/epx/' })
  const site = { siteId: 'PRM30000000000001', targetDate: '2026-11-22' }
  const wrong = { kind: 'refused', status: 404, code: 'UNKNOWN_PATH', message: 'no resource at /gw/x' }
  t.match(await client.getBesoins(site), wrong)
  t.match(await client.postProgramme({}), wrong)
  t.match(await client.getProgrammeStatus({ targetDate: '2026-11-22' }), wrong)
  t.match(await client.getRealise(site), wrong)
  t.match(await client.getSites(), wrong)
  t.same(paths.map(p => p.split('?')[0]), [
    '/gw/epx/api/v0.5/energy-programs/besoins-agreges',
    '/gw/epx/api/v0.5/energy-programs/programme-soutirage',
    '/gw/epx/api/v0.5/energy-programs/programme-soutirage',
    '/gw/epx/api/v0.5/energy-programs/realise',
    '/gw/epx/api/v0.5/energy-programs/sites',
  ])
})

t.test('a TLS failure is returned, as every other failure, never thrown', async t => {
  // The client trusts another CA than the one that signed the server's certificate.
  const client = await server(t, () => ({ status: 200, body: '{}' }), { ca: testPki().clientCa.certPem })
  const site = { siteId: 'PRM30000000000001', targetDate: '2026-11-22' }
  for (const answer of [await client.getBesoins(site), await client.postProgramme({}), await client.getProgrammeStatus({ targetDate: '2026-11-22' }), await client.getRealise(site), await client.getSites()]) {
    t.match(answer, { kind: 'unreachable', detail: /certificate/ })
  }
})

t.test('options a JavaScript caller got wrong are named, with what to give', async t => {
  const cert = clientCert('CN=acme,O=acme')
  const good = { url: 'https://epx.example.com:8443', cert: cert.certPem, key: cert.keyPem, token: 'epx_x' }
  const wrong = (opts: unknown) => t.throws(() => createBspClient(opts as Parameters<typeof createBspClient>[0]), TypeError)
  t.throws(() => createBspClient({} as Parameters<typeof createBspClient>[0]), { name: 'TypeError', message: /^createBspClient: options\.url is missing: give the service's base URL, e\.g\. https:/ })
  t.throws(() => createBspClient({ ...good, url: 'epx.example.com' }), { message: /options\.url "epx\.example\.com" is not an https:\/\/ URL/ })
  t.throws(() => createBspClient({ ...good, url: 'http://epx.example.com' }), { message: /not an https:\/\/ URL/ })
  t.throws(() => createBspClient({ ...good, key: '' }), { message: /options\.key is missing: give your client private key, PEM/ })
  t.throws(() => createBspClient({ ...good, token: ' ' }), { message: /options\.token is missing/ })
  wrong({ ...good, connections: 0 })
  wrong(undefined)
  const client = createBspClient(good)
  await client.close()
})
