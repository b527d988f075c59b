import t from 'tap'
import type { Page } from 'playwright-core'
import { addUser } from '../../src/auth/accounts.ts'
import { accessibilityProblems, launchBrowser, newPage, screenshot, signIn } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'

// The console on an operator's desktop screens (1366 and 1920 px wide): the page takes the
// width, and the columns that flag something (a programme's status and feasibility, a
// token's state and its "Révoquer") are on the screen, not scrolled away in their table's box.
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
const TOMORROW = '2026-11-22'
const acme = await epx.addCompany('acme', { perimeter: [siteId(1), siteId(2), siteId(3)] })
const root = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
await epx.handle.publish({ targetDate: TOMORROW })
for (let i = 0; i < 3; i++) {
  await epx.addToken('acme', ['outbound:besoins-agreges', 'outbound:realise', 'inbound:programme-soutirage'], { revoked: i > 0 })
}
const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
// Three sites, one of them far over its available power (flagged), sent under another name than acme's.
const posted = await epx.request({
  method: 'POST', path: INBOUND_PATH, cert: acme.cert, token: secret,
  body: programme({ emittedAt: '2026-11-21T12:00:00.123Z', emittedBy: 'Dispatch Énergie Sud-Ouest', sites: [siteId(1), siteId(2), siteId(3)], kwh: (j, i) => i === 0 && j >= 40 && j < 44 ? 2000 : 2.5 }),
})
if (posted.status !== 202) throw new Error(`${posted.status} ${posted.text}`)

/** Right edges (px) of the named columns' headers, and whether any table box scrolls sideways. */
async function layout (page: Page, headers: readonly string[]) {
  const edges: Record<string, number> = {}
  for (const name of headers) edges[name] = (await page.locator('th', { hasText: name }).first().boundingBox())!.x + (await page.locator('th', { hasText: name }).first().boundingBox())!.width
  const scrolls = await page.locator('.table-scroll').evaluateAll(boxes => boxes.filter(b => b.scrollWidth > b.clientWidth).length)
  const [pageWidth, screen] = await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]') as [number, number]
  const mainWidth = (await page.locator('main').boundingBox())!.width
  return { edges, scrolls, pageWidth, screen, mainWidth }
}

for (const width of [1366, 1920]) {
  t.test(`at ${width} px the status and state columns are on the screen, and the page uses its width`, async t => {
    const page = await newPage(t, browser)
    await page.setViewportSize({ width, height: 900 })
    t.equal(await signIn(page, url, 'root', root.password), 303)
    const pages: Array<[string, readonly string[]]> = [
      [`/programmes?target_date=${TOMORROW}`, ['Site', 'Statut et faisabilité', 'Entreprise', 'Créneaux']],
      ['/tokens?state=all', ['État', 'Action']],
    ]
    for (const [path, headers] of pages) {
      t.equal((await page.goto(new URL(path, url).href))?.status(), 200, path)
      const l = await layout(page, headers)
      for (const [name, right] of Object.entries(l.edges)) t.ok(right <= l.screen, `${path}: "${name}" ends at ${Math.round(right)} px of ${l.screen}`)
      t.equal(l.scrolls, 0, `${path}: no table scrolls in its box`)
      t.ok(l.pageWidth <= l.screen, `${path}: the page is no wider than the screen`)
      t.ok(l.mainWidth > Math.min(width, 1200), `${path}: the content is ${Math.round(l.mainWidth)} px wide, not capped at 1,152`)
      t.same(await accessibilityProblems(page), [], `${path}: no serious or critical accessibility problem`)
      await screenshot(page, `desktop-${width}-${path.slice(1).split('?')[0]}`, { fullPage: false })
    }
    await page.goto(new URL(`/programmes?target_date=${TOMORROW}`, url).href)
    const flagged = page.locator('table.programmes tbody tr', { has: page.locator('.flag-infeasible') })
    t.equal(await flagged.count(), 1, 'the site over its power is flagged')
    const badge = (await flagged.locator('.flag-infeasible').boundingBox())!
    t.ok(badge.x + badge.width <= width, 'and its flag is on the screen')
    t.equal(await page.locator('table.programmes .badge-checked').count(), 2, 'the two others: checked against the published needs')
    t.equal(await page.locator('table.programmes .badge-mismatch').count(), 3, 'a sender naming another than acme is flagged')
    const ids = await page.locator('table.programmes a.instruction').evaluateAll(links => links.map(a => [a.textContent, a.getAttribute('title'), a.getClientRects().length]))
    t.same(ids[0], ['rév. 21/11/2026 13:00:00', 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000.123Z', 1], 'an id on one line, the full id in its title and on its page')
  })
}
