import t, { type Test } from 'tap'
import { loadRealiseDay, type RealiseDayModel, type RealiseListDeps, type RealiseQuery } from '../../../src/console/pages/realise-list.ts'
import { renderRealiseDay } from '../../../src/console/pages/realise.ts'
import { ManualClock } from '../../../src/host/reference-host.ts'
import { simulatedSites } from '../../../src/host/simulated-sites.ts'
import { openCompanies } from '../../../src/store/companies.ts'
import { openMetering } from '../../../src/store/metering.ts'
import { openTenure } from '../../../src/store/tenure.ts'
import type { Viewer } from '../../../src/console/viewer.ts'
import { seedStore } from '../../helpers/seed.ts'
import { admin, member } from '../../helpers/console-app.ts'
import { siteId } from '../../helpers/programme.ts'

// The "Réalisé" list at an operator's size: 1,000 sites, acme holding 1-500 and beta 501-1000
// until site 1 passes to beta at noon. Each site's holder; the sites in default; pages.

const N = 1000
const DAY = '2026-11-22'
const Q = 900_000
const start = Date.parse('2026-11-21T23:00:00Z')
const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => siteId(from + k))
const iso = (ms: number) => new Date(ms).toISOString()

async function operator (t: Test): Promise<RealiseListDeps> {
  const s = seedStore(t)
  let nowMs = Date.parse('2026-11-01T00:00:00Z')
  const companies = openCompanies(s.store, { now: () => nowMs })
  const record = (id: string, perimeter: string[]) => ({ id, name: id, status: 'active' as const, certSubject: `CN=${id},O=${id}`, perimeter, createdAt: '2026-11-01T00:00:00.000Z' })
  await companies.add(record('acme', ids(1, 500)))
  await companies.add(record('beta', ids(501, 1000)))
  for (let k = 0; k < 10; k++) await s.receive({ emittedAt: `2026-11-21T0${k}:00:00Z`, sites: ids(k * 100 + 1, k * 100 + 100), slots: 96, kwh: () => 1 }, k < 5 ? 'acme' : 'beta')
  nowMs = Date.parse('2026-11-22T11:00:00Z')   // 12:00 in Paris: site 1 passes to beta
  await companies.update('acme', c => ({ ...c, perimeter: ids(2, 500) }))
  await companies.update('beta', c => ({ ...c, perimeter: ids(1, 1) .concat(ids(501, 1000)) }))
  const metering = openMetering(s.store, { now: () => start + 2 * 86_400_000, retentionDays: 90000 })
  t.teardown(() => metering.close())
  // Every site delivers 1 kWh a quarter-hour but sites 7 and 700 (0.5 from 08:00 to 09:00 Paris).
  const readings = []
  for (let n = 1; n <= N; n++) for (let j = 0; j < 96; j++) readings.push({ siteId: siteId(n), startUtc: iso(start + j * Q), endUtc: iso(start + (j + 1) * Q), kwh: (n === 7 || n === 700) && j >= 32 && j < 36 ? 0.5 : 1 })
  await metering.report(readings)
  const tenure = openTenure(s.store)
  return {
    companies,
    sites: async () => simulatedSites(N),
    clock: new ManualClock('2026-11-23T08:00:00Z'),
    realisation: { instructions: s.instructions, metering, tolerance: { toleranceKwh: 0.1, tolerancePercent: 5 }, holders: (site, from, until) => tenure.holdersDuring(site, from, until) },
  }
}

// One operator for the file: its 96,000 readings take seconds to write, and every test only reads.
const deps = await operator(t)

async function list (deps: RealiseListDeps, viewer: Viewer, q: RealiseQuery = {}): Promise<RealiseDayModel> {
  const r = await loadRealiseDay(deps, viewer, q)
  if (r.status !== 200) throw new Error(`status ${r.status} ${'message' in r ? r.message : ''}`)
  return r.model
}

