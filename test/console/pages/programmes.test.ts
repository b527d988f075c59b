import t, { type Test } from 'tap'
import { programmesPages } from '../../../src/console/pages/programmes.ts'
import { loadProgramme, type ProgrammesDeps } from '../../../src/console/pages/programmes-model.ts'
import { loadProgrammes } from '../../../src/console/pages/programmes-list.ts'
import { renderProgramme, renderProgrammes } from '../../../src/console/pages/programmes-view.ts'
import { ManualClock } from '../../../src/host/reference-host.ts'
import { simulatedSites } from '../../../src/host/simulated-sites.ts'
import { seedStore } from '../../helpers/seed.ts'
import { admin, member, pageApp } from '../../helpers/console-app.ts'
import { siteId } from '../../helpers/programme.ts'
import { openInstructionFlags } from '../../../src/store/instruction-flags.ts'
import type { Store } from '../../../src/store/open-store.ts'
import { openRevisions } from '../../../src/store/revisions.ts'

const SITES = simulatedSites(3)
const A = 'ProgrammeSoutirage-2026-11-22-rev-20261121T100000Z'
const B = 'ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z'
const C = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'

const seededStore = new WeakMap<ProgrammesDeps, Store>()

async function seeded (t: Test) {
  const s = seedStore(t)
  await s.addCompany('acme', [siteId(1), siteId(2)])
  await s.addCompany('beta', [siteId(1)])
  // Site 1: acme 10:00 (superseded by beta's), beta 11:00 (superseded by acme's), acme 12:00, applied at cycle 7.
  await s.receive({ emittedAt: '2026-11-21T10:00:00Z', sites: 2, slots: 3, kwh: j => j }, 'acme')
  await s.receive({ emittedAt: '2026-11-21T11:00:00Z', sites: 1, slots: 2, emittedBy: 'beta <b>ops</b>' }, 'beta')
  await s.receive({ emittedAt: '2026-11-21T12:00:00Z', sites: 1, slots: 1 }, 'acme')
  await s.instructions.markApplied([{ instructionId: C, siteId: siteId(1) }], 7, '2026-11-21T12:05:00.000Z')
  await s.instructions.markQueued([{ instructionId: A, siteId: siteId(2) }], '2026-11-21T12:01:00.000Z')
  const deps: ProgrammesDeps = { instructions: s.instructions, companies: s.companies, sites: async () => SITES, clock: new ManualClock('2026-11-21T12:30:00Z') }
  seededStore.set(deps, s.store)
  return deps
}

const ok = <T>(r: { status: number; model?: T }): T => {
  if (r.status !== 200) throw new Error(`status ${r.status}`)
  return r.model!
}

