import t from 'tap'
import { createRouter } from '../../src/http/router.ts'
import { INBOUND_PATH, OUTBOUND_PATH, type Route } from '../../src/http/route.ts'
import { startEpx } from '../helpers/epx.ts'

const ok = () => {}
const routes: Route[] = [
  { path: '/a', door: 'inbound', scope: 'inbound:programme-soutirage', methods: { POST: ok } },
  { path: '/b', door: 'outbound', scope: 'outbound:besoins-agreges', methods: { HEAD: ok, GET: ok } },
  { path: '/c', door: 'outbound', scope: 'outbound:besoins-agreges', methods: { GET: ok } },
]
const router = createRouter(routes, 'https://127.0.0.1:8443')

t.test('matches method and path, ignoring the query string', async t => {
  const m = router.match('GET', '/b?site_id=PRM30000000000001&target_date=2026-11-22')
  t.equal(m.route.path, '/b')
  t.equal(m.handler, ok)
  t.equal(m.url.searchParams.get('site_id'), 'PRM30000000000001')
  t.equal(router.match('POST', '/a?x=1').route.path, '/a')
})

t.test('an unknown path is UNKNOWN_PATH 404, whatever the method', async t => {
  for (const [method, target] of [['GET', '/nope'], ['POST', '/a/'], ['GET', '/B'], ['DELETE', '/'], ['GET', '*'], ['GET', '//a']]) {
    t.throws(() => router.match(method!, target!), { code: 'UNKNOWN_PATH', status: 404 }, `${method} ${target}`)
  }
})

t.test('a known path with another method is 405 with Allow listing the route methods in a fixed order', async t => {
  t.throws(() => router.match('GET', '/a'), { code: 'METHOD_NOT_ALLOWED', status: 405, headers: { allow: 'POST' } })
  t.throws(() => router.match('POST', '/b'), { code: 'METHOD_NOT_ALLOWED', headers: { allow: 'GET, HEAD' } })
  t.throws(() => router.match('OPTIONS', '/b'), { code: 'METHOD_NOT_ALLOWED', headers: { allow: 'GET, HEAD' } })
})

t.test('HEAD is allowed only where the route lists it', async t => {
  t.equal(router.match('HEAD', '/b').route.path, '/b')
  t.throws(() => router.match('HEAD', '/c'), { code: 'METHOD_NOT_ALLOWED', headers: { allow: 'GET' } })
})

t.test('an absolute-form request target is matched on its path', async t => {
  t.equal(router.match('GET', 'https://127.0.0.1:8443/c?x=1').route.path, '/c')
})

t.test('inherited object keys are not methods', async t => {
  for (const method of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    t.throws(() => router.match(method, '/a'), { code: 'METHOD_NOT_ALLOWED' }, method)
  }
})

t.test('two routes for one path are refused at start', async t => {
  t.throws(() => createRouter([routes[0]!, routes[0]!], 'https://x'), /two routes for \/a/)
})

t.test('through the door: 404 and 405 are answered before authentication', async t => {
  const epx = await startEpx(t)

  t.test('an unknown path is 404 problem+json, without certificate or token', async t => {
    const res = await epx.request({ path: '/api/v0.5/energy-programs/nope?token=x' })
    t.equal(res.status, 404)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { type: `${epx.url.origin}/errors/unknown-path`, title: 'Not Found', status: 404, code: 'UNKNOWN_PATH' })
    t.notOk(res.headers['retry-after'], 'an unknown path is not "retry later"')
  })

  t.test('DELETE on the inbound path is 405, Allow: GET, HEAD, POST (GET and HEAD read the status), in the inbound error format', async t => {
    const res = await epx.request({ method: 'DELETE', path: INBOUND_PATH })
    t.equal(res.status, 405)
    t.equal(res.headers.allow, 'GET, HEAD, POST')
    t.match(res.headers['content-type'], /^application\/json/)
    t.same(res.json(), { error: { code: 'METHOD_NOT_ALLOWED', message: 'DELETE is not allowed here; allowed: GET, HEAD, POST', details: {} } })
  })

  t.test('POST on the outbound path is 405, Allow: GET, HEAD, as problem+json', async t => {
    const res = await epx.request({ method: 'POST', path: OUTBOUND_PATH, body: { a: 1 } })
    t.equal(res.status, 405)
    t.equal(res.headers.allow, 'GET, HEAD')
    t.match(res.json(), { type: `${epx.url.origin}/errors/method-not-allowed`, status: 405 })
  })

  t.test('HEAD on the outbound path runs the chain and answers without a body', async t => {
    const res = await epx.request({ method: 'HEAD', path: OUTBOUND_PATH })
    t.equal(res.status, 403)
    t.equal(res.text, '')
    t.match(res.headers['content-type'], /^application\/problem\+json/)
  })

  t.test('PUT on the inbound path is 405 with Allow: GET, HEAD, POST', async t => {
    const res = await epx.request({ method: 'PUT', path: INBOUND_PATH, body: { a: 1 } })
    t.equal(res.status, 405)
    t.equal(res.headers.allow, 'GET, HEAD, POST')
  })
})

t.test('a path read without the URL parser matches exactly the paths the parser gives', async t => {
  const r = createRouter([
    { path: '/x/v0.5/y', door: 'outbound', scope: 'outbound:besoins-agreges', methods: { GET: ok } },
  ], 'https://127.0.0.1:8443')
  for (const target of ['/x/v0.5/y', '/x/v0.5/y?a=1', '/x/./v0.5/y', '/x/v0.5/z/../y', '/x/v0%2E5/y', '/x/%76%30.5/y', '/x\\v0.5/y']) {
    const viaUrl = new URL('https://127.0.0.1:8443' + target).pathname === '/x/v0.5/y'
    t.equal(r.routeOf(target)?.path === '/x/v0.5/y', viaUrl, target)
  }
  t.equal(r.match('GET', '/x/v0.5/y?a=1&a=2').url.searchParams.getAll('a').join(), '1,2', 'the URL is still there when asked for')
})
