import t from 'tap'
import { besoinsPages } from '../../../src/console/pages/besoins.ts'
import { loadBesoins, type BesoinsDeps } from '../../../src/console/pages/besoins-model.ts'
import { renderBesoins } from '../../../src/console/pages/besoins-view.ts'
import { ManualClock } from '../../../src/host/reference-host.ts'
import { simulatedSites } from '../../../src/host/simulated-sites.ts'
import { openRevisions } from '../../../src/store/revisions.ts'
import { openInstructions } from '../../../src/store/instructions.ts'
import { OUTBOUND_PATH } from '../../../src/http/route.ts'
import { startEpx } from '../../helpers/epx.ts'
import { seedStore, type Seeded } from '../../helpers/seed.ts'
import { admin, member, pageApp } from '../../helpers/console-app.ts'
import { siteId } from '../../helpers/programme.ts'

const SITES = simulatedSites(3)

function depsOf (s: Seeded, now = '2026-11-21T12:30:00Z'): BesoinsDeps {
  return { revisions: s.revisions, instructions: s.instructions, companies: s.companies, sites: async () => SITES, clock: new ManualClock(now) }
}

const ok = <T>(r: { status: number; model?: T }): T => {
  if (r.status !== 200) throw new Error(`status ${r.status}`)
  return r.model!
}
const text = (h: { toString(): string }) => h.toString().replace(/&#39;/g, "'")
const slotRows = (page: string) => (page.match(/<table class="slots">[\s\S]*?<\/table>/)![0].match(/<tr><td class="num">/g) ?? []).length

t.test('the default day is tomorrow in Paris by the injected clock, the default site the first one', async t => {
  const s = seedStore(t)
  // 23:30 UTC on the 21st is already the 22nd in Paris: tomorrow is the 23rd.
  const m = ok(await loadBesoins(depsOf(s, '2026-11-21T23:30:00Z'), admin, {}))
  t.equal(m.targetDate, '2026-11-23')
  t.equal(m.site?.site_id, siteId(1))
  t.equal(m.latest, undefined)
  t.match(text(renderBesoins(m)), /Aucune révision publiée pour le site PRM30000000000001 le 23\/11\/2026/)
})

for (const [day, slots, firstHours] of [['2027-03-28', 92, ['00', '01', '03']], ['2026-11-22', 96, ['00', '01', '02']], ['2026-10-25', 100, ['00', '01', '02', '02']]] as const) {
  t.test(`a ${slots}-slot day: the latest revision, ${slots} slot rows, Paris hour labels`, async t => {
    const s = seedStore(t)
    const meta = await s.publish(day, siteId(1))
    const m = ok(await loadBesoins(depsOf(s), admin, { site_id: siteId(1), target_date: day }))
    t.equal(m.latest?.meta.etag, meta.etag)
    const page = text(renderBesoins(m))
    t.equal(slotRows(page), slots)
    t.equal((page.match(/<rect class="slot"/g) ?? []).length, slots)
    t.same([...page.matchAll(/<text class="hour[^"]*"[^>]*>(\d\d)</g)].map(x => x[1]).slice(0, firstHours.length), firstHours)
    t.match(page, new RegExp(`${slots} quarts d'heure`))
    t.match(page, `<code>${meta.etag.replace(/"/g, '&quot;')}</code>`)
    t.match(page, `datetime="${meta.emittedAt}"`, 'emitted_at with its UTC instant')
    t.match(page, /120/, 'the milestone table')
  })
}

t.test('the history lists every kept revision, newest first, each with its size and download', async t => {
  const s = seedStore(t)
  const first = await s.publish('2026-11-22', siteId(1), { nowMs: Date.parse('2026-11-21T07:00:00Z') })
  const second = await s.publish('2026-11-22', siteId(1), { nowMs: Date.parse('2026-11-21T08:00:00Z'), kw: () => 10 })
  const m = ok(await loadBesoins(depsOf(s), admin, { site_id: siteId(1), target_date: '2026-11-22' }))
  t.same(m.history.map(r => r.etag), [second.etag, first.etag])
  const page = renderBesoins(m).toString()
  t.match(page, `rev=${first.emittedAtMs}`)
  t.match(page, `rev=${second.emittedAtMs}`)
  t.match(page, new RegExp(`>${first.size.toLocaleString('fr-FR').replace(/\s/g, '\\s')}<`))
})

t.test('a member sees its perimeter only: another site is 404, a bad query 400', async t => {
  const s = seedStore(t)
  await s.addCompany('acme', [siteId(2)])
  await s.publish('2026-11-22', siteId(1))
  const deps = depsOf(s)
  const m = ok(await loadBesoins(deps, member('acme'), { target_date: '2026-11-22' }))
  t.same(m.sites.map(x => x.site_id), [siteId(2)])
  t.equal(m.site?.site_id, siteId(2), 'its own first site by default')
  t.same(await loadBesoins(deps, member('acme'), { site_id: siteId(1), target_date: '2026-11-22' }), { status: 404 })
  t.same(await loadBesoins(deps, member('acme'), { site_id: 'PRM99999999999999', target_date: '2026-11-22' }), { status: 404 }, 'the same as an unknown site')
  t.match(await loadBesoins(deps, member('acme'), { site_id: siteId(2), target_date: '2026-02-30' }), { status: 400, message: /2026-02-30/ })
  t.match(await loadBesoins(deps, admin, { site_id: 'PRM1' }), { status: 400, message: /PRM suivi de 14 chiffres/ })
  const none = ok(await loadBesoins(deps, member('ghost'), {}))
  t.match(renderBesoins(none).toString(), /Aucun site dans votre périmètre/)
})

t.test('the effective instruction is drawn for its company and the admin, not for another company', async t => {
  const s = seedStore(t)
  await s.addCompany('acme', [siteId(1)])
  await s.addCompany('beta', [siteId(1)])
  await s.publish('2026-11-22', siteId(1))
  await s.receive({ emittedAt: '2026-11-21T10:00:00Z', slots: 4, kwh: j => [0, 5, 0, 2.5][j]! }, 'acme')
  const deps = depsOf(s)
  for (const viewer of [admin, member('acme')]) {
    const page = text(renderBesoins(ok(await loadBesoins(deps, viewer, { site_id: siteId(1), target_date: '2026-11-22' }))))
    t.equal((page.match(/<line class="floor"/g) ?? []).length, 2, `${viewer.username}: two floors`)
    t.equal((page.match(/<rect class="curtailment"/g) ?? []).length, 2, `${viewer.username}: two curtailments`)
    t.match(page, /<td>plancher 20 kW<\/td>/)
    t.match(page, /<td>effacement \(0 kW max\)<\/td>/)
    t.match(page, /title="ProgrammeSoutirage-2026-11-22-rev-20261121T100000Z">rév\. 21\/11\/2026 11:00:00<\/a> \(reçue\)/, "the instruction in force, in short; its full id in the link's title")
  }
  const other = text(renderBesoins(ok(await loadBesoins(deps, member('beta'), { site_id: siteId(1), target_date: '2026-11-22' }))))
  t.notMatch(other, /ProgrammeSoutirage|class="floor"|class="curtailment"/)
  t.match(other, /<dt>Consigne en vigueur<\/dt><dd>aucune\n &mdash; <a href="\/programmes\?target_date=2026-11-22&amp;site_id=PRM30000000000001">/)
})

t.test('the page over HTTP: a <script> site name is text; a foreign site is a 404 that names nothing', async t => {
  const s = seedStore(t)
  await s.addCompany('acme', [siteId(2)])
  await s.publish('2026-11-22', siteId(1), { siteName: '<script>alert(1)</script>' })
  const app = await pageApp(t, app => besoinsPages(app, depsOf(s)))
  const page = await app.get(`/besoins-agreges?site_id=${siteId(1)}&target_date=2026-11-22`)
  t.equal(page.status, 200)
  t.notMatch(page.text, /<script>/)
  t.match(page.text, /&lt;script&gt;alert\(1\)&lt;\/script&gt; \(PRM30000000000001\)/)
  app.viewer = member('acme')
  for (const path of [`/besoins-agreges?site_id=${siteId(1)}&target_date=2026-11-22`, `/besoins-agreges/download?site_id=${siteId(1)}&target_date=2026-11-22`]) {
    const r = await app.get(path)
    t.equal(r.status, 404, path)
    t.notMatch(r.text, /script|PRM30000000000001|Depot/, 'nothing of the site leaks')
  }
  t.equal((await app.get('/besoins-agreges?target_date=nope')).status, 400)
  t.equal((await app.get('/besoins-agreges/download?target_date=2026-11-22')).status, 400, 'a download names its site')
  t.equal((await app.get(`/besoins-agreges/download?site_id=${siteId(2)}&target_date=2026-11-22&rev=x`)).status, 400)
  t.equal((await app.get(`/besoins-agreges/download?site_id=${siteId(2)}&target_date=2026-11-22`)).status, 404, 'not published')
  app.viewer = null
  t.equal((await app.get('/besoins-agreges')).status, 403, 'no viewer, no page')
  t.equal((await app.get(`/besoins-agreges/download?site_id=${siteId(1)}&target_date=2026-11-22`)).status, 403)
})

t.test('the download is byte for byte what the API serves, for the latest and an older revision', async t => {
  const epx = await startEpx(t, { sites: 2 })
  const { cert } = await epx.addCompany('acme', { perimeter: [siteId(1)] })
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const query = { site_id: siteId(1), target_date: '2026-11-22' }
  const api = async () => epx.request({ path: OUTBOUND_PATH, query, cert, token: secret })
  await epx.handle.publish({ targetDate: '2026-11-22' })
  const older = await api()
  t.equal(older.status, 200)
  epx.clock.advance(3_600_000)
  await epx.handle.publish({ targetDate: '2026-11-22' })
  const latest = await api()
  t.not(latest.headers.etag, older.headers.etag)

  const deps: BesoinsDeps = {
    revisions: openRevisions(epx.store, { retentionDays: 90 }), instructions: openInstructions(epx.store),
    companies: epx.companies, sites: () => epx.ref.host.solver.sites(), clock: epx.clock,
  }
  const app = await pageApp(t, app => besoinsPages(app, deps))
  app.viewer = member('acme')
  const got = await app.get(`/besoins-agreges/download?site_id=${siteId(1)}&target_date=2026-11-22`)
  t.equal(got.status, 200)
  t.ok(got.bytes.equals(Buffer.from(latest.text)), 'the latest: identical bytes')
  for (const h of ['content-type', 'etag', 'last-modified', 'content-length']) t.equal(got.headers[h], latest.headers[h], h)
  t.match(got.headers['content-disposition'], /^attachment; filename="besoins-agreges-PRM30000000000001-2026-11-22-\d{8}T\d{6}Z\.json"$/)

  const page = await app.get(`/besoins-agreges?site_id=${siteId(1)}&target_date=2026-11-22`)
  const olderHref = [...page.text.matchAll(/href="(\/besoins-agreges\/download\?[^"]+)"/g)].map(m => m[1]!.replace(/&amp;/g, '&')).at(-1)!
  const old = await app.get(olderHref)
  t.ok(old.bytes.equals(Buffer.from(older.text)), 'the older revision from the history: identical bytes')
  t.equal(old.headers.etag, older.headers.etag)
  t.match(page.text, JSON.parse(latest.text).emitted_at, 'the page shows the emitted_at the API serves')
})
