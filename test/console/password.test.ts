import t from 'tap'
import { addUser } from '../../src/auth/accounts.ts'
import { openUsers } from '../../src/store/users.ts'
import { accessibilityProblems, launchBrowser, login, newContext, newPage, screenshot, signIn } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'

// "Mot de passe": a user changes its own password, in chromium. One epx and one browser.
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
await epx.addCompany('acme')

t.test('a user changes its own password: the current one is checked, the new one typed twice, its other sessions end', async t => {
  const user = await addUser(epx.store, { username: 'dora', admin: false, companyId: 'acme', password: 'the first of passwords' }, Date.now())
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
  t.equal(await change('not my password', 'the second of passwords', 'the second of passwords'), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), "Le mot de passe actuel est incorrect : rien n'a été changé.")
  t.equal(await change(user.password, 'the second of passwords', 'the second of passw0rds'), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), /Les deux saisies du nouveau mot de passe diffèrent/)
  // The browser asks for 12 characters itself; the console refuses a shorter one anyway.
  await page.locator('#new').evaluate(e => e.removeAttribute('minlength'))
  t.equal(await change(user.password, 'short', 'short'), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), /Nouveau mot de passe refusé : il compte moins de 12 caractères\. Il faut 12 caractères au moins/)
  const trivial: Array<[string, RegExp]> = [
    ['aaaaaaaaaaaa', /moins de 5 caractères différents/],
    ['123456789012', /une suite de caractères consécutifs/],
    ['dora is my name', /il contient votre identifiant/],
    ['Motdepasse2026!', /un mot de passe courant/],
  ]
  for (const [weak, why] of trivial) {
    t.equal(await change(user.password, weak, weak), 400, weak)
    await t.resolveMatch(page.getByRole('alert').textContent(), why)
  }
  await t.resolveMatch(page.locator('#new-hint').textContent(), /pas une suite \(abcdef, 123456\), pas votre identifiant/, 'the form says the rule')
  t.equal(await change(user.password, 'the second of passwords', 'the second of passwords'), 303, 'post/redirect/get')
  t.match(page.url(), /\/compte\/mot-de-passe$/)
  await t.resolveMatch(page.getByRole('status').textContent(), /Mot de passe changé/)
  const changedAt = openUsers(epx.store).get('dora')!.passwordChangedAt
  await page.reload()
  await t.resolveMatch(page.getByLabel('Mot de passe actuel').count(), 1, 'a reload shows the form again')
  t.equal(openUsers(epx.store).get('dora')!.passwordChangedAt, changedAt, 'and changes nothing')
  await page.goto(new URL('/tokens', url).href)
  t.match(page.url(), /\/tokens$/, 'this browser stays logged in')
  await elsewhere.goto(new URL('/tokens', url).href)
  t.match(elsewhere.url(), /\/login/, 'the other session has ended')
  const fresh = await newContext(t, browser)
  t.equal(await signIn(fresh, url, 'dora', user.password), 401, 'the old password is refused')
  t.equal(await signIn(fresh, url, 'dora', 'the second of passwords'), 303, 'the new one logs in')
})

t.test('a generated password (an account made or reset by an admin) is changed at first login before anything else', async t => {
  const made = await addUser(epx.store, { username: 'emile', admin: false, companyId: 'acme', mustChangePassword: true }, Date.now())
  const page = await newPage(t, browser)
  await page.goto(new URL('/tokens', url).href)
  t.equal(await login(page, url, 'emile', made.password), 303)
  t.match(page.url(), /\/compte\/mot-de-passe$/, 'sent to the change page instead of the page asked for')
  await t.resolveMatch(page.getByRole('alert').first().textContent(), /généré par un administrateur : choisissez le vôtre pour continuer/)
  for (const path of ['/tokens', '/besoins-agreges', '/']) {
    const r = await page.request.get(new URL(path, url).href, { maxRedirects: 0 })
    t.match({ status: r.status(), location: r.headers().location }, { status: 303, location: '/compte/mot-de-passe' }, `${path}: the change page until done`)
  }
  await page.getByLabel('Mot de passe actuel').fill(made.password)
  await page.getByLabel('Nouveau mot de passe', { exact: true }).fill('one I chose myself')
  await page.getByLabel('Nouveau mot de passe, une seconde fois').fill('one I chose myself')
  await page.getByRole('button', { name: 'Changer le mot de passe' }).click()
  await page.waitForLoadState()
  await t.resolveMatch(page.getByRole('status').textContent(), /Mot de passe changé/)
  t.equal(openUsers(epx.store).get('emile')!.mustChangePassword, false)
  await page.goto(new URL('/tokens', url).href)
  t.match(page.url(), /\/tokens$/, 'then every page opens')
})
