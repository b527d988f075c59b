import t, { type Test } from 'tap'
import cron from 'node-cron'
import { startEpx } from '../helpers/epx.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'

const DAY = '2026-11-22'
const SCOPE = ['outbound:besoins-agreges'] as const

async function setup (t: Test, perimeter?: 'all' | string[], config?: Record<string, any>) {
  const epx = await startEpx(t, { config })
  const sites = epx.ref.sites.map(s => s.site_id)
  const { cert } = await epx.addCompany('acme', { perimeter: perimeter ?? 'all' })
  const { secret } = await epx.addToken('acme', SCOPE)
  const get = (query: Record<string, string>, headers: Record<string, string> = {}, method = 'GET') =>
    epx.request({ method, path: OUTBOUND_PATH, query, cert, token: secret, headers })
  return { epx, sites, get, cert, secret }
}

t.test('200 serves the latest revision with ETag, Last-Modified, Cache-Control and application/json', async t => {
  const { epx, sites, get } = await setup(t)
  const report = await epx.handle.publish({ targetDate: DAY })
  t.equal(report.published.length, 3)
  const res = await get({ site_id: sites[0]!, target_date: DAY })
  t.equal(res.status, 200)
  t.equal(res.headers['content-type'], 'application/json')
  t.equal(res.headers['cache-control'], 'private, max-age=60, must-revalidate')
  t.match(res.headers.etag, /^W\/"[A-Za-z0-9_-]+"$/, 'a weak validator')
  t.equal(res.headers.etag, report.published.find(p => p.siteId === sites[0])!.etag)
  t.equal(res.headers['last-modified'], 'Sat, 21 Nov 2026 12:30:00 GMT', 'emitted_at as an HTTP date')
  t.equal(Number(res.headers['content-length']), Buffer.byteLength(res.text))
  const doc = res.json()
  t.same(Object.keys(doc), ['schema_version', 'type', 'emitted_by', 'emitted_at', 'target_date', 'coverage_start_utc', 'coverage_end_utc', 'slot_duration_secs', 'sites'])
  t.equal(doc.emitted_at, '2026-11-21T12:30:00Z')
  t.equal(doc.target_date, DAY)
  t.equal(doc.sites[0].site_id, sites[0])
  t.equal(doc.sites[0].puissance_disponible.length, 96)
})

t.test('304 when If-None-Match carries the current ETag (alone, in a list, or *), with validators and no body', async t => {
  const { epx, sites, get } = await setup(t)
  await epx.handle.publish({ targetDate: DAY })
  const q = { site_id: sites[1]!, target_date: DAY }
  const first = await get(q)
  for (const inm of [first.headers.etag!, `W/"nope", ${first.headers.etag}`, '*', first.headers.etag!.slice(2)]) {
    const res = await get(q, { 'if-none-match': inm })
    t.equal(res.status, 304, `If-None-Match: ${inm}`)
    t.equal(res.text, '')
    t.equal(res.headers.etag, first.headers.etag)
    t.equal(res.headers['last-modified'], first.headers['last-modified'])
    t.equal(res.headers['cache-control'], 'private, max-age=60, must-revalidate')
  }
  t.equal((await get(q, { 'if-none-match': 'W/"other"' })).status, 200, 'another ETag gets the document')
})

t.test('If-Modified-Since: 304 at or after Last-Modified, 200 before it, ignored when unparsable; If-None-Match wins', async t => {
  const { epx, sites, get } = await setup(t)
  await epx.handle.publish({ targetDate: DAY })
  const q = { site_id: sites[0]!, target_date: DAY }
  const first = await get(q)
  t.equal((await get(q, { 'if-modified-since': first.headers['last-modified']! })).status, 304, 'equal')
  t.equal((await get(q, { 'if-modified-since': 'Sat, 21 Nov 2026 13:00:00 GMT' })).status, 304, 'after')
  t.equal((await get(q, { 'if-modified-since': 'Sat, 21 Nov 2026 12:29:59 GMT' })).status, 200, 'before')
  t.equal((await get(q, { 'if-modified-since': 'not a date' })).status, 200, 'unparsable')
  t.equal((await get(q, { 'if-none-match': 'W/"stale"', 'if-modified-since': 'Sat, 21 Nov 2026 13:00:00 GMT' })).status, 200, 'If-None-Match wins')
})

