import t from 'tap'
import { addUser } from '../../../src/auth/accounts.ts'
import { openDeliveries } from '../../../src/store/deliveries.ts'
import { openRevisions } from '../../../src/store/revisions.ts'
import { accessibilityProblems, launchBrowser, newPage, screenshot, signIn } from '../../helpers/browser.ts'
import { startEpx } from '../../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../../helpers/programme.ts'

// The two admin pages that answer "who did what" (Journal d'audit) and "who fetched what"
// (Récupérations), in a browser against a running epx: reached from the navigation,
// filtered by their forms and links, and clean for axe. One epx and one browser.
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
const TOMORROW = '2026-11-22'
const acme = await epx.addCompany('acme', { perimeter: [siteId(1), siteId(2), siteId(3)] })
const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
const root = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
const post = (body: unknown) => epx.request({ method: 'POST', path: INBOUND_PATH, cert: acme.cert, token: secret, body: body as object })
const accepted = await post(programme({ emittedAt: '2026-11-21T12:00:00Z', emittedBy: 'acme', sites: [siteId(1)] }))
if (accepted.status !== 202) throw new Error(`${accepted.status} ${accepted.text}`)
const refused = await post({ nonsense: true })
if (refused.status !== 400) throw new Error(`${refused.status} ${refused.text}`)
await epx.handle.publish({ targetDate: TOMORROW })
// acme fetched site 1's revision: the receipt as the service writes it (store/deliveries.ts).
const revisions = openRevisions(epx.store, { retentionDays: 90 })
const held = revisions.latest(siteId(1), TOMORROW)!
revisions.close()
const receipts = openDeliveries(epx.store)
receipts.record('acme', siteId(1), TOMORROW, held.emittedAtMs, 200, epx.clock.now().getTime())
await receipts.flush()

const page = await newPage(t, browser)
if (await signIn(page, url, 'root', root.password) !== 303) throw new Error('root could not sign in')

t.test("Journal d'audit: from the navigation, newest first, narrowed by its form; axe clean", async t => {
  await page.goto(new URL('/admin/companies', url).href)
  await page.getByRole('link', { name: 'Journal d\'audit' }).click()
  await page.waitForLoadState()
  t.match(page.url(), /\/admin\/audit$/)
  const rows = page.locator('table.audit tbody tr')
  const actions = await rows.locator('td:nth-child(2) code').allTextContents()
  t.same(actions.filter(a => a.startsWith('programme.')), ['programme.rejected', 'programme.accepted'], 'the refused one came after the accepted one')
  t.ok(actions.includes('publication.run'), 'the publication')
  t.match(await page.locator('table.audit th').first().textContent(), 'Quand (heure de Paris)')
  t.same(await accessibilityProblems(page), [], 'no serious or critical accessibility problem')
  await screenshot(page, 'admin-audit')

  await page.getByLabel('Action').selectOption('programme.rejected')
  await page.getByRole('button', { name: 'Afficher' }).click()
  await page.waitForLoadState()
  t.match(page.url(), /action=programme\.rejected/, 'the filter is the URL')
  t.equal(await rows.count(), 1)
  await t.resolveMatch(rows.first().textContent(), /programme refusé.*entreprise acme.*refused 400/s)

  await page.goto(new URL(`/admin/audit?q=${siteId(1)}`, url).href)
  await t.resolveMatch(rows.locator('td:nth-child(2) code').allTextContents(), ['programme.accepted'], 'the search finds the programme that named the site')
  t.equal((await page.goto(new URL('/admin/audit?since=hier', url).href))?.status(), 400)
  await t.resolveMatch(page.locator('main').textContent(), /Depuis « hier » : une date/)
})

t.test('Récupérations: per company then per site, each state a link to its rows; axe clean', async t => {
  await page.goto(new URL('/admin/users', url).href)
  await page.getByRole('link', { name: 'Récupérations' }).click()
  await page.waitForLoadState()
  t.match(page.url(), /\/admin\/deliveries$/)
  t.same(await page.locator('table.deliveries-summary tbody tr td').allTextContents(), ['acme', '3', '1', '0', '2'], 'three published in its perimeter: one fetched, two never')
  const rows = page.locator('table.deliveries tbody tr')
  t.equal(await rows.count(), 3)
  await t.resolveMatch(rows.first().locator('td').nth(2).textContent(), 'dernière révision')
  t.same(await accessibilityProblems(page), [], 'no serious or critical accessibility problem')
  await screenshot(page, 'admin-deliveries')

  await page.getByRole('link', { name: 'jamais récupérés : 2' }).click()
  await page.waitForLoadState()
  t.match(page.url(), /state=never/)
  t.same(await rows.locator('td:nth-child(2) a').allTextContents(), [siteId(2), siteId(3)])
})
