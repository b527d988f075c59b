import t, { type Test } from 'tap'
import type { Page } from 'playwright-core'
import { addUser } from '../../src/auth/accounts.ts'
import { OUTBOUND_PATH } from '../../src/contract/paths.ts'
import { accessibilityProblems, launchBrowser, login, newPage, pagePerUser, screenshot, signIn } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'

// One epx and one browser for the file; the clock stands on 2026-11-21, so "tomorrow" is the 22nd.
// One BSP per site: acme, beta and the company the admin test adds each have their own sites.
const epx = await startEpx(t, { sites: 4, config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
const sites = epx.ref.sites.map(s => s.site_id)
const { cert: acmeCert } = await epx.addCompany('acme', { perimeter: [sites[0]!, sites[1]!] })
await epx.addCompany('beta', { perimeter: [sites[2]!] })
const admin = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
const member = await addUser(epx.store, { username: 'alice', admin: false, companyId: 'acme' }, Date.now())
const site = epx.ref.sites[0]!.site_id
const TOMORROW = '2026-11-22'
await epx.handle.publish({ targetDate: TOMORROW })

// alice's page, shared by her two tests (login.test.ts tests logging in).
const signedIn = pagePerUser(t, browser, url)

async function noAccessibilityProblem (t: Test, page: Page, name: string): Promise<void> {
  t.same(await accessibilityProblems(page), [], `${name}: no serious or critical accessibility problem`)
  await screenshot(page, name)
}

t.test('a token made in the console works on the API over mTLS (200), then is revoked in the console (401 on the next request)', async t => {
  const page = await signedIn('alice', member.password)
  await page.goto(new URL('/tokens', url).href)
  await noAccessibilityProblem(t, page, 'tokens')
  await page.getByLabel('Lire les Besoins agrégés').check()
  await page.getByLabel('Expiration').selectOption('30d')
  await page.getByRole('button', { name: 'Créer le jeton' }).click()
  await page.waitForLoadState()
  const secret = await page.getByLabel('Secret').inputValue()
  t.match(secret, /^epx_[A-Za-z0-9_-]{43}$/, 'the secret is shown')
  const curl = await page.locator('#curl-command').textContent()
  t.match(curl, `Authorization: Bearer ${secret}`)
  t.match(curl, `${epx.url.origin}${OUTBOUND_PATH}?site_id=`, 'the curl line names the real API')
  await t.resolveMatch(page.getByRole('button', { name: 'Copier le secret' }).isVisible(), true, 'the copy button is shown (local JS under the CSP)')
  await noAccessibilityProblem(t, page, 'token-created')

  const query = { site_id: site, target_date: TOMORROW }
  const ok = await epx.request({ path: OUTBOUND_PATH, query, cert: acmeCert, token: secret })
  t.equal(ok.status, 200, 'the new token reads Besoins_Agreges over mTLS')

  await page.goto(new URL('/tokens', url).href)
  const row = page.locator('tr', { has: page.locator('td', { hasText: 'actif' }) }).first()
  const id = await row.locator('code').first().textContent()
  t.match(id, /^tok_[0-9a-f]{16}$/)
  t.notMatch(await page.content(), secret, 'the list never shows the secret again')
  await row.getByRole('link', { name: 'Révoquer' }).click()
  await page.waitForLoadState()
  await noAccessibilityProblem(t, page, 'token-revoke-confirm')
  t.equal(epx.tokens.get(id!)?.revokedAt, undefined, 'asking is not revoking: a confirmation comes first')
  await page.getByRole('button', { name: 'Révoquer définitivement' }).click()
  await page.waitForURL(/\/tokens\?revoked=/)
  await t.resolveMatch(page.getByRole('status').first().textContent(), `Le jeton ${id} est révoqué`)
  const after = await epx.request({ path: OUTBOUND_PATH, query, cert: acmeCert, token: secret })
  t.equal(after.status, 401, 'the next API request is refused')
  await screenshot(page, 'token-revoked')
})

t.test("a member cannot reach another company's token nor an admin page by editing the URL; nothing leaks", async t => {
  const beta = await epx.addToken('beta', ['outbound:besoins-agreges'])
  const page = await signedIn('alice', member.password)
  for (const path of [`/tokens/${beta.id}/revoke`, '/tokens/tok_0000000000000000/revoke']) {
    const r = await page.goto(new URL(path, url).href)
    t.equal(r?.status(), 404, `${path}: 404, the same for another company's token and for none`)
    t.notMatch(await page.content(), 'beta', 'the other company is not named')
  }
  await page.goto(new URL('/tokens', url).href)
  const csrf = await page.locator('input[name="_csrf"]').first().inputValue()
  const post = await page.request.post(new URL(`/tokens/${beta.id}/revoke`, url).href, {
    form: { _csrf: csrf }, headers: { origin: url.origin }, maxRedirects: 0,
  })
  t.equal(post.status(), 404, "a revoke of beta's token, with alice's own valid CSRF token, is a 404")
  t.equal(epx.tokens.get(beta.id)?.revokedAt, undefined, "beta's token is untouched")

  await page.goto(new URL('/tokens?company=beta', url).href)
  t.notMatch(await page.content(), beta.id, '?company=beta still lists only acme')
  for (const path of ['/admin/companies', '/admin/companies/beta', '/admin/users', '/admin/publish', '/admin/audit', '/admin/deliveries']) {
    const r = await page.goto(new URL(path, url).href)
    t.equal(r?.status(), 403, `${path}: 403`)
    t.notMatch(await page.content(), /beta|root/, `${path}: no other company or user named`)
  }
  await screenshot(page, 'member-admin-refused')
  t.equal(await page.getByRole('link', { name: 'Entreprises' }).count(), 0, 'no admin entry in the navigation')
})

t.test('admin pages: a company named <script> is shown as text; users and "publier maintenant" work; every page passes axe', async t => {
  const page = await newPage(t, browser)
  let dialogs = 0
  page.on('dialog', d => { dialogs++; d.dismiss().catch(() => {}) })
  await signIn(page, url, 'root', admin.password)
  await page.goto(new URL('/admin/companies', url).href)
  await noAccessibilityProblem(t, page, 'admin-companies')
  const evil = '<script>alert(1)</script><img src=x onerror=alert(2)>'
  await page.getByLabel('Identifiant', { exact: true }).fill('evil-co')
  await page.getByLabel('Nom').fill(evil)
  await page.getByLabel('Sujet du certificat').fill('CN=evil-co,O=Evil Co')
  // One BSP per site: acme's site is refused, naming acme; a free one is taken.
  await page.getByLabel('Périmètre').fill(site)
  await page.getByRole('button', { name: 'Ajouter' }).click()
  await page.waitForLoadState()
  await t.resolveMatch(page.getByRole('alert').textContent(), /partagerait des sites avec celui de l'entreprise active acme \(un seul BSP par site/)
  t.equal(epx.companies.get('evil-co'), undefined, 'not added')
  const spare = sites[3]!
  await page.getByLabel('Périmètre').fill(spare)
  await page.getByRole('button', { name: 'Ajouter' }).click()
  await page.waitForURL(/\/admin\/companies\/evil-co$/)
  t.match(epx.companies.get('evil-co'), { name: evil, perimeter: [spare], certSubject: 'CN=evil-co,O=Evil Co' })
  await page.goto(new URL('/admin/companies', url).href)
  await t.resolveMatch(page.getByRole('cell', { name: evil, exact: true }).count(), 1, 'the name is shown as text')
  t.equal(await page.locator('main script, main img').count(), 0, 'no element came from the name')
  t.equal(dialogs, 0, 'nothing ran')

  await page.goto(new URL('/admin/companies/evil-co', url).href)
  await noAccessibilityProblem(t, page, 'admin-company')
  await page.getByLabel('Sites').fill('PRM123')
  await page.getByRole('button', { name: 'Enregistrer le périmètre' }).click()
  await page.waitForLoadState()
  await t.resolveMatch(page.getByRole('alert').textContent(), /Périmètre invalide : « PRM123 » n'est pas un identifiant de site \(PRM suivi de 14 chiffres\)\./)
  t.same(epx.companies.get('evil-co')?.perimeter, [spare], 'a bad perimeter changes nothing')
  await page.getByLabel('Sites').fill('all')
  await page.getByRole('button', { name: 'Enregistrer le périmètre' }).click()
  await page.waitForLoadState()
  await t.resolveMatch(page.getByRole('alert').textContent(), /Périmètre refusé : le périmètre partagerait des sites avec celui de l'entreprise active acme/)
  t.same(epx.companies.get('evil-co')?.perimeter, [spare], '"all" overlaps every other active company: refused')
  await page.getByLabel('Sujet lié').fill('CN=evil-co,O=Evil')
  await page.getByRole('button', { name: 'Enregistrer le sujet' }).click()
  await page.waitForLoadState()
  t.equal(epx.companies.get('evil-co')?.certSubject, 'CN=evil-co,O=Evil')
  await page.getByRole('button', { name: "Suspendre l'entreprise" }).click()
  await page.waitForLoadState()
  t.equal(epx.companies.get('evil-co')?.status, 'active', 'suspending asks first')
  await noAccessibilityProblem(t, page, 'admin-company-suspend-confirm')
  await page.getByRole('button', { name: 'Confirmer la suspension' }).click()
  await page.waitForLoadState()
  t.equal(epx.companies.get('evil-co')?.status, 'suspended')
  await page.getByRole('button', { name: "Réactiver l'entreprise" }).click()
  await page.waitForLoadState()
  t.equal(epx.companies.get('evil-co')?.status, 'active')

  await page.goto(new URL('/admin/users', url).href)
  await noAccessibilityProblem(t, page, 'admin-users')
  await page.getByLabel('Identifiant').fill('erin')
  await page.getByLabel('Rôle').selectOption('company:evil-co')
  await page.getByRole('button', { name: 'Ajouter' }).click()
  await page.waitForLoadState()
  const password = await page.getByLabel('Mot de passe').inputValue()
  t.match(epx.store.db('users').get('erin'), { companyId: 'evil-co', admin: false })
  const erin = await newPage(t, browser)
  t.equal(await login(erin, url, 'erin', password), 303, 'the password shown logs the new user in')
  await t.resolveMatch(erin.getByText('erin · entreprise evil-co').count(), 1)

  await page.goto(new URL('/tokens?company=acme', url).href)
  await noAccessibilityProblem(t, page, 'admin-tokens')

  await page.goto(new URL('/admin/publish', url).href)
  await noAccessibilityProblem(t, page, 'admin-publish')
  t.equal(await page.getByLabel('Jour (Europe/Paris)').inputValue(), TOMORROW, 'tomorrow by default')
  const before = (await epx.request({ path: OUTBOUND_PATH, query: { site_id: site, target_date: TOMORROW }, cert: acmeCert, token: (await epx.addToken('acme', ['outbound:besoins-agreges'])).secret })).headers.etag
  await page.getByRole('button', { name: 'Publier maintenant' }).click()
  await page.waitForLoadState()
  await t.resolveMatch(page.getByRole('status').first().textContent(), '4 sites publiés pour le 22/11/2026 ; aucun en échec.')
  const etags = await page.locator('table td:last-child code').allTextContents()
  t.equal(etags.length, 4)
  t.not(etags[0], before, 'a new revision was published')
  await noAccessibilityProblem(t, page, 'admin-publish-report')
})
