// DECISIONS.md "Rate limits and quotas": per company and kind of request, a token bucket
// in the door's thread; over it, 429 with Retry-After, and RateLimit-Policy and RateLimit
// on every answer to an authenticated caller. Through the real door (TLS, undici), with
// the test's clock driving the buckets' refill.
import t, { type Test } from 'tap'
import { request } from 'undici'
import type { KeyPairPem } from '../helpers/certs.ts'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { headOnly } from '../helpers/tls-request.ts'
import { eventually } from '../helpers/eventually.ts'
import { INBOUND_PATH, programme } from '../helpers/programme.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { openAudit } from '../../src/store/audit.ts'

const site = 'PRM30000000000001'
const day = '2026-11-22'
const pair = { site_id: site, target_date: day }

async function withCompanies (t: Test, config: Record<string, any>): Promise<{ epx: TestEpx; acme: Who; beta: Who }> {
  const epx = await startEpx(t, { sites: 1, config })
  await epx.handle.publish({ targetDate: day })
  const who = async (id: string): Promise<Who> => {
    const { cert } = await epx.addCompany(id)
    const { secret } = await epx.addToken(id, ['outbound:besoins-agreges', 'inbound:programme-soutirage'])
    return { cert, token: secret }
  }
  return { epx, acme: await who('acme'), beta: await who('beta') }
}
interface Who { cert: KeyPairPem; token: string }

t.test('a loop without backoff is refused 429 once over its GET budget, while another company is still served', async t => {
  const { epx, acme, beta } = await withCompanies(t, { api: { rateLimit: { get: { perSecond: 2, burst: 5 } } }, metrics: { enabled: true, port: 0 } })
  const get = (who: Who) => epx.request({ path: OUTBOUND_PATH, query: pair, ...who })

  const answers = []
  for (let i = 0; i < 8; i++) answers.push(await get(acme))
  t.same(answers.map(a => a.status), [200, 200, 200, 200, 200, 429, 429, 429], 'the bucket of 5 is spent, the clock standing still')
  t.same(answers.slice(0, 5).map(a => [a.headers['ratelimit-policy'], a.headers.ratelimit]),
    [4, 3, 2, 1, 0].map(r => ['"get";q=5;w=3', `"get";r=${r};t=${Math.ceil((5 - r) / 2)}`]), 'every 200 says the budget and what is left')
  const refused = answers[5]!
  t.equal(refused.headers['retry-after'], '1', 'a token is back within a second at 2 a second')
  t.equal(refused.headers['ratelimit-policy'], '"get";q=5;w=3')
  t.equal(refused.headers.ratelimit, '"get";r=0;t=3')
  t.equal(refused.headers['content-type'], 'application/problem+json')
  t.match(refused.json(), { type: /\/errors\/rate-limited$/, status: 429, code: 'RATE_LIMITED', detail: /company acme is over its GET request budget \(2 a second, bursts of 5\); retry after 1 s/ })

  const other = await get(beta)
  t.equal(other.status, 200, 'another company in the same instant: its own bucket')
  t.equal(other.headers.ratelimit, '"get";r=4;t=1')

  epx.clock.advance(1000)
  const after = []
  for (let i = 0; i < 3; i++) after.push((await get(acme)).status)
  t.same(after, [200, 200, 429], 'a second later, two requests (2 a second) and no more')

  // Counted per refusal, audited once per company, kind and hour.
  const text = await eventually(async () => (await request(new URL('/metrics', epx.handle.metricsUrl!))).body.text(),
    s => s.includes('epx_rate_limited_total{company="acme",door="outbound"} 4'))
  t.match(text, 'epx_rate_limited_total{company="acme",door="outbound"} 4')
  const audited = await eventually(() => openAudit(epx.store).list({ action: 'company.rate-limited' }), l => l.length > 0)
  t.equal(audited.length, 1, 'four refusals in an hour: one audit record')
  t.match(audited[0], { actor: { kind: 'company', companyId: 'acme' }, subject: 'acme', outcome: 'refused 429 GET', details: { door: 'outbound', kind: 'get' } })

  epx.clock.advance(3_600_000)
  for (let i = 0; i < 6; i++) await get(acme)
  t.equal((await eventually(() => openAudit(epx.store).list({ action: 'company.rate-limited' }), l => l.length > 1)).length, 2, 'the next hour\'s first refusal is audited again')
})

