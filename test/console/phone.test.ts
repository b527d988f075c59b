import t from 'tap'
import type { Page } from 'playwright-core'
import { addUser } from '../../src/auth/accounts.ts'
import { accessibilityProblems, launchBrowser, newPage, pagePerUser, screenshot, screenshotOf, signIn } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'

// Every console page at a phone's width (390 × 844), as an admin and as a member: no page
// is wider than the screen (tables scroll in their own box, facts stack), the chart keeps
// a readable size, and an infeasible programme is flagged wherever it shows.
// Every page passes axe at that width (the system tier, .taprc).
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
const TOMORROW = '2026-11-22'
const acme = await epx.addCompany('acme', { perimeter: [siteId(1), siteId(2)] })
await epx.addCompany('beta', { perimeter: [siteId(3)] })
const root = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
const alice = await addUser(epx.store, { username: 'alice', admin: false, companyId: 'acme' }, Date.now())
await epx.handle.publish({ targetDate: TOMORROW })
for (let i = 0; i < 3; i++) await epx.addToken('acme', ['outbound:besoins-agreges'], { revoked: i > 0 })

// 10 kW floors, and 8,000 kW from 10:00 to 11:00 Paris: far over any site's available power.
const FLAGGED = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'
const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
const posted = await epx.request({
  method: 'POST', path: INBOUND_PATH, cert: acme.cert, token: secret,
  body: programme({ emittedAt: '2026-11-21T12:00:00Z', emittedBy: 'acme-dispatch', sites: [siteId(1)], kwh: j => j >= 40 && j < 44 ? 2000 : 2.5 }),
})
if (posted.status !== 202) throw new Error(`${posted.status} ${posted.text}`)

const besoins = `/besoins-agreges?site_id=${siteId(1)}&target_date=${TOMORROW}`
const detail = `/programmes/${FLAGGED}/${siteId(1)}`

/** The user's page on a phone's screen: one for the file, each test going to its page first. */
const phone = pagePerUser(t, browser, url, page => page.setViewportSize({ width: 390, height: 844 }))

/** How wide the page is against the screen (the document scrolls sideways when wider). */
const widths = (page: Page) => page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]') as Promise<[number, number]>

t.test('at 390 px no page is wider than the screen, and every page passes axe', async t => {
  const admin = await phone('root', root.password)
  const member = await phone('alice', alice.password)
  const pages: Array<[Page, string, string]> = [
    [admin, besoins, 'phone-besoins'], [admin, `/programmes?target_date=${TOMORROW}`, 'phone-programmes'], [admin, detail, 'phone-programme'],
    [admin, '/tokens?state=all', 'phone-tokens'], [admin, '/admin/companies', 'phone-admin-companies'], [admin, '/admin/companies/acme', 'phone-admin-company'],
    [admin, '/admin/users', 'phone-admin-users'], [admin, '/admin/publish', 'phone-admin-publish'], [admin, '/compte/mot-de-passe', 'phone-password'],
    [admin, `/realise?target_date=${TOMORROW}`, 'phone-realise'],
    [member, besoins, 'phone-member-besoins'], [member, `/programmes?target_date=${TOMORROW}`, 'phone-member-programmes'], [member, '/tokens', 'phone-member-tokens'],
  ]
  for (const [page, path, name] of pages) {
    const r = await page.goto(new URL(path, url).href)
    t.equal(r?.status(), 200, `${path}: 200`)
    const [scroll, screen] = await widths(page)
    t.ok(scroll <= screen, `${path} (${name.includes('member') ? 'member' : 'admin'}): ${scroll} px wide on a ${screen} px screen`)
    t.same(await accessibilityProblems(page), [], `${path}: no serious or critical accessibility problem`)
    await screenshot(page, name, { fullPage: false })
  }
  const [scroll, screen] = await widths(member)
  t.ok(scroll <= screen)
  const login = await newPage(t, browser)
  await login.setViewportSize({ width: 390, height: 844 })
  await login.goto(new URL('/login', url).href)
  const [w, s] = await widths(login)
  t.ok(w <= s, `/login: ${w} px wide on a ${s} px screen`)
})