t.test('HEAD answers the headers of GET without a body, and 304 too', async t => {
  const { epx, sites, get } = await setup(t)
  await epx.handle.publish({ targetDate: DAY })
  const q = { site_id: sites[0]!, target_date: DAY }
  const full = await get(q)
  const head = await get(q, {}, 'HEAD')
  t.equal(head.status, 200)
  t.equal(head.text, '')
  for (const h of ['etag', 'last-modified', 'cache-control', 'content-type', 'content-length']) t.equal(head.headers[h], full.headers[h], h)
  t.equal((await get(q, { 'if-none-match': full.headers.etag! }, 'HEAD')).status, 304)
  const post = await get(q, {}, 'POST')
  t.equal(post.status, 405)
  t.equal(post.headers.allow, 'GET, HEAD')
})

t.test('a republication changes ETag and Last-Modified; the old ETag then gets 200, the new one 304', async t => {
  const { epx, sites, get } = await setup(t)
  await epx.handle.publish({ targetDate: DAY })
  const q = { site_id: sites[2]!, target_date: DAY }
  const before = await get(q)
  epx.clock.advance(3_600_000)
  await epx.handle.publish({ targetDate: DAY, siteIds: [sites[2]!] })
  const after = await get(q, { 'if-none-match': before.headers.etag! })
  t.equal(after.status, 200)
  t.not(after.headers.etag, before.headers.etag)
  t.equal(after.headers['last-modified'], 'Sat, 21 Nov 2026 13:30:00 GMT')
  t.equal(after.json().emitted_at, '2026-11-21T13:30:00Z')
  t.equal((await get(q, { 'if-modified-since': before.headers['last-modified']! })).status, 200, 'by date too')
  t.equal((await get(q, { 'if-none-match': after.headers.etag! })).status, 304)
})

t.test('a republication in the same second still changes Last-Modified, so date-only polling sees it', async t => {
  const { epx, sites, get } = await setup(t)
  const q = { site_id: sites[0]!, target_date: DAY }
  await epx.handle.publish({ targetDate: DAY, siteIds: [sites[0]!] })
  const before = await get(q)
  await epx.handle.publish({ targetDate: DAY, siteIds: [sites[0]!] })   // clock unchanged
  const after = await get(q, { 'if-modified-since': before.headers['last-modified']! })
  t.equal(after.status, 200)
  t.ok(Date.parse(after.headers['last-modified']!) > Date.parse(before.headers['last-modified']!))
})

t.test('the ETag and the bytes are stable across a restart', async t => {
  const { epx, sites, get } = await setup(t)
  await epx.handle.publish({ targetDate: DAY })
  const q = { site_id: sites[0]!, target_date: DAY }
  const before = await get(q)
  await epx.restart()
  const after = await get(q)
  t.equal(after.status, 200)
  t.equal(after.headers.etag, before.headers.etag)
  t.equal(after.headers['last-modified'], before.headers['last-modified'])
  t.equal(after.text, before.text)
  t.equal((await get(q, { 'if-none-match': before.headers.etag! })).status, 304)
})

t.test('400 problem with invalid_params for a missing or malformed site_id or target_date', async t => {
  const { epx, get } = await setup(t)
  const none = await get({})
  t.equal(none.status, 400)
  t.equal(none.headers['content-type'], 'application/problem+json')
  const body = none.json()
  t.equal(body.status, 400)
  t.equal(body.type, `${epx.url.origin}/errors/invalid-request`)
  t.same(body.invalid_params, [{ name: 'site_id', reason: 'required' }, { name: 'target_date', reason: 'required' }])
  const bad = (await get({ site_id: 'PRM123', target_date: '2026-02-30' })).json()
  t.same(bad.invalid_params, [
    { name: 'site_id', reason: 'must be PRM followed by 14 digits' },
    { name: 'target_date', reason: 'must be a calendar date YYYY-MM-DD' },
  ])
  const odd = await get({ site_id: 'PRM30000000000001', target_date: '22/11/2026' })
  t.same(odd.json().invalid_params, [{ name: 'target_date', reason: 'must be a calendar date YYYY-MM-DD' }])
})