t.test('every answer after the budget is spent from says it once: a 304, and an error the door renders (404)', async t => {
  const { epx, acme } = await withCompanies(t, { api: { rateLimit: { get: { perSecond: 2, burst: 5 } } } })
  const first = await epx.request({ path: OUTBOUND_PATH, query: pair, ...acme })
  t.equal(first.status, 200)
  const notModified = await epx.request({ path: OUTBOUND_PATH, query: pair, ...acme, headers: { 'if-none-match': first.headers.etag! } })
  t.equal(notModified.status, 304)
  t.same([notModified.headers['ratelimit-policy'], notModified.headers.ratelimit], ['"get";q=5;w=3', '"get";r=3;t=1'], 'the 304: each field once')
  const missing = await epx.request({ path: OUTBOUND_PATH, query: { site_id: site, target_date: '2026-12-31' }, ...acme })
  t.equal(missing.status, 404)
  t.same([missing.headers['ratelimit-policy'], missing.headers.ratelimit], ['"get";q=5;w=3', '"get";r=2;t=2'], 'the 404: each field once')
})

t.test('a company whose budget is raised passes the same loop', async t => {
  const { epx, acme } = await withCompanies(t, { api: { rateLimit: { get: { perSecond: 1, burst: 2 } } } })
  // (every test here sets api.rateLimit: the harness's default is unthrottled)
  const loop = async () => {
    const statuses = []
    for (let i = 0; i < 20; i++) statuses.push((await epx.request({ path: OUTBOUND_PATH, query: pair, ...acme })).status)
    return statuses
  }
  t.same((await loop()).filter(s => s === 429).length, 18, 'over the configuration\'s budget of 2')
  await epx.companies.update('acme', c => ({ ...c, rateLimit: { get: { perSecond: 10, burst: 40 } } }))
  t.same(await loop(), Array(20).fill(200), 'its own budget applies from the next request, a full bucket of it')
  const last = await epx.request({ path: OUTBOUND_PATH, query: pair, ...acme })
  t.equal(last.headers['ratelimit-policy'], '"get";q=40;w=4')
  t.equal(last.headers.ratelimit, '"get";r=19;t=3')
})

t.test('a POST over its budget is refused before its body is read, in the inbound format', async t => {
  const { epx, acme } = await withCompanies(t, { api: { rateLimit: { post: { perSecond: 0.5, burst: 1 } } } })
  const first = await epx.request({ method: 'POST', path: INBOUND_PATH, ...acme, body: programme({ targetDate: day, slots: 4 }) })
  t.equal(first.status, 202)
  t.equal(first.headers['ratelimit-policy'], '"post";q=1;w=2', 'the 202 says the POST budget')
  t.equal(first.headers.ratelimit, '"post";r=0;t=2')

  // Only the head of a POST announcing 1 MB: the answer comes without a byte of the body sent.
  const raw = await headOnly(epx.url, acme, 1_000_000)
  t.match(raw, /^HTTP\/1\.1 429 /, 'answered while the body is still unsent')
  t.match(raw, /\r\nretry-after: 2\r\n/i, 'a token every 2 s')
  t.match(raw, /\r\nconnection: close\r\n/i, 'the unread body is not waited for on that connection')
  t.match(raw, /\r\nratelimit: "post";r=0;t=2\r\n/i)
  t.match(raw, /"error":\{"code":"RATE_LIMITED","message":"company acme is over its POST request budget/)

  const read = await epx.request({ path: INBOUND_PATH, query: { target_date: day }, ...acme })
  t.equal(read.status, 200, 'the status read spends the GET budget, not the POST one')
  t.equal(read.headers['ratelimit-policy'], '"get";q=500;w=10', 'the configuration\'s default GET budget')
  epx.clock.advance(2000)
  t.equal((await epx.request({ method: 'POST', path: INBOUND_PATH, ...acme, body: programme({ targetDate: day, slots: 4 }) })).status, 202, 'two seconds later, one more POST')
})
