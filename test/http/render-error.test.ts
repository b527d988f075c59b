import t from 'tap'
import { EpxError } from '../../src/errors.ts'
import { inboundBody, problemBody, renderError, toWireError } from '../../src/http/render-error.ts'

const BASE = 'https://epx.example.net'

t.test('inbound errors are {error:{code,message,details}} as application/json', async t => {
  const e = new EpxError('INVALID_PROGRAMME_SOUTIRAGE_REQUEST', ['2 problems'], {
    details: { '/sites/0/energie_programmee/3/debut_utc': 'must be aligned to a 900 s boundary', '': 'x' },
  })
  const r = renderError(e, 'inbound', BASE)
  t.equal(r.status, 400)
  t.equal(r.headers['content-type'], 'application/json')
  t.equal(r.headers['content-length'], String(Buffer.byteLength(r.body)))
  t.same(JSON.parse(r.body), {
    error: {
      code: 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST',
      message: 'request validation failed: 2 problems',
      details: { '/sites/0/energie_programmee/3/debut_utc': 'must be aligned to a 900 s boundary', '': 'x' },
    },
  })
  t.equal(Object.keys(JSON.parse(r.body).error).join(), 'code,message,details', 'field order')
})

t.test('inbound details are {} when the error has none', async t => {
  t.same(inboundBody(new EpxError('SCOPE_DENIED', ['inbound:programme-soutirage'])).error.details, {})
})

t.test('outbound errors are RFC 9457 problem+json with type {base_url}/errors/<slug>', async t => {
  const r = renderError(new EpxError('NOT_PUBLISHED', ['PRM30000000000001', '2026-11-22']), 'outbound', BASE)
  t.equal(r.status, 404)
  t.equal(r.headers['content-type'], 'application/problem+json')
  const p = JSON.parse(r.body)
  t.same(p, {
    type: 'https://epx.example.net/errors/not-found',
    title: 'Not Found',
    status: 404,
    detail: 'no Besoins_Agreges is published for site PRM30000000000001 on 2026-11-22; retry in 5 minutes at the earliest',
    code: 'NOT_PUBLISHED',
  })
  t.equal(Object.keys(p).join(), 'type,title,status,detail,code', 'field order')
})

t.test('an unknown path (no door) renders as problem+json, type unknown-path, code UNKNOWN_PATH: not the "nothing published yet" of not-found', async t => {
  const r = renderError(new EpxError('UNKNOWN_PATH', ['/x']), undefined, BASE)
  t.equal(r.headers['content-type'], 'application/problem+json')
  t.match(JSON.parse(r.body), { type: `${BASE}/errors/unknown-path`, status: 404, code: 'UNKNOWN_PATH' })
})

t.test('a trailing slash of the base URL does not double', async t => {
  t.equal(problemBody(new EpxError('UNKNOWN_PATH', ['/x']), `${BASE}/`).type, `${BASE}/errors/unknown-path`)
})

t.test('an outbound 400 adds invalid_params [{name, reason}] from the details', async t => {
  const p = problemBody(new EpxError('INVALID_QUERY', ['site_id'], {
    details: { site_id: 'must be PRM followed by 14 digits', target_date: 'must be a real date YYYY-MM-DD' },
  }), BASE)
  t.same(p.invalid_params, [
    { name: 'site_id', reason: 'must be PRM followed by 14 digits' },
    { name: 'target_date', reason: 'must be a real date YYYY-MM-DD' },
  ])
  t.equal(p.code, 'INVALID_QUERY')
  t.equal(Object.keys(p).join(), 'type,title,status,detail,invalid_params,code', 'field order')
})

t.test('every outbound problem carries its code; the store\'s is STORE_UNAVAILABLE', async t => {
  for (const code of ['MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'SCOPE_DENIED'] as const) {
    const p = problemBody(new EpxError(code, ['x']), BASE)
    t.equal(p.code, code)
    t.equal(p.status, 403)
  }
  t.equal(problemBody(new EpxError('UNAUTHORIZED', ['x']), BASE).code, 'UNAUTHORIZED')
  t.equal(problemBody(new EpxError('METHOD_NOT_ALLOWED', ['PUT', 'GET, HEAD']), BASE).code, 'METHOD_NOT_ALLOWED')
  t.equal(problemBody(new EpxError('NO_STORE'), BASE).code, 'STORE_UNAVAILABLE')
  t.equal(inboundBody(new EpxError('NO_STORE')).error.code, 'NO_STORE', 'the inbound door keeps the contract\'s NO_STORE')
  t.notOk('invalid_params' in problemBody(new EpxError('UNAUTHORIZED', ['x']), BASE))
})

t.test('the error headers are sent: Allow, Retry-After, WWW-Authenticate', async t => {
  t.equal(renderError(new EpxError('METHOD_NOT_ALLOWED', ['PUT', 'POST'], { headers: { Allow: 'POST' } }), 'inbound', BASE).headers.allow, 'POST')
  t.equal(renderError(new EpxError('NO_STORE', [], { headers: { 'retry-after': '7' } }), 'outbound', BASE).headers['retry-after'], '7')
  // A header the thrower passes is sent as it is, on both doors, over the code's own.
  const challenge = 'Bearer realm="epx", error="insufficient_scope", scope="outbound:besoins-agreges"'
  for (const door of ['inbound', 'outbound'] as const) {
    t.equal(renderError(new EpxError('SCOPE_DENIED', ['outbound:besoins-agreges'], { headers: { 'WWW-Authenticate': challenge } }), door, BASE)
      .headers['www-authenticate'], challenge)
  }
})

t.test('codes that always carry a header get it even when the thrower forgot', async t => {
  t.equal(renderError(new EpxError('NO_STORE'), 'inbound', BASE).headers['retry-after'], '5')
  t.equal(renderError(new EpxError('NOT_PUBLISHED', ['a', 'b']), 'outbound', BASE).headers['retry-after'], '300')
  t.notOk(renderError(new EpxError('UNKNOWN_PATH', ['/x']), undefined, BASE).headers['retry-after'])
})

t.test('anything that is not a wire EpxError becomes 500 INTERNAL, keeping the original for the log', async t => {
  const boom = new TypeError('x is undefined')
  for (const [thrown, door] of [
    [boom, 'inbound'], [boom, 'outbound'], ['a string', 'outbound'], [undefined, 'inbound'],
    [Object.assign(new Error('econnreset'), { code: 'ECONNRESET' }), 'outbound'],
    [new EpxError('EPX_CONFIG_INVALID', ['x']), 'inbound'],
    [new EpxError('EPX_USAGE', ['x']), 'outbound'],
  ] as const) {
    const r = renderError(thrown, door, BASE)
    t.equal(r.status, 500)
    t.equal(r.code, 'INTERNAL')
    t.equal(r.unexpected, thrown)
    t.notOk(r.body.includes('x is undefined') || r.body.includes('econnreset'), 'no internals on the wire')
  }
  t.equal(toWireError(new EpxError('SCOPE_DENIED', ['s'])).unexpected, undefined)
})
