import t, { type Test } from 'tap'
import { programmesPages } from '../../../src/console/pages/programmes.ts'
import { loadProgrammes, type ProgrammesModel, type ProgrammesQuery } from '../../../src/console/pages/programmes-list.ts'
import type { ProgrammesDeps } from '../../../src/console/pages/programmes-model.ts'
import { renderProgrammes } from '../../../src/console/pages/programmes-view.ts'
import { ManualClock } from '../../../src/host/reference-host.ts'
import { simulatedSites } from '../../../src/host/simulated-sites.ts'
import { openInstructionFlags } from '../../../src/store/instruction-flags.ts'
import type { Viewer } from '../../../src/console/viewer.ts'
import { seedStore, type Seeded } from '../../helpers/seed.ts'
import { admin, member, pageApp } from '../../helpers/console-app.ts'
import { siteId } from '../../helpers/programme.ts'
import { SYSTEM } from '../../helpers/long.ts'

// The "Programmes" list at an operator's size: 1,000 sites held by two BSPs, one programme a
// site. Filters, sort and keyset pages are query parameters; the counts are over the whole
// filtered set; a walk through the pages sees every row once while programmes keep arriving.

const N = 1000
const DAY = '2026-11-22'
const SITES = simulatedSites(N)
const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => siteId(from + k))
const hour = (h: number) => `2026-11-21T${String(h).padStart(2, '0')}:00:00Z`
const idOf = (emittedAt: string) => `ProgrammeSoutirage-${DAY}-rev-${emittedAt.replace(/[-:]/g, '')}`

/** acme holds sites 1-500, beta 501-1000; each sends its sites in programmes of 100 (the inbound check's limit here), one hour apart. */
async function operator (t: Test): Promise<{ s: Seeded; deps: ProgrammesDeps; infeasible: string[] }> {
  const s = seedStore(t)
  await s.addCompany('acme', ids(1, 500))
  await s.addCompany('beta', ids(501, 1000))
  for (let k = 0; k < 10; k++) await s.receive({ emittedAt: hour(k), sites: ids(k * 100 + 1, k * 100 + 100), slots: 4 }, k < 5 ? 'acme' : 'beta')
  const flags = openInstructionFlags(s.store)
  // Three sites of three programmes whose floors exceed what the site can draw.
  const infeasible = [siteId(42), siteId(517), siteId(999)]
  for (const site of infeasible) {
    const n = Number(site.slice(-4))
    await flags.put(idOf(hour(Math.floor((n - 1) / 100))), [{ siteId: site, flag: { checkedAgainst: '2026-11-21T08:00:00Z', slots: [Date.parse('2026-11-21T23:00:00Z'), 8000, 87.8] } }])
  }
  return { s, deps: { instructions: s.instructions, companies: s.companies, sites: async () => SITES, clock: new ManualClock('2026-11-21T12:30:00Z'), flags }, infeasible }
}

async function list (deps: ProgrammesDeps, viewer: Viewer, q: ProgrammesQuery): Promise<ProgrammesModel> {
  const r = await loadProgrammes(deps, viewer, { target_date: DAY, ...q })
  if (r.status !== 200) throw new Error(`status ${r.status}`)
  return r.model
}

const sitesOf = (m: ProgrammesModel) => m.views.map(v => v.instruction.siteId)

