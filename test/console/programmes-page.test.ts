import t from 'tap'
import { addUser } from '../../src/auth/accounts.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { accessibilityProblems, launchBrowser, newPage, screenshot, screenshotOf, signIn } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'

// The "Programmes" pages of a real plugin activation, in chromium: programmes POSTed on the
// API over mTLS, applied by the reference host's solver cycle. One epx and one browser.
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
const TOMORROW = '2026-11-22'
const acme = await epx.addCompany('acme', { perimeter: [siteId(1), siteId(2)] })
const beta = await epx.addCompany('beta', { perimeter: [siteId(1), siteId(3)] })
const alice = await addUser(epx.store, { username: 'alice', admin: false, companyId: 'acme' }, Date.now())
const root = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())

async function post (company: typeof acme, body: object): Promise<void> {
  const { secret } = await epx.addToken(company.record.id, ['inbound:programme-soutirage'])
  const r = await epx.request({ method: 'POST', path: INBOUND_PATH, cert: company.cert, token: secret, body })
  if (r.status !== 202) throw new Error(`${r.status} ${r.text}`)
}

/** Status writes after the 202 are not awaited by the request: wait for them. */
async function settled (instructionId: string, site: string, status: string): Promise<void> {
  const instructions = openInstructions(epx.store)
  for (let i = 0; i < 300 && instructions.get(instructionId, site)?.state.status !== status; i++) await new Promise(r => setTimeout(r, 10))
}

// beta's programme (10:00) covers a shared site and its own; acme's (12:00) supersedes it on the shared one.
const BETA = 'ProgrammeSoutirage-2026-11-22-rev-20261121T100000Z'
const ACME = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'
await post(beta, programme({ emittedAt: '2026-11-21T10:00:00Z', emittedBy: 'beta-ops', sites: [siteId(1), siteId(3)], slots: 8 }))
// Floors of 10 kW (2.5 kWh a quarter-hour), a curtailment (0 kWh) from 06:00 to 07:00 Paris,
// floors of 120 kW from 18:00.
const kwh = (j: number) => j >= 24 && j < 28 ? 0 : j >= 72 ? 30 : 2.5
await post(acme, programme({ emittedAt: '2026-11-21T12:00:00Z', emittedBy: 'acme-dispatch', sites: [siteId(1)], kwh }))
await settled(ACME, siteId(1), 'queued')
// Published a minute after the programmes came: they had nothing to be checked against.
epx.clock.advance(60_000)
await epx.handle.publish({ targetDate: TOMORROW })

const page = await newPage(t, browser)
// What the browser reports as an error (a CSP refusal, a failed asset), but the 404s asked for.
const browserErrors: string[] = []
page.on('console', m => { if (m.type() === 'error' && !/status of 404/.test(m.text())) browserErrors.push(m.text()) })
t.equal(await signIn(page, url, 'alice', alice.password), 303, 'alice is signed in')
const detail = `/programmes/${ACME}/${siteId(1)}`

t.test('a programme posted on the API shows as received, then as applied after a solver cycle', async t => {
  await page.goto(new URL(`/programmes?target_date=${TOMORROW}`, url).href)
  const row = page.locator('table.programmes tbody tr', { has: page.locator(`a[title="${ACME}"]`) })
  t.equal(await row.count(), 1, 'listed for its day')
  const cells = row.locator('td')
  t.equal(await cells.nth(0).textContent(), 'rév. 21/11/2026 13:00:00', 'its id in short: emitted_at in Paris, the full id in the title')
  t.match(await cells.nth(2).textContent(), /en attente du prochain cycle|reçue/, 'received, waiting for the solver: the status right after the site')
  t.match(await cells.nth(2).locator('.badge').textContent(), 'non vérifiable', 'posted before any Besoins agrégés: nothing to check against, which is not a pass')
  t.match(await cells.nth(3).textContent(), /^acme.*se dit « acme-dispatch »/s, 'its company, then the emitted_by it typed')
  t.equal(await cells.nth(3).locator('.badge-mismatch').count(), 0, '"acme-dispatch" names acme: not flagged')
  t.equal(await cells.nth(5).textContent(), '96', 'its slot count')
  t.same(await accessibilityProblems(page), [], 'the list: no serious or critical accessibility problem')
  await screenshot(page, 'programmes-received')

  const cycle = epx.ref.runCycle()
  t.ok(cycle.inputs.some(i => i.instructionId === ACME && i.siteId === siteId(1)), 'the cycle took it')
  await settled(ACME, siteId(1), 'applied')
  await page.reload()
  t.match(await cells.nth(2).textContent(), `appliquée au cycle ${cycle.cycle}`, 'applied, at that cycle')
  await screenshot(page, 'programmes-applied')
})

