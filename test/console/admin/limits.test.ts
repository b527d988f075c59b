import t from 'tap'
import type { Page } from 'playwright-core'
import { addUser } from '../../../src/auth/accounts.ts'
import { openAudit } from '../../../src/store/audit.ts'
import { launchBrowser, pagePerUser } from '../../helpers/browser.ts'
import { startEpx } from '../../helpers/epx.ts'
import { eventually } from '../../helpers/eventually.ts'
import { INBOUND_PATH, programme } from '../../helpers/programme.ts'

// DECISIONS.md "Rate limits and quotas", in the console: a company's page shows its
// request budgets and storage quota (its own or the configuration's) and today's use of
// the quota; an admin changes them with a form (CSRF, post/redirect/get, audited).
// One epx and one browser; the clock stands on 2026-11-21 at 13:30 in Paris.
const epx = await startEpx(t, { config: { console: { enabled: true }, inbound: { maxBytesPerCompanyPerDay: 1_000_000 } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
const { cert } = await epx.addCompany('acme', { perimeter: [epx.ref.sites[0]!.site_id] })
const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
const root = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())

// One page for the admin's tests, signed in with the login POST alone (the form's own test is
// test/console/login.test.ts); each test starts on the company's page.
const signedIn = pagePerUser(t, browser, url)
async function adminPage (): Promise<Page> {
  const page = await signedIn('root', root.password)
  await page.goto(new URL('/admin/companies/acme', url).href)
  return page
}

/** Clicks the limits' button; resolves to the status of the POST (the page then shows where it was sent). */
async function save (page: Page): Promise<number> {
  const [r] = await Promise.all([page.waitForResponse(r => r.request().method() === 'POST'), page.getByRole('button', { name: 'Enregistrer les limites' }).click()])
  await page.waitForLoadState()
  return r.status()
}

const row = (page: Page, name: string) => page.getByRole('row', { name: new RegExp(`^${name}`) }).textContent()

t.test('the page says the budgets and the quota that apply, and today\'s use', async t => {
  const body = programme({ targetDate: '2026-11-22', sites: [epx.ref.sites[0]!.site_id], slots: 4 })
  const size = Buffer.byteLength(JSON.stringify(body))
  t.equal((await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body })).status, 202)
  const page = await adminPage()
  await t.resolveMatch(row(page, 'Requêtes GET et HEAD'), /1000000 par seconde, rafales de 1000000 \(configuration\)/)
  await t.resolveMatch(row(page, 'Quota de stockage'), /1000000 bytes \(976\.6 KiB\) par jour \(configuration\)/)
  await t.resolveMatch(page.locator('#quota-today').textContent(), new RegExp(`^${size} bytes .*1 programme accepté le 2026-11-21`))
})

t.test('an admin sets a company\'s own limits: applied, audited, and a reload repeats nothing', async t => {
  const page = await adminPage()
  await page.getByLabel('GET et HEAD : requêtes par seconde').fill('2')
  await page.getByLabel('GET et HEAD : rafale').fill('5')
  await page.getByLabel('Quota : octets par jour').fill('256Mio')
  t.equal(await save(page), 303)
  await t.resolveMatch(page.getByRole('status').textContent(), 'Limites enregistrées.')
  t.same(epx.companies.get('acme')!.rateLimit, { get: { perSecond: 2, burst: 5 } }, 'the POST budget left to the configuration')
  t.equal(epx.companies.get('acme')!.quotaBytesPerDay, 268435456)
  await t.resolveMatch(row(page, 'Requêtes GET et HEAD'), /^Requêtes GET et HEAD2 par seconde, rafales de 5$/, 'its own: no "(configuration)"')
  await t.resolveMatch(row(page, 'Requêtes POST'), /\(configuration\)/)
  await t.resolveMatch(page.getByLabel('Quota : octets par jour').inputValue(), '268435456')
  const audited = () => openAudit(epx.store).list({ action: 'company.limits' })
  const records = await eventually(audited, l => l.length > 0)
  t.match(records, [{ actor: { kind: 'console', user: 'root' }, subject: 'acme', details: { rateLimit: { get: { perSecond: 2, burst: 5 } }, quotaBytesPerDay: 268435456 } }])
  await page.reload()
  await t.resolveMatch(page.getByRole('status').count(), 0, 'the reload says nothing again')
  t.equal(audited().length, 1, 'and changed nothing again')

  await page.getByLabel('GET et HEAD : requêtes par seconde').fill('')
  await page.getByLabel('GET et HEAD : rafale').fill('')
  await page.getByLabel('Quota : octets par jour').fill('')
  t.equal(await save(page), 303)
  t.notOk(Object.hasOwn(epx.companies.get('acme')!, 'rateLimit') || Object.hasOwn(epx.companies.get('acme')!, 'quotaBytesPerDay'), 'empty fields: the configuration\'s again')
})

t.test('what cannot be a limit is refused, saying what to write; a form without its CSRF token is refused', async t => {
  const page = await adminPage()
  await page.getByLabel('POST : requêtes par seconde').fill('3')
  t.equal(await save(page), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), /POST : indiquez les deux champs/)
  await page.getByLabel('Quota : octets par jour').fill('2 To')
  t.equal(await save(page), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), /Quota : un nombre entier d'octets/)
  t.notOk(Object.hasOwn(epx.companies.get('acme')!, 'quotaBytesPerDay'), 'nothing saved')

  await page.getByLabel('Quota : octets par jour').fill('1000')
  await page.locator('form[action="/admin/companies/acme/limits"] input[name="_csrf"]').evaluate(e => e.remove())
  t.equal(await save(page), 403)
  t.notOk(Object.hasOwn(epx.companies.get('acme')!, 'quotaBytesPerDay'), 'nothing saved')
})