t.test('status=infeasible finds the three infeasible programmes among 1,000 in one step; the counts cover every page', async t => {
  const { deps, infeasible } = await operator(t)
  const m = await list(deps, admin, { status: 'infeasible' })
  t.same(sitesOf(m), infeasible)
  t.equal(m.total, 3)
  t.same(m.counts, { all: 1000, received: 1000, queued: 0, applied: 0, superseded: 0, withdrawn: 0, infeasible: 3, late: 0 })
  const first = await list(deps, admin, {})
  t.equal(first.views.length, 100, 'a page of 100')
  t.equal(first.total, 1000)
  const page = renderProgrammes(first).toString()
  t.equal((page.match(/<tr><td><a class="instruction" href="\/programmes\//g) ?? []).length, 100)
  t.ok(page.length < 150_000, `one page is ${page.length} bytes, not the whole day`)
  t.match(page, '<a class="count-infeasible" href="/programmes?target_date=2026-11-22&amp;status=infeasible">infaisables : 3</a>', 'each count links to its list')
  t.match(page, /<a rel="next" href="\/programmes\?target_date=2026-11-22&amp;after=[^"]+">Page suivante/)
  t.notMatch(page, /rel="prev"/, 'the first page has no previous one')
})

t.test('company, site search and sort narrow the list; the counts follow the filter', async t => {
  const { deps } = await operator(t)
  const beta = await list(deps, admin, { company_id: 'beta' })
  t.equal(beta.total, 500)
  t.equal(beta.counts.infeasible, 2)
  t.same(beta.companies, ['acme', 'beta'], 'an admin chooses among the companies that sent one for the day')
  const searched = await list(deps, admin, { q: '3000000000099' })
  t.same(sitesOf(searched), ids(990, 999), 'part of a PRM')
  t.same(sitesOf(await list(deps, admin, { q: 'SITE 100' })), ids(1, 10).map((_, k) => siteId(100 * (k + 1))), 'a site name, any case')
  const bySite = await list(deps, admin, { sort: '-site' })
  t.same(sitesOf(bySite).slice(0, 2), [siteId(1000), siteId(999)])
  const late = await list(deps, admin, { sort: '-emission', status: 'infeasible' })
  t.same(sitesOf(late), [siteId(999), siteId(517), siteId(42)])
  const own = await list(deps, member('acme'), { company_id: 'beta' })
  t.equal(own.total, 500, 'a member sees its own company\'s, whatever the URL says')
  t.ok(own.views.every(v => v.instruction.companyId === 'acme'))
  t.equal(own.companies, undefined, 'and is offered no choice')
  t.same(own.counts.infeasible, 1)
})

t.test('walking the pages while programmes arrive: every row there at the start seen once, none twice, back and forth the same', async t => {
  const { s, deps } = await operator(t)
  // The default order in npm test; the other two, the same walk on other keys, in the system tier.
  for (const sort of SYSTEM ? ['emission', 'site', '-site'] as const : ['emission'] as const) {
    const start = new Set((await loadProgrammesAll(deps, sort)))
    const seen: string[] = []
    const pages: string[][] = []
    let m = await list(deps, admin, { sort })
    for (let k = 0; ; k++) {
      const rows = m.views.map(v => `${v.instruction.instructionId}/${v.instruction.siteId}`)
      pages.push(rows)
      seen.push(...rows)
      if (!m.next) break
      // Between two clicks, a BSP re-sends some of its sites: new rows, and superseded old ones.
      await s.receive({ emittedAt: `2026-11-21T${String(10 + (k % 10)).padStart(2, '0')}:${sort === 'emission' ? '05' : sort === 'site' ? '10' : '15'}:00Z`, sites: ids(k * 37 % 500 + 1, k * 37 % 500 + 20), slots: 4 }, 'acme')
      m = await list(deps, admin, { sort, after: m.next })
    }
    t.ok((await list(deps, admin, { sort })).counts.superseded > 0, `${sort}: some rows of the first pages superseded meanwhile`)
    t.equal(new Set(seen).size, seen.length, `${sort}: no row twice`)
    t.same([...start].filter(r => !seen.includes(r)), [], `${sort}: no row there at the start missed`)
    // And back from the last page, nothing arriving: every row before it once, in order.
    const all = await loadProgrammesAll(deps, sort)
    const before: string[] = []
    for (let cursor = m.previous; cursor !== undefined;) {
      const back = await list(deps, admin, { sort, before: cursor })
      before.unshift(...back.views.map(v => `${v.instruction.instructionId}/${v.instruction.siteId}`))
      cursor = back.previous
    }
    t.same([...before, ...pages.at(-1)!], all, `${sort}: back through the pages, the whole list`)
  }
})

/** Every row of the day in the sort's order, by walking the pages. */
async function loadProgrammesAll (deps: ProgrammesDeps, sort: ProgrammesQuery['sort']): Promise<string[]> {
  const out: string[] = []
  let m = await list(deps, admin, { sort })
  for (;;) {
    out.push(...m.views.map(v => `${v.instruction.instructionId}/${v.instruction.siteId}`))
    if (!m.next) return out
    m = await list(deps, admin, { sort, after: m.next })
  }
}

t.test('a programme received after all its periods began is found as late', async t => {
  const s = seedStore(t)
  await s.receive({ targetDate: '2026-11-21', emittedAt: '2026-11-21T09:00:00Z', sites: 2, slots: 4 }, 'acme')
  await s.receive({ targetDate: '2026-11-21', emittedAt: '2026-11-21T09:30:00Z', sites: 1, slots: 96 }, 'acme')
  const deps: ProgrammesDeps = { instructions: s.instructions, companies: s.companies, sites: async () => SITES.slice(0, 3), clock: new ManualClock('2026-11-21T12:30:00Z') }
  const m = await list(deps, admin, { target_date: '2026-11-21', status: 'late' })
  t.same(sitesOf(m), [siteId(1), siteId(2)], 'its four quarter-hours were over at reception: never in force')
  t.same(m.counts, { all: 3, received: 3, queued: 0, applied: 0, superseded: 0, withdrawn: 0, infeasible: 0, late: 2 })
  t.match(renderProgrammes(m).toString(), /<strong class="flag-late">reçu trop tard<\/strong>/)
})

t.test('over HTTP: the filters are the URL; a wrong one is a 400 that says what to write', async t => {
  const { deps } = await operator(t)
  const app = await pageApp(t, app => programmesPages(app, deps))
  const found = await app.get(`/programmes?target_date=${DAY}&company_id=beta&status=infeasible&sort=-site`)
  t.equal(found.status, 200)
  t.equal((found.text.match(/<tr><td><a class="instruction" href="\/programmes\//g) ?? []).length, 2)
  t.match(found.text, /<select id="company_id" name="company_id">.*<option value="beta" selected>beta<\/option>/s)
  const next = /rel="next" href="([^"]+)"/.exec((await app.get(`/programmes?target_date=${DAY}`)).text)![1]!.replaceAll('&amp;', '&')
  const second = await app.get(next)
  t.equal(second.status, 200)
  t.match(second.text, /rel="prev"/)
  t.match(second.text, siteId(101), 'the second page starts where the first ended')
  const bad = await app.get(`/programmes?target_date=${DAY}&status=broken`)
  t.equal(bad.status, 400)
  t.match(bad.text, /Statut « broken » inconnu : received, queued, applied, superseded, withdrawn, infeasible, late/)
  t.equal((await app.get(`/programmes?target_date=${DAY}&sort=price`)).status, 400)
  t.equal((await app.get(`/programmes?target_date=${DAY}&after=a&before=b`)).status, 400)
  t.equal((await app.get(`/programmes?target_date=${DAY}&after=${'x'.repeat(400)}`)).status, 400)
})
