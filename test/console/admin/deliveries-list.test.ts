import t, { type Test } from 'tap'
import { loadDeliveries, type DeliveriesDeps, type DeliveriesModel, type DeliveriesQuery } from '../../../src/console/admin/deliveries-list.ts'
import { renderDeliveries } from '../../../src/console/admin/deliveries.ts'
import { ManualClock } from '../../../src/host/reference-host.ts'
import { simulatedSites } from '../../../src/host/simulated-sites.ts'
import { openDeliveries } from '../../../src/store/deliveries.ts'
import { seedStore } from '../../helpers/seed.ts'
import { siteId } from '../../helpers/programme.ts'

// "Récupérations" as a model: each site published for a day within a company's perimeter,
// with what the company holds of it, as `epx deliveries` counts them; filtered and in pages.

const DAY = '2026-11-22'
const N = 250
const SITES = simulatedSites(N)
const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => siteId(from + k))

/** 250 sites published at 09:00 Paris; acme holds 1-200, beta 201-250. acme fetched 1-150, then 1-10 were republished. */
async function day (t: Test): Promise<DeliveriesDeps> {
  const s = seedStore(t)
  await s.addCompany('acme', ids(1, 200))
  await s.addCompany('beta', ids(201, 250))
  const published = Date.parse('2026-11-21T08:00:00Z')
  for (const site of ids(1, N)) await s.publish(DAY, site, { nowMs: published })
  const deliveries = openDeliveries(s.store)
  for (const [k, site] of ids(1, 150).entries()) deliveries.record('acme', site, DAY, published, k % 2 ? 304 : 200, published + 60_000 + k)
  deliveries.record('beta', siteId(201), DAY, published, 200, published + 120_000)
  await deliveries.flush()
  for (const site of ids(1, 10)) await s.publish(DAY, site, { nowMs: published + 3_600_000 })
  return { companies: s.companies, revisions: s.revisions, deliveries: openDeliveries(s.store), sites: async () => SITES, clock: new ManualClock('2026-11-21T12:30:00Z') }
}

async function list (deps: DeliveriesDeps, q: DeliveriesQuery): Promise<DeliveriesModel> {
  const r = await loadDeliveries(deps, q)
  if (r.status !== 200) throw new Error(`status ${r.status}: ${'message' in r ? r.message : ''}`)
  return r.model
}

t.test('latest, stale and never per company, as epx deliveries counts them; tomorrow by default', async t => {
  const deps = await day(t)
  const m = await list(deps, {})
  t.equal(m.targetDate, DAY)
  t.same(m.perCompany, [
    { companyId: 'acme', published: 200, latest: 140, stale: 10, never: 50 },
    { companyId: 'beta', published: 50, latest: 1, stale: 0, never: 49 },
  ])
  t.same(m.counts, { all: 250, latest: 141, stale: 10, never: 99 })
  t.equal(m.rows.length, 100, 'a page of 100, by company then site')
  t.same([m.rows[0]!.companyId, m.rows[0]!.siteId, m.rows[0]!.state], ['acme', siteId(1), 'stale'])
  t.equal(m.rows[0]!.receipt?.status, 200)
})

t.test('a company, a state and a site search narrow the rows; the counts follow all but the state', async t => {
  const deps = await day(t)
  const stale = await list(deps, { state: 'stale' })
  t.same(stale.rows.map(r => r.siteId), ids(1, 10))
  t.equal(stale.counts.all, 250)
  const beta = await list(deps, { company_id: 'beta', state: 'latest' })
  t.same(beta.rows.map(r => `${r.companyId} ${r.siteId}`), [`beta ${siteId(201)}`])
  t.same(beta.counts, { all: 50, latest: 1, stale: 0, never: 49 })
  t.same((await list(deps, { q: 'DEPOT 24' })).rows.map(r => r.siteId), [siteId(24), ...ids(240, 249)], 'a name, any case')
  t.same((await list(deps, { q: '0000000000250' })).rows.map(r => r.siteId), [siteId(250)], 'part of a PRM')
})

t.test('the pages follow each other by key, and back', async t => {
  const deps = await day(t)
  const first = await list(deps, {})
  const second = await list(deps, { after: first.next })
  const third = await list(deps, { after: second.next })
  t.equal(third.next, undefined)
  const keys = [first, second, third].flatMap(m => m.rows.map(r => `${r.companyId} ${r.siteId}`))
  t.equal(new Set(keys).size, 250, 'every row once')
  t.same((await list(deps, { before: third.previous })).rows, second.rows)
})

t.test('a filter it cannot read is a 400 that says what to write', async t => {
  const deps = await day(t)
  t.match(await loadDeliveries(deps, { state: 'old' }), { status: 400, message: /État « old » inconnu : latest, stale, never/ })
  t.match(await loadDeliveries(deps, { target_date: '2026-02-30' }), { status: 400 })
})

t.test('the page: the three states in French, the clock once in each header, 304 told apart', async t => {
  const deps = await day(t)
  const page = renderDeliveries(await list(deps, { company_id: 'acme' })).toString()
  t.match(page, /<th scope="col">Récupérée le <span class="clock">\(heure de Paris\)<\/span><\/th>/)
  t.match(page, /<td class="delivery-stale">révision dépassée<\/td>/)
  t.match(page, /<td class="delivery-latest">dernière révision<\/td>/)
  t.match(page, /<small>304, inchangée<\/small>/)
  t.notMatch(page, /UTC\+0/)
  t.match(page, /<a class="count-never" href="\/admin\/deliveries\?target_date=2026-11-22&amp;company_id=acme&amp;state=never">jamais récupérés : 50<\/a>/)
})
