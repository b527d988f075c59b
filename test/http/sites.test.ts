import t from 'tap'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { siteId } from '../helpers/programme.ts'
import { SITES_PATH } from '../../src/contract/paths.ts'
import { SCOPES, type Scope } from '../../src/contract/scopes.ts'
import type { KeyPairPem } from '../helpers/certs.ts'

// The perimeter read (DECISIONS.md "Authentication and tenancy", an extension of the
// contract): GET sites, through the front door (mTLS, real tokens, LMDB, undici).

/** The test's clock stands at 2026-11-21T12:30Z; a company is added 30 days before unless told. */
const ADDED = '2026-10-22T12:30:00.000Z'

async function company (epx: TestEpx, id: string, perimeter: 'all' | string[], scopes: readonly Scope[] = ['outbound:besoins-agreges'], since?: string) {
  const { cert } = await epx.addCompany(id, { perimeter, ...(since ? { since } : {}) })
  const { secret } = await epx.addToken(id, scopes)
  return { cert, secret, sites: (o: { token?: string; cert?: KeyPairPem | null; headers?: Record<string, string>; method?: string } = {}) =>
    epx.request({ method: o.method ?? 'GET', path: SITES_PATH, cert: o.cert === undefined ? cert : o.cert, token: o.token ?? secret, headers: o.headers ?? {} }) }
}

t.test('a company reads its own sites with any of its tokens, each with since when it holds it; 304 while unchanged', async t => {
  const epx = await startEpx(t)
  const acme = await company(epx, 'acme', [siteId(2), siteId(1)])
  for (const scope of SCOPES) {
    const { secret } = await epx.addToken('acme', [scope])
    const res = await acme.sites({ token: secret })
    t.equal(res.status, 200, `a token of scope ${scope} alone: ${res.text}`)
    t.same(res.json(), { perimeter: 'sites', sites: [{ site_id: siteId(1), held_since: ADDED }, { site_id: siteId(2), held_since: ADDED }] }, 'in site order')
  }
  const first = await acme.sites()
  t.equal(first.headers['cache-control'], 'private, no-cache')
  t.equal(first.headers['content-type'], 'application/json')
  t.match(first.headers.etag, /^W\/"[A-Za-z0-9_-]+"$/)
  t.match(first.headers['ratelimit-policy'], /^"get";/, 'a GET: it spends the company\'s GET budget')

  const unchanged = await acme.sites({ headers: { 'if-none-match': first.headers.etag! } })
  t.equal(unchanged.status, 304)
  t.equal(unchanged.text, '')
  t.equal(unchanged.headers.etag, first.headers.etag)

  const head = await acme.sites({ method: 'HEAD' })
  t.equal(head.status, 200)
  t.equal(head.text, '')
  t.equal(head.headers.etag, first.headers.etag)

  // A site added later: held from the change's instant, and the ETag moves.
  epx.clock.set('2026-11-21T13:00:00Z')
  await epx.companies.update('acme', c => ({ ...c, perimeter: [siteId(1), siteId(2), siteId(3)] }))
  const wider = await acme.sites({ headers: { 'if-none-match': first.headers.etag! } })
  t.equal(wider.status, 200, 'the perimeter changed: the old ETag no longer matches')
  t.same(wider.json().sites, [
    { site_id: siteId(1), held_since: ADDED }, { site_id: siteId(2), held_since: ADDED }, { site_id: siteId(3), held_since: '2026-11-21T13:00:00.000Z' },
  ])

  const posted = await acme.sites({ method: 'POST' })
  t.equal(posted.status, 405)
  t.equal(posted.headers.allow, 'GET, HEAD')
})

t.test('two companies: each reads its own sites only, and a site given from one to the other moves with its tenure', async t => {
  const epx = await startEpx(t)
  const acme = await company(epx, 'acme', [siteId(1), siteId(2)])
  const bolt = await company(epx, 'bolt', [siteId(3)], ['inbound:programme-soutirage'], '2026-11-01T00:00:00Z')
  t.same((await acme.sites()).json().sites.map((s: { site_id: string }) => s.site_id), [siteId(1), siteId(2)])
  const boltFirst = await bolt.sites()
  t.same(boltFirst.json(), { perimeter: 'sites', sites: [{ site_id: siteId(3), held_since: '2026-11-01T00:00:00.000Z' }] }, 'nothing of acme\'s')
  t.notOk(boltFirst.text.includes(siteId(1)) || boltFirst.text.includes(siteId(2)), 'no other company\'s site in its bytes')

  t.equal((await acme.sites({ token: bolt.secret })).status, 403, 'bolt\'s token on acme\'s certificate: refused (MTLS_REQUIRED)')
  t.equal((await acme.sites({ token: bolt.secret })).json().code, 'MTLS_REQUIRED')

  // Site 2 leaves acme for bolt (DECISIONS.md "Tenure"): acme no longer lists it; bolt holds it from then.
  epx.clock.set('2026-11-21T14:00:00Z')
  await epx.companies.update('acme', c => ({ ...c, perimeter: [siteId(1)] }))
  await epx.companies.update('bolt', c => ({ ...c, perimeter: [siteId(2), siteId(3)] }))
  t.same((await acme.sites()).json(), { perimeter: 'sites', sites: [{ site_id: siteId(1), held_since: ADDED }] })
  const boltAfter = await bolt.sites({ headers: { 'if-none-match': boltFirst.headers.etag! } })
  t.equal(boltAfter.status, 200)
  t.same(boltAfter.json().sites, [{ site_id: siteId(2), held_since: '2026-11-21T14:00:00.000Z' }, { site_id: siteId(3), held_since: '2026-11-01T00:00:00.000Z' }])
})

t.test('an "all sites" perimeter says so; the authentication chain and the store\'s outage answer as on every read', async t => {
  const epx = await startEpx(t)
  const all = await company(epx, 'all', 'all')
  t.same((await all.sites()).json(), { perimeter: 'all', sites: [] })

  const noCert = await all.sites({ cert: null })
  t.equal(noCert.status, 403)
  t.equal(noCert.headers['content-type'], 'application/problem+json')
  t.equal(noCert.json().code, 'MTLS_REQUIRED')
  const noToken = await epx.request({ path: SITES_PATH, cert: all.cert })
  t.equal(noToken.status, 401)
  t.equal(noToken.headers['www-authenticate'], 'Bearer realm="epx"')

  await epx.companies.update('all', c => ({ ...c, status: 'suspended' }))
  const suspended = await all.sites()
  t.equal(suspended.status, 403)
  t.equal(suspended.json().code, 'COMPANY_SUSPENDED')
  await epx.companies.update('all', c => ({ ...c, status: 'active' }))

  epx.faults.unavailable = true
  const down = await all.sites()
  epx.faults.unavailable = false
  t.equal(down.status, 503)
  t.equal(down.json().code, 'STORE_UNAVAILABLE')
  t.equal(down.headers['retry-after'], '5')
})