t.test('404 problem with Retry-After: 300 when nothing is published for the pair', async t => {
  const { epx, sites, get } = await setup(t)
  const res = await get({ site_id: sites[0]!, target_date: DAY })
  t.equal(res.status, 404)
  t.equal(res.headers['retry-after'], '300')
  t.equal(res.headers['content-type'], 'application/problem+json')
  const body = res.json()
  t.equal(body.type, `${epx.url.origin}/errors/not-found`)
  t.equal(body.title, 'Not Found')
  t.equal(body.status, 404)
  t.match(body.detail, /no Besoins_Agreges is published/)
  t.match(body.detail, sites[0]!)
  const head = await get({ site_id: sites[0]!, target_date: DAY }, {}, 'HEAD')
  t.equal(head.status, 404)
  t.equal(head.text, '')
})

t.test('answers 404 for a site outside the caller perimeter, exactly like unpublished', async t => {
  const { epx, sites, get } = await setup(t, ['PRM30000000000001'])
  const outside = { site_id: sites[1]!, target_date: DAY }
  t.equal(sites[0], 'PRM30000000000001')
  const unpublished = await get(outside)
  await epx.handle.publish({ targetDate: DAY })
  t.equal((await get({ site_id: sites[0]!, target_date: DAY })).status, 200, 'inside the perimeter: served')
  const published = await get(outside)
  // RateLimit counts the caller's own requests down, whatever they asked for.
  const strip = (h: Record<string, string>) => { const { date, ratelimit, ...rest } = h; return rest }
  t.equal(published.status, 404)
  t.equal(published.text, unpublished.text, 'same body')
  t.same(strip(published.headers), strip(unpublished.headers), 'same headers')
  t.equal((await get(outside, { 'if-none-match': '*' })).status, 404, 'no conditional request reveals it')
})

t.test('503 problem with Retry-After: 5 when the store is unavailable', async t => {
  const { epx, sites, get } = await setup(t)
  await epx.handle.publish({ targetDate: DAY })
  epx.faults.unavailable = true
  const res = await get({ site_id: sites[0]!, target_date: DAY })
  epx.faults.unavailable = false
  t.equal(res.status, 503)
  t.equal(res.headers['retry-after'], '5')
  t.equal(res.headers['content-type'], 'application/problem+json')
  t.equal(res.json().status, 503)
  t.equal((await get({ site_id: sites[0]!, target_date: DAY })).status, 200, 'and serves again once it is back')
})

t.test('handle.publish() defaults to tomorrow in Paris and every site', async t => {
  const { epx, sites } = await setup(t)
  const report = await epx.handle.publish()
  t.equal(report.targetDate, DAY)
  t.same(report.published.map(p => p.siteId).sort(), [...sites].sort())
  t.same(report.failed, [])
})

t.test('started after a missed 08:00 run, epx publishes D+1 at once and a BSP can fetch it; close() leaves no cron task', async t => {
  const before = cron.getTasks().size
  const { epx, sites, get } = await setup(t, 'all', { publish: { schedule: true } })
  t.equal(cron.getTasks().size, before + 2)
  let res = await get({ site_id: sites[0]!, target_date: DAY })
  for (let i = 0; res.status === 404 && i < 100; i++) {
    await new Promise(resolve => setTimeout(resolve, 20))
    res = await get({ site_id: sites[0]!, target_date: DAY })
  }
  t.equal(res.status, 200, 'the catch-up published tomorrow')
  await epx.close()
  t.equal(cron.getTasks().size, before)
})

t.test('emitted_by of a published Besoins_Agreges comes from publish.emittedBy in the configuration', async t => {
  const { epx, sites, get } = await setup(t, 'all', { publish: { schedule: false, emittedBy: 'operateur-solveur' } })
  await epx.handle.publish({ targetDate: DAY, siteIds: [sites[0]!] })
  const doc = (await get({ site_id: sites[0]!, target_date: DAY })).json()
  t.equal(doc.emitted_by, 'operateur-solveur')
  t.equal(doc.slot_duration_secs, 900)
  t.equal(doc.sites[0].puissance_disponible.length, 96, 'one slot per quarter-hour of 2026-11-22')
})