t.test("the detail page: sender, emitted_at, each slot's floor or curtailment; axe passes", async t => {
  const r = await page.goto(new URL(detail, url).href)
  t.equal(r?.status(), 200)
  const facts = page.locator('dl.facts')
  await t.resolveMatch(facts.textContent(), /Entrepriseacme.*se dit « acme-dispatch »/s)
  await t.resolveMatch(facts.textContent(), 'Faisabiliténon vérifiable aucun Besoin agrégé n\'était publié pour ce site et ce jour à la réception')
  t.equal(await facts.locator('time').first().getAttribute('datetime'), '2026-11-21T12:00:00Z', 'emitted_at')
  await t.resolveMatch(facts.textContent(), /appliquée au cycle \d+/)
  const rows = page.locator('table.slots tbody tr')
  t.equal(await rows.count(), 96)
  const constraints = await rows.locator('td:nth-child(4)').allTextContents()
  t.same(constraints.map((c, j) => [j, c]).filter(([, c]) => c !== 'plancher 10 kW'), [
    ...[24, 25, 26, 27].map(j => [j, 'effacement (0 kW max)']),
    ...Array.from({ length: 24 }, (_, k) => [72 + k, 'plancher 120 kW']),
  ], '10 kW floors, a curtailment from 06:00 to 07:00, 120 kW floors from 18:00')
  await t.resolveMatch(rows.nth(24).locator('td').first().textContent(), '22/11/2026 06:00:00')
  t.same(await accessibilityProblems(page), [], 'the detail: no serious or critical accessibility problem')
  await screenshot(page, 'programme-detail')
  await screenshot(page, 'programme-detail-top', { fullPage: false })

  await page.getByRole('link', { name: 'Voir sur le graphique des besoins agrégés' }).click()
  await page.waitForLoadState()
  await t.resolveMatch(page.locator('dl.facts').textContent(), 'Consigne en vigueurrév. 21/11/2026 13:00:00 (appliquée', 'the Besoins agrégés page names the instruction in force')
  t.equal(await page.locator('dl.facts a.instruction').getAttribute('title'), ACME, 'its full id one click away')
  t.equal(await page.locator('svg.chart line.floor').count(), 92, 'and draws its floors')
  t.equal(await page.locator('svg.chart rect.curtailment').count(), 4, 'and its curtailments, on the same axis')
  t.same(await accessibilityProblems(page), [], 'the chart with an instruction: no serious or critical accessibility problem')
  await page.setViewportSize({ width: 1200, height: 1000 })
  await screenshot(page, 'besoins-with-programme-top', { fullPage: false })
})

t.test("a member editing the URL to another company's programme gets a 404; nothing of it leaks", async t => {
  for (const path of [`/programmes/${BETA}/${siteId(3)}`, `/programmes/${BETA}/${siteId(1)}`, `/programmes/${BETA}/${siteId(2)}`]) {
    const r = await page.goto(new URL(path, url).href)
    t.equal(r?.status(), 404, path)
    const text = await page.content()
    t.notMatch(text, /beta|Depot 3|20261121T100000Z/, 'no company, site name or instruction id of beta')
  }
  await screenshot(page, 'programme-foreign')
  await page.goto(new URL(`/programmes?target_date=${TOMORROW}&site_id=${siteId(1)}`, url).href)
  const listed = await page.locator('table.programmes').innerHTML()
  t.match(listed, ACME)
  t.notMatch(listed, /beta|20261121T100000Z/, "beta's programme of the shared site is not listed")
})

t.test('an admin sees both companies, with who superseded what', async t => {
  const admin = await newPage(t, browser)
  await signIn(admin, url, 'root', root.password)
  await admin.goto(new URL(`/programmes?target_date=${TOMORROW}`, url).href)
  const rows = admin.locator('table.programmes tbody tr')
  t.equal(await rows.count(), 3, "beta's two sites and acme's one")
  await t.resolveMatch(rows.filter({ hasText: siteId(1) }).filter({ hasText: 'beta-ops' }).locator('td').nth(2).textContent(), 'remplacée par rév. 21/11/2026 13:00:00')
  t.same(await accessibilityProblems(admin), [])
  await screenshot(admin, 'programmes-admin')
})