t.test("at 390 px Réalisé shows the day's figures on its first screen", async t => {
  const page = await phone('alice', alice.password)
  await page.goto(new URL(`/realise?target_date=${TOMORROW}`, url).href)
  const figures = page.locator('.day-totals dl.figures')
  t.same(await figures.locator('dt').allTextContents(), ['Programmé (kWh)', 'Réalisé (kWh)', 'Manque (kWh)', "Quarts d'heure insuffisants", 'Effacements non respectés', 'Sans relevé'])
  const box = (await figures.locator('div').nth(2).boundingBox())!
  t.ok(box.y + box.height <= 844, `programmed, delivered and shortfall end ${Math.round(box.y + box.height)} px down a 844 px screen`)
  const chooser = (await page.locator('form.chooser').boundingBox())!
  t.ok(chooser.y > box.y, 'before the day chooser and the table')
})

t.test('at 390 px the chart keeps a readable size and scrolls in its own box; tables too', async t => {
  const page = await phone('root', root.password)
  await page.goto(new URL(besoins, url).href)
  const chart = await page.locator('svg.chart').boundingBox()
  // The chart's text is 13 units of a 960-unit-wide drawing.
  const textPx = 13 * chart!.width / 960
  t.ok(textPx >= 9, `chart text about ${textPx.toFixed(1)} px (it read ~4 px scaled to the screen)`)
  const figure = await page.locator('figure.chart').evaluate(e => [e.scrollWidth, e.clientWidth, e.getAttribute('tabindex')])
  t.ok(Number(figure[0]) > Number(figure[1]), 'the figure scrolls sideways')
  t.equal(figure[2], '0', 'and a keyboard can scroll it')
  const table = page.locator('.table-scroll', { has: page.locator('table.slots') })
  t.equal(await table.getAttribute('tabindex'), '0', 'the slot table sits in a focusable scroll box')
  t.equal(await table.getAttribute('aria-label'), 'Créneaux', 'named after its caption')
  const facts = await page.locator('dl.facts dd').first().boundingBox()
  const term = await page.locator('dl.facts dt').first().boundingBox()
  t.ok(facts!.y > term!.y, 'facts stack: the value under its term')
})

t.test('an infeasible programme is flagged in the list, on its page, on each slot, and on the chart, whose scale it does not flatten', async t => {
  const page = await newPage(t, browser)
  await signIn(page, url, 'alice', alice.password)
  await page.goto(new URL(`/programmes?target_date=${TOMORROW}`, url).href)
  const row = page.locator('table.programmes tbody tr', { has: page.locator(`a[title="${FLAGGED}"]`) })
  await t.resolveMatch(row.locator('.flag-infeasible').textContent(), 'infaisable', 'the list says it')
  await screenshot(page, 'programmes-infeasible', { fullPage: false })

  await page.goto(new URL(detail, url).href)
  await t.resolveMatch(page.locator('p.flag-infeasible').textContent(), /Infaisable : 4 créneaux ont un plancher au-delà de la puissance disponible \(jusqu'à 8\s000 kW pour [\d\s,]+ kW disponibles\)/)
  const flagged = page.locator('table.slots tbody tr', { has: page.locator('td.over') })
  t.equal(await flagged.count(), 4, 'the four slots over the available power say so')
  await t.resolveMatch(flagged.first().locator('td').first().textContent(), '22/11/2026 10:00:00')
  t.same(await accessibilityProblems(page), [])
  await screenshot(page, 'programme-infeasible', { fullPage: false })

  await page.goto(new URL(besoins, url).href)
  await t.resolveMatch(page.locator('p.flag-infeasible').textContent(), /Infaisable : 4 créneaux de la consigne demandent un plancher au-delà de la puissance disponible/)
  t.equal(await page.locator('svg.chart .clipped-marker').count(), 4, 'the 8,000 kW floors are markers at the top of the chart')
  await t.resolveMatch(page.locator('svg.chart .clipped-label').textContent(), /plancher hors échelle : 8\s000 kW/)
  const top = Math.max(...(await page.locator('svg.chart g.grid text').allTextContents()).map(s => Number(s.replace(/\s/g, '').replace(',', '.'))).filter(Number.isFinite))
  t.ok(top < 8000, `the axis stays at the site's scale (top ${top} kW)`)
  t.equal(await page.locator('table.slots td.over').count(), 4, 'and the slot table flags them')
  t.same(await accessibilityProblems(page), [])
  await page.setViewportSize({ width: 1200, height: 1000 })
  await screenshot(page, 'besoins-infeasible-top', { fullPage: false })
  await screenshotOf(page.locator('svg.chart'), 'besoins-chart-infeasible')
})
