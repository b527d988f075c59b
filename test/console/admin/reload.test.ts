import t from 'tap'
import type { Page } from 'playwright-core'
import { addUser } from '../../../src/auth/accounts.ts'
import { openRevisions } from '../../../src/store/revisions.ts'
import { openUsers } from '../../../src/store/users.ts'
import { launchBrowser, login, newPage, pagePerUser } from '../../helpers/browser.ts'
import { startEpx } from '../../helpers/epx.ts'

// Post/redirect/get: every admin form answers with a redirect, so reloading the page it
// lands on repeats nothing. One epx and one browser; the clock stands on 2026-11-21.
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
const site = epx.ref.sites[0]!.site_id
await epx.addCompany('acme', { perimeter: [site] })
const admin = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
await addUser(epx.store, { username: 'alice', admin: false, companyId: 'acme' }, Date.now())
const users = openUsers(epx.store)

// One page for the admin's tests, signed in with the login POST alone (the form's own test is
// test/console/login.test.ts); each test goes to its page first.
const signedIn = pagePerUser(t, browser, url)
const adminPage = () => signedIn('root', admin.password)

/** Clicks a form's button; resolves to the status of the POST (the page then shows where it was sent). */
async function submit (page: Page, button: string): Promise<number> {
  const [r] = await Promise.all([page.waitForResponse(r => r.request().method() === 'POST'), page.getByRole('button', { name: button }).click()])
  await page.waitForLoadState()
  return r.status()
}

t.test('"Ajouter" an account: its password shown once; a reload makes no second account and shows no password', async t => {
  const page = await adminPage()
  await page.goto(new URL('/admin/users', url).href)
  await page.getByLabel('Identifiant').fill('erin')
  await page.getByLabel('Rôle').selectOption('company:acme')
  t.equal(await submit(page, 'Ajouter'), 303)
  t.match(page.url(), /\/admin\/users$/)
  const password = await page.getByLabel('Mot de passe', { exact: true }).inputValue()
  t.match(password, /^[A-Za-z0-9_-]{24}$/)
  t.equal(users.get('erin')?.mustChangePassword, true, 'to be changed at the first login')
  const made = users.get('erin')!.createdAt
  await page.reload()
  await t.resolveMatch(page.locator('#new-password').count(), 0, 'the reload shows no password')
  await t.resolveMatch(page.getByRole('alert').count(), 0, 'nor any refusal (no second POST)')
  t.equal(users.get('erin')!.createdAt, made)
})

t.test('"Nouveau mot de passe": a reload makes no second password', async t => {
  const page = await adminPage()
  await page.goto(new URL('/admin/users/alice/reset-password', url).href)
  t.equal(await submit(page, 'Générer un nouveau mot de passe'), 303)
  const password = await page.getByLabel('Mot de passe', { exact: true }).inputValue()
  const hash = users.get('alice')!.passwordHash
  await page.reload()
  await t.resolveMatch(page.locator('#new-password').count(), 0, 'the reload shows no password')
  t.equal(users.get('alice')!.passwordHash, hash, 'the password shown is still the one')
  const other = await newPage(t, browser)
  t.equal(await login(other, url, 'alice', password), 303, 'and it logs in')
})

t.test('suspending and resuming a company, its perimeter: a reload changes nothing', async t => {
  const page = await adminPage()
  await epx.addCompany('beta', { perimeter: [epx.ref.sites[1]!.site_id] })
  await page.goto(new URL('/admin/companies/beta', url).href)
  await page.getByRole('button', { name: "Suspendre l'entreprise" }).click()
  await page.waitForLoadState()
  t.equal(await submit(page, 'Confirmer la suspension'), 303)
  await t.resolveMatch(page.getByRole('status').textContent(), 'Entreprise suspendue.')
  t.equal(await submit(page, "Réactiver l'entreprise"), 303)
  await t.resolveMatch(page.getByRole('status').textContent(), 'Entreprise réactivée.')
  const history = () => epx.companies.get('beta')!.status
  await page.reload()
  t.equal(history(), 'active', 'the reload did not suspend it again')
  await t.resolveMatch(page.getByRole('status').count(), 0, 'and says nothing again')
  t.match(page.url(), /\/admin\/companies\/beta$/)

  await page.getByLabel('Sites').fill(epx.ref.sites[2]!.site_id)
  t.equal(await submit(page, 'Enregistrer le périmètre'), 303)
  await t.resolveMatch(page.getByRole('status').textContent(), 'Périmètre enregistré.')
  await page.reload()
  await t.resolveMatch(page.getByRole('status').count(), 0)
})

t.test('"Publier maintenant": the report shown once; a reload publishes nothing again', async t => {
  const page = await adminPage()
  const revisions = openRevisions(epx.store, { retentionDays: 90 })
  await page.goto(new URL('/admin/publish', url).href)
  t.equal(await submit(page, 'Publier maintenant'), 303)
  await t.resolveMatch(page.getByRole('status').first().textContent(), /3 sites publiés pour le 22\/11\/2026 ; aucun en échec\./)
  const published = revisions.list(site, '2026-11-22').length
  t.equal(published, 1)
  await page.reload()
  t.equal(revisions.list(site, '2026-11-22').length, published, 'no second revision')
  await t.resolveMatch(page.getByRole('status').count(), 0, 'the page shows its form only')
  t.equal(await page.getByLabel('Jour (Europe/Paris)').inputValue(), '2026-11-22')
})