t.test('1,000 sites: a page of 100 with each site\'s holder, the sites in default in one step, the counts over all pages', async t => {
  const m = await list(deps, admin)
  t.equal(m.targetDate, DAY, 'yesterday by default')
  t.equal(m.rows.length, 100)
  t.same(m.counts, { sites: 1000, compared: 1000, defaut: 2 })
  t.same(m.rows[0]!.holders, ['acme', 'beta'], 'site 1: acme until noon, then beta')
  t.same(m.rows[1]!.holders, ['acme'])
  t.same(m.companies, ['acme', 'beta'])
  const page = renderRealiseDay(m).toString()
  t.match(page, /<td class="holder">acme, beta<\/td>/)
  t.ok(page.length < 150_000, `one page is ${page.length} bytes`)
  const defaut = await list(deps, admin, { defaut: '1' })
  t.same(defaut.rows.map(r => r.site.site_id), [siteId(7), siteId(700)])
  t.same(defaut.rows.map(r => r.body!.totaux.verdicts.short), [4, 4])
  const totals = /Total de la sélection<\/th>(.*?)<\/tr>/.exec(renderRealiseDay(defaut).toString())![1]!.match(/<td class="num">[^<]*<\/td>/g)!.slice(0, 3)
  t.same(totals, ['<td class="num">192</td>', '<td class="num">188</td>', '<td class="num">4</td>'], 'the totals of the two sites: programmed, delivered, short')
  const worst = await list(deps, admin, { sort: '-manque' })
  t.same(worst.rows.slice(0, 3).map(r => r.site.site_id), [siteId(7), siteId(700), siteId(1)], 'the largest shortfall first, then by site')
})

t.test('by holder: an admin\'s company filter; a member sees its own sites, itself as holder, and its own quarter-hours', async t => {
  const beta = await list(deps, admin, { company_id: 'beta' })
  t.equal(beta.counts.sites, 501, 'beta\'s 500 and site 1 from noon')
  t.equal(beta.counts.defaut, 1)
  const acme = await list(deps, member('acme'), { company_id: 'beta' })
  t.equal(acme.counts.sites, 499, 'a member\'s list is its perimeter (sites 2-500 now), whatever the URL says')
  t.equal(acme.companies, undefined, 'and it is offered no choice')
  const all = await list(deps, member('acme'))
  t.equal(all.counts.sites, 499)
  t.ok(all.rows.every(r => r.holders.length === 1 && r.holders[0] === 'acme'), 'never the name of another holder')
})

t.test('pages: every site once, forwards and back; the same filters in every link', async t => {
  // Each page load computes the day of every site (the counts and totals are over all of them): one walk.
  for (const sort of ['-manque'] as const) {
    const seen: string[] = []
    let m = await list(deps, admin, { sort })
    const firsts: string[] = []
    for (;;) {
      seen.push(...m.rows.map(r => r.site.site_id))
      firsts.push(m.rows[0]!.site.site_id)
      if (!m.next) break
      m = await list(deps, admin, { sort, after: m.next })
    }
    t.equal(seen.length, N, `${sort}: 1,000 rows`)
    t.equal(new Set(seen).size, N, `${sort}: none twice`)
    const back = await list(deps, admin, { sort, before: m.previous! })
    t.equal(back.rows[0]!.site.site_id, firsts.at(-2), `${sort}: the previous page is the one before`)
  }
  const html = renderRealiseDay(await list(deps, admin, { defaut: '1', sort: '-site', q: 'depot' })).toString()
  t.match(html, 'href="/realise/download?target_date=2026-11-22&amp;q=depot&amp;defaut=1&amp;sort=-site&amp;dialect=tableur-fr"', 'the download takes the filters')
})

t.test('a wrong filter says what to write', async t => {
  t.match(await loadRealiseDay(deps, admin, { sort: 'price' }), { status: 400, message: /Tri « price » inconnu : site, -site, -manque/ })
  t.match(await loadRealiseDay(deps, admin, { defaut: 'yes' }), { status: 400, message: /defaut=1/ })
})
