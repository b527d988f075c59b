import t from 'tap'
import { addUser } from '../../src/auth/accounts.ts'
import { accessibilityProblems, launchBrowser, login, newPage, screenshot, signIn } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'

// "Mot de passe": a user changes its own password, in chromium. One epx and one browser.
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
await epx.addCompany('acme')

t.test('a user changes its own password: the current one is checked, the new one typed twice, its other sessions end', async t => {
  const user = await addUser(epx.store, { username: 'dora', admin: false, companyId: 'acme', password: 'dora first password' }, Date.now())
  const elsewhere = await newPage(t, browser)
  t.equal(await signIn(elsewhere, url, 'dora', user.password), 303, 'a session on another device')
  const page = await newPage(t, browser)
  await login(page, url, 'dora', user.password)
  await page.getByRole('link', { name: 'Mot de passe' }).click()
  await page.waitForLoadState()
  t.same(await accessibilityProblems(page), [], 'the form: no serious or critical accessibility problem')
  await screenshot(page, 'password-change')
  const change = async (current: string, next: string, confirm: string) => {
    await page.getByLabel('Mot de passe actuel').fill(current)
    await page.getByLabel('Nouveau mot de passe', { exact: true }).fill(next)
    await page.getByLabel('Nouveau mot de passe, une seconde fois').fill(confirm)
    const [r] = await Promise.all([page.waitForResponse(r => r.request().method() === 'POST'), page.getByRole('button', { name: 'Changer le mot de passe' }).click()])
    await page.waitForLoadState()
    return r.status()
  }
  t.equal(await change('not my password', 'dora second password', 'dora second password'), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), "Le mot de passe actuel est incorrect : rien n'a été changé.")
  t.equal(await change(user.password, 'dora second password', 'dora second passw0rd'), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), /Les deux saisies du nouveau mot de passe diffèrent/)
  // The browser asks for 12 characters itself; the console refuses a shorter one anyway.
  await page.locator('#new').evaluate(e => e.removeAttribute('minlength'))
  t.equal(await change(user.password, 'short', 'short'), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), /12 caractères au moins/)
  t.equal(await change(user.password, 'dora second password', 'dora second password'), 200)
  await t.resolveMatch(page.getByRole('status').textContent(), /Mot de passe changé/)
  await page.goto(new URL('/tokens', url).href)
  t.match(page.url(), /\/tokens$/, 'this browser stays logged in')
  await elsewhere.goto(new URL('/tokens', url).href)
  t.match(elsewhere.url(), /\/login/, 'the other session has ended')
  const fresh = await newPage(t, browser)
  t.equal(await signIn(fresh, url, 'dora', user.password), 401, 'the old password is refused')
  t.equal(await signIn(fresh, url, 'dora', 'dora second password'), 303, 'the new one logs in')
})