t.test('an admin sees every instruction of the day with its status, from the shared rules', async t => {
  const deps = await seeded(t)
  const m = ok(await loadProgrammes(deps, admin, {}))
  t.equal(m.targetDate, '2026-11-22', 'tomorrow in Paris by default')
  const page = renderProgrammes(m).toString()
  t.equal((page.match(/<tr><td><a class="instruction" href="\/programmes\//g) ?? []).length, 4)
  t.match(page, `remplacée par <a class="instruction" href="/programmes/${B}/${siteId(1)}" title="${B}">rév. 21/11/2026 12:00:00</a>`, 'an id in short (its revision, Paris time), in full one click away')
  t.match(page, `remplacée par <a class="instruction" href="/programmes/${C}/${siteId(1)}" title="${C}">rév. 21/11/2026 13:00:00</a>`)
  t.match(page, /appliquée au cycle 7/)
  t.match(page, /en attente du prochain cycle/)
  t.match(page, /beta &lt;b&gt;ops&lt;\/b&gt;/, 'the sender is text')
  t.match(page, 'datetime="2026-11-21T12:00:00.000Z"', 'received at, with its UTC instant')
})

t.test('a member sees its own company\'s instructions only, and not the id of another company\'s superseder', async t => {
  const deps = await seeded(t)
  const m = ok(await loadProgrammes(deps, member('acme'), { target_date: '2026-11-22' }))
  t.same(m.views.map(v => [v.instruction.instructionId, v.instruction.siteId]), [[A, siteId(1)], [A, siteId(2)], [C, siteId(1)]])
  const page = renderProgrammes(m).toString()
  t.notMatch(page, B, 'beta\'s instruction is not named')
  t.notMatch(page, /beta/)
  t.match(page, /remplacée par un programme plus récent/)
  const beta = ok(await loadProgrammes(deps, member('beta'), { site_id: siteId(1), target_date: '2026-11-22' }))
  t.same(beta.views.map(v => [v.instruction.instructionId, v.supersededBy?.instructionId]), [[B, undefined]], 'acme\'s is also hidden from beta')
  t.same(await loadProgrammes(deps, member('beta'), { site_id: siteId(2), target_date: '2026-11-22' }), { status: 404 }, 'a site outside the perimeter')
  t.same(ok(await loadProgrammes(deps, admin, { target_date: '2026-11-23' })).views, [])
})

t.test('one instruction: each slot\'s energy, and the floor or curtailment it becomes', async t => {
  const deps = await seeded(t)
  const m = ok(loadProgramme(deps, member('acme'), A, siteId(2)))
  const page = renderProgramme(m).toString()
  t.match(page, /<td class="num">0<\/td><td class="curtailment">effacement \(0 kW max\)<\/td>/)
  t.match(page, /<td class="num">1<\/td><td class="floor">plancher 4 kW<\/td>/)
  t.match(page, /<td class="num">2<\/td><td class="floor">plancher 8 kW<\/td>/)
  t.match(page, /en attente du prochain cycle/)
  t.match(page, '<dt>Jour</dt><dd>22/11/2026</dd>', 'the day as every other date of the console shows it')
  t.same(loadProgramme(deps, member('beta'), A, siteId(2)), { status: 404 })
  t.same(loadProgramme(deps, member('acme'), B, siteId(1)), { status: 404 })
  t.same(loadProgramme(deps, admin, A, 'PRM1'), { status: 404 })
  t.same(loadProgramme(deps, admin, 'nonsense', siteId(1)), { status: 404 })
})

t.test("one instruction's chart: the Besoins published for its site and day, while the site is the viewer's", async t => {
  const s = seedStore(t)
  await s.addCompany('acme', [siteId(1), siteId(2)])
  await s.receive({ emittedAt: '2026-11-21T10:00:00Z', sites: 2, slots: 3, kwh: j => j }, 'acme')
  await s.publish('2026-11-22', siteId(2), { siteName: 'Depot 2', kw: k => k === 1 ? 3 : 60 })
  const deps: ProgrammesDeps = { instructions: s.instructions, revisions: s.revisions, companies: s.companies, sites: async () => SITES, clock: new ManualClock('2026-11-21T12:30:00Z') }
  const m = ok(loadProgramme(deps, member('acme'), A, siteId(2)))
  t.equal(m.besoins?.site_id, siteId(2), "the site's latest revision of the day")
  const chart = renderProgramme(m).toString()
  t.match(chart, /<path class="available"/, 'its available power is drawn')
  t.equal(chart.match(/<rect class="slot"/g)?.length, 96, 'one column per published quarter-hour')
  t.match(chart, /<rect class="milestone"/, 'with its milestone')
  t.match(chart, /<line class="floor over"[^>]*><title>Plancher 4 kW de 00:15 à 00:30, infaisable : 3 kW disponibles/, 'a floor over the published power is drawn infeasible')
  t.notMatch(chart, /Réalisé \(compteur\)/, 'no meter value: no delivered entry in the legend')
  t.equal(ok(loadProgramme(deps, member('acme'), A, siteId(1))).besoins, undefined, 'nothing published for the other site: none')

  await s.companies.update('acme', c => ({ ...c, perimeter: [siteId(1)] }))
  const left = ok(loadProgramme(deps, member('acme'), A, siteId(2)))
  t.equal(left.besoins, undefined, "the site left acme's perimeter: its Besoins are its new holder's, not drawn")
  t.notMatch(renderProgramme(left).toString(), /<path class="available"/)
  t.equal(ok(loadProgramme(deps, admin, A, siteId(2))).besoins?.site_id, siteId(2), 'an admin sees every site')
})

t.test('an instruction with no slots says it clears the day', async t => {
  const s = seedStore(t)
  await s.receive({ emittedAt: '2026-11-21T10:00:00Z', slots: 0 }, 'acme')
  const deps: ProgrammesDeps = { instructions: s.instructions, companies: s.companies, sites: async () => SITES, clock: new ManualClock('2026-11-21T12:30:00Z') }
  t.match(renderProgramme(ok(loadProgramme(deps, admin, A, siteId(1)))).toString(), /lève toute contrainte/)
})

t.test('over HTTP: a member editing the URL to another company\'s instruction gets a 404 that names nothing', async t => {
  const deps = await seeded(t)
  const app = await pageApp(t, app => programmesPages(app, deps))
  app.viewer = member('acme')
  const list = await app.get('/programmes?target_date=2026-11-22')
  t.equal(list.status, 200)
  t.match(list.text, C)
  const mine = await app.get(`/programmes/${encodeURIComponent(C)}/${siteId(1)}`)
  t.equal(mine.status, 200)
  t.match(mine.text, /appliquée au cycle 7/)
  const foreign = await app.get(`/programmes/${encodeURIComponent(B)}/${siteId(1)}`)
  t.equal(foreign.status, 404)
  t.notMatch(foreign.text, /beta|11:00|PRM/)
  t.equal((await app.get('/programmes?target_date=2026-13-01')).status, 400)
  app.viewer = null
  t.equal((await app.get('/programmes')).status, 403)
  t.equal((await app.get(`/programmes/${encodeURIComponent(C)}/${siteId(1)}`)).status, 403)
})

t.test('an instruction flagged infeasible says so in the list, in its facts and on each slot over the available power', async t => {
  const deps = await seeded(t)
  const flags = openInstructionFlags(seededStore.get(deps)!)
  const startMs = Date.parse(ok(loadProgramme({ ...deps, flags }, admin, C, siteId(1))).constraints[0]!.startUtc)
  await flags.put(C, [{ siteId: siteId(1), flag: { checkedAgainst: '2026-11-21T08:00:00Z', slots: [startMs, 8000, 87.8] } }])
  const list = renderProgrammes(ok(await loadProgrammes({ ...deps, flags }, admin, {}))).toString()
  t.equal((list.match(/class="flag-infeasible badge"/g) ?? []).length, 1, 'one instruction flagged in the list')
  const detail = renderProgramme(ok(loadProgramme({ ...deps, flags }, admin, C, siteId(1)))).toString()
  t.match(detail, /<dt>Faisabilité<\/dt><dd><strong class="flag-infeasible">infaisable<\/strong>/)
  t.match(detail, /<strong>Infaisable :<\/strong> un créneau a un plancher au-delà de la puissance disponible \(jusqu&#39;à 8\s000 kW pour 87,8 kW disponibles\)/)
  t.match(detail, /<td class="over"><strong class="flag-infeasible">infaisable<\/strong> : 87,8 kW disponibles<\/td>/, 'the slot says it')
  t.match(detail, /émis le 21\/11\/2026 09:00:00 \(UTC\+01:00\)/, 'the check time says its offset')
  const unflagged = renderProgramme(ok(loadProgramme({ ...deps, flags }, admin, A, siteId(1)))).toString()
  t.notMatch(unflagged, /flag-infeasible/, 'an instruction without a flag shows none')
  t.match(unflagged, /<dt>Créneaux<\/dt><dd>3 créneaux de 15 min<\/dd>/)
})

t.test('the list gives the status right after the site, and each time without repeating its offset: the header says it once', async t => {
  const deps = await seeded(t)
  const page = renderProgrammes(ok(await loadProgrammes(deps, admin, {}))).toString()
  const headers = [...page.matchAll(/<th scope="col"[^>]*>(.*?)<\/th>/g)].map(h => h[1]!.replace(/<[^>]*>/g, ''))
  t.same(headers, ['Instruction émise le (heure de Paris)', 'Site', 'Statut et faisabilité', 'Entreprise', 'Reçue le (heure de Paris)', 'Créneaux'])
  t.notMatch(page, /UTC\+0/, 'no cell says its offset outside the repeated autumn hour')
  t.match(page, '<time datetime="2026-11-21T12:00:00.000Z" title="2026-11-21T12:00:00.000Z (UTC)">21/11/2026 13:00:00</time>')
})

t.test('checked against published needs and nothing to check against are two answers, neither a flag', async t => {
  const deps = await seeded(t)
  const s = seededStore.get(deps)!
  const revisions = openRevisions(s, { retentionDays: 90 })
  t.teardown(() => revisions.close())
  // Published for site 1 at 09:00 Paris, before the instructions came (13:00 Paris); site 2: never.
  // Only when they were emitted matters here: the documents name no site (nothing to draw).
  await revisions.publish([{ siteId: siteId(1), targetDate: '2026-11-22', render: at => JSON.stringify({ emitted_at: at, sites: [] }) }], Date.parse('2026-11-21T08:00:00Z'))
  const withNeeds = { ...deps, revisions }
  const list = renderProgrammes(ok(await loadProgrammes(withNeeds, admin, {}))).toString()
  t.equal((list.match(/class="badge badge-checked"/g) ?? []).length, 3, "site 1's three instructions: checked")
  t.equal((list.match(/class="badge badge-unchecked"/g) ?? []).length, 1, "site 2's: nothing to check against")
  const checked = renderProgramme(ok(loadProgramme(withNeeds, admin, A, siteId(1)))).toString()
  t.match(checked, /<dt>Faisabilité<\/dt><dd><span class="badge badge-checked"[^>]*>vérifiée<\/span> aucun dépassement des Besoins agrégés émis le 21\/11\/2026 09:00:00 \(UTC\+01:00\)/)
  const unchecked = renderProgramme(ok(loadProgramme(withNeeds, admin, A, siteId(2)))).toString()
  t.match(unchecked, /<dt>Faisabilité<\/dt><dd><span class="badge badge-unchecked"[^>]*>non vérifiable<\/span> aucun Besoin agrégé n&#39;était publié pour ce site et ce jour à la réception/)
  t.notMatch(unchecked, /aucun dépassement/, 'not worded as a pass')
  const published = await revisions.publish([{ siteId: siteId(2), targetDate: '2026-11-22', render: at => JSON.stringify({ emitted_at: at, sites: [] }) }], Date.parse('2026-11-21T12:30:00Z'))
  t.ok(published.length)
  t.match(renderProgramme(ok(loadProgramme(withNeeds, admin, A, siteId(2)))).toString(), /badge-unchecked/, 'needs published after it came do not make it checked')
})

t.test("the solver's site name is shown; the one the BSP sent only when it differs; a sender naming another than its company is flagged", async t => {
  const deps = await seeded(t)
  const m = ok(await loadProgrammes(deps, admin, {}))
  const page = renderProgrammes(m).toString()
  t.match(page, '<td>PRM30000000000001<br><small>Depot 1</small><br><small class="sent">nom envoyé : « Site 1 »</small></td>')
  t.notMatch(page, /badge-mismatch/, '"bsp-acme" for acme, "beta <b>ops</b>" for beta: their own names')
  const detail = renderProgramme(ok(loadProgramme(deps, admin, C, siteId(1))), [{ site_id: siteId(1), site_name: 'Site 1' }]).toString()
  t.match(detail, '<dt>Site</dt><dd>PRM30000000000001<br><small>Site 1</small></dd>', 'the same name: said once')
  const s = seedStore(t)
  await s.addCompany('acme', 'all')
  await s.receive({ emittedAt: '2026-11-21T10:00:00Z', emittedBy: 'Other Energy SA', slots: 1 }, 'acme')
  const other = renderProgrammes(ok(await loadProgrammes({ instructions: s.instructions, companies: s.companies, sites: async () => SITES, clock: deps.clock }, admin, {}))).toString()
  t.match(other, /<td>acme<br><small class="sent">se dit « Other Energy SA »<\/small> <span class="badge badge-mismatch"[^>]*>autre nom<\/span><\/td>/)
})