t.test("a programme's chart draws the day's Besoins under it and the delivered energy beside it; one extreme floor is clipped, not the scale", async t => {
  // 20 kW floors (5 kWh a quarter-hour) on acme's other site, but one of 8,000 kW (2,000 kWh) at 10:00 Paris.
  const OUTLIER = 'ProgrammeSoutirage-2026-11-22-rev-20261121T121500Z'
  await post(acme, programme({ emittedAt: '2026-11-21T12:15:00Z', emittedBy: 'acme-dispatch', sites: [siteId(2)], kwh: j => j === 40 ? 2000 : 5 }))
  await settled(OUTLIER, siteId(2), 'queued')
  // The day is over: its meter values, 16 to 22 kW a quarter-hour, are reported.
  epx.clock.set('2026-11-23T08:00:00Z')
  const start = Date.parse('2026-11-21T23:00:00Z')
  const report = await epx.handle.reportMetering(Array.from({ length: 48 }, (_, j) => ({
    siteId: siteId(2), startUtc: new Date(start + j * 900_000).toISOString(), endUtc: new Date(start + (j + 1) * 900_000).toISOString(), kwh: 4 + (j % 4) * 0.5,
  })))
  t.equal(report.accepted, 48)
  t.equal(await signIn(page, url, 'alice', alice.password), 303, 'two days later: a new session')

  await page.goto(new URL(`/besoins-agreges?site_id=${siteId(2)}&target_date=${TOMORROW}`, url).href)
  const published = await page.locator('svg.chart rect.slot title').allTextContents()
  t.equal(published.length, 96)
  await page.goto(new URL(`/programmes/${OUTLIER}/${siteId(2)}`, url).href)
  const chart = page.locator('svg.chart')
  t.same(await chart.locator('rect.slot title').allTextContents(), published, "the available power is the day's published Besoins, slot by slot")
  t.equal(await chart.locator('path.available').count(), 1, 'drawn as an area')
  t.ok(await chart.locator('rect.milestone').count() > 0, 'with its milestones')
  t.same(await chart.locator('g.legend text').allTextContents(),
    ['Puissance disponible', 'Jalon (échéance)', 'Plancher (min kW)', 'Plancher infaisable', 'Réalisé (compteur)', 'Hors échelle'],
    'the legend lists the series drawn: no curtailment in this programme, none listed')

  const yTop = Math.max(...(await chart.locator('g.grid text').allTextContents()).map(v => Number(v.replace(/\s/g, '').replace(',', '.'))).filter(Number.isFinite))
  t.ok(yTop < 1000, `the axis follows the site, not the 8,000 kW floor (top ${yTop} kW)`)
  t.equal(await chart.locator('path.clipped-floor').count(), 1, 'the extreme floor is a marker at the top edge')
  await t.resolveMatch(chart.locator('text.clipped-label').textContent(), /plancher hors échelle : 8\s000 kW/)
  t.equal(await chart.locator('line.floor.over').count(), 1, 'drawn as infeasible: above the available power')

  const baseline = Number(await chart.locator('g.x-axis > line').first().getAttribute('y1'))
  const ys = await chart.locator('line.delivered').evaluateAll(ls => ls.map(l => Number(l.getAttribute('y1'))))
  t.equal(ys.length, 48, 'every metered quarter-hour')
  t.ok(ys.every(y => baseline - y > 20), `delivered power stands clear of the axis (heights ${Math.min(...ys.map(y => baseline - y))} to ${Math.max(...ys.map(y => baseline - y))})`)
  t.ok(new Set(ys).size >= 4, 'and its 16 to 22 kW read as different heights, not one flat line')
  t.same(await accessibilityProblems(page), [], 'the chart with every series: no serious or critical accessibility problem')
  await screenshot(page, 'programme-chart-clipped')
  await screenshotOf(chart, 'programme-chart-clipped-svg')
})

t.test('the browser reported no error on any page of this file (no CSP refusal, no missing asset)', async t => {
  t.same(browserErrors, [])
})
