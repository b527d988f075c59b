import t from 'tap'
import { addUser } from '../../src/auth/accounts.ts'
import { openAudit } from '../../src/store/audit.ts'
import { openSessions, type SessionRecord } from '../../src/store/sessions.ts'
import { accessibilityProblems, launchBrowser, login, newContext, newPage, screenshot, signIn } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'
import { SYSTEM, SYSTEM_ONLY } from '../helpers/long.ts'

// One epx and one browser for the whole file; each test has its own browser context.
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
// Site 1 only (one BSP per site): the admin form below adds a company on site 3.
await epx.addCompany('acme', { perimeter: ['PRM30000000000001'] })
const admin = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
const member = await addUser(epx.store, { username: 'alice', admin: false, companyId: 'acme' }, Date.now())

t.test('a user logs in and out; the session cookie is __Host-, Secure, HttpOnly, SameSite=Strict, and ends at logout', async t => {
  const page = await newPage(t, browser)
  await page.goto(new URL('/tokens', url).href)
  t.match(page.url(), /\/login\?next=%2Ftokens$/, 'a page asked for while logged out leads to the login form')
  t.same(await accessibilityProblems(page), [], 'login page: no serious or critical accessibility problem')
  await screenshot(page, 'login')
  t.equal(await login(page, url, 'alice', member.password), 303)
  t.match(page.url(), /\/tokens$/, 'back to the page asked for')
  const [cookie] = await page.context().cookies()
  t.match(cookie, { name: '__Host-epx_session', path: '/', secure: true, httpOnly: true, sameSite: 'Strict' })
  t.ok(Buffer.from(cookie!.value, 'base64url').length >= 16, 'the session id carries at least 128 bits')
  t.equal(epx.store.db('sessions').get(cookie!.value), undefined, 'the id itself is not a key of the store (only its hash is)')
  await t.resolveMatch(page.getByText('alice · entreprise acme').count(), 1)

  await page.getByRole('button', { name: 'Se déconnecter' }).click()
  await page.waitForURL(/\/login\?logged_out=1$/)
  await t.resolveMatch(page.getByRole('status').textContent(), 'Vous êtes déconnecté.', 'the login page says so')
  // `autofocus` is applied at the page's first rendering update, which may come after its load.
  const focused = await page.waitForFunction('document.activeElement?.id === "username"', null, { timeout: 5000 }).then(() => true, () => false)
  t.ok(focused, 'the login field has the focus')
  t.same(await page.context().cookies(), [], 'the cookie is cleared')
  // The old id no longer opens anything, even if a copy was kept.
  await page.context().addCookies([{ ...cookie!, sameSite: 'Strict' }])
  await page.goto(new URL('/tokens', url).href)
  t.match(page.url(), /\/login/, 'the old session id is dead server-side')
})

t.test('a new session id at each login', async t => {
  const context = await newContext(t, browser)
  await signIn(context, url, 'alice', member.password)
  const first = (await context.cookies())[0]!.value
  // Logging in again over a live session (the form of another tab) replaces its id.
  const again = await context.request.post(new URL('/login', url).href, {
    form: { username: 'alice', password: member.password }, headers: { origin: url.origin }, maxRedirects: 0,
  })
  t.equal(again.status(), 303)
  const second = (await context.cookies())[0]!.value
  t.not(first, second)
})

t.test('a wrong password is refused with 401 and a message, and no cookie', async t => {
  const page = await newPage(t, browser)
  t.equal(await login(page, url, 'root', 'not-the-password'), 401)
  await t.resolveMatch(page.getByRole('alert').textContent(), 'Identifiant ou mot de passe incorrect.')
  t.same(await page.context().cookies(), [])
  t.equal(await login(page, url, 'nobody-here', 'whatever-it-is'), 401, 'an unknown user gets exactly the same answer')
  await screenshot(page, 'login-refused')
})

// The system tier: the throttle's rules are test/console/login-throttle.test.ts's; this is them through the browser.
t.test('repeated failures on an account are throttled before any hashing: 429 with Retry-After, even with the right password', SYSTEM_ONLY, async t => {
  await addUser(epx.store, { username: 'bob', admin: false, companyId: 'acme', password: 'the right password' }, Date.now())
  const page = await newPage(t, browser)
  for (let i = 0; i < 5; i++) t.equal(await signIn(page, url, 'bob', `wrong ${i}`), 401, `failure ${i + 1}`)
  const started = process.cpuUsage()
  const statuses: number[] = []
  const retryAfter: Array<string | null> = []
  for (let i = 0; i < 20; i++) {
    const r = await page.request.post(new URL('/login', url).href, {
      form: { username: 'bob', password: 'wrong again' }, headers: { origin: url.origin }, maxRedirects: 0,
    })
    statuses.push(r.status())
    retryAfter.push(r.headers()['retry-after'] ?? null)
  }
  const cpuMs = (process.cpuUsage(started).user) / 1000
  t.same([...new Set(statuses)], [429], 'every attempt past the limit is 429')
  t.ok(retryAfter.every(v => v !== null && Number(v) > 0 && Number(v) <= 900), 'with Retry-After in seconds')
  // 20 scrypt hashes would cost ~2 s of CPU; throttled attempts cost none (a loose bound, not a timing).
  t.ok(cpuMs < 1500, `20 throttled attempts used ${cpuMs.toFixed(0)} ms of CPU: no hash`)
  t.equal(await login(page, url, 'bob', 'the right password'), 429, 'the right password waits too')
  await t.resolveMatch(page.getByRole('alert').textContent(),
    /Trop de tentatives de connexion sur ce compte : il est verrouillé jusqu'à \d\d:\d\d \(heure de Paris\), dans 15 minutes, depuis toute adresse\./)
  await screenshot(page, 'login-throttled')

  // An admin's reset gives the account its attempts back: the new password works at once.
  const adminPage = await newPage(t, browser)
  await signIn(adminPage, url, 'root', admin.password)
  await adminPage.goto(new URL('/admin/users', url).href)
  await adminPage.locator('tr', { hasText: 'bob' }).getByRole('link', { name: 'Nouveau mot de passe' }).click()
  await adminPage.getByRole('button', { name: 'Générer un nouveau mot de passe' }).click()
  await adminPage.waitForLoadState()
  const fresh = await adminPage.getByLabel('Mot de passe', { exact: true }).inputValue()
  t.equal(await signIn(page, url, 'bob', fresh), 303, 'the new password logs in: the reset cleared the throttle')
})

t.test('next after login: a plain path of this console only, anything else the default page, never an error', async t => {
  const context = await newContext(t, browser)
  const loginWith = (next: string) => context.request.post(new URL('/login', url).href, {
    form: { username: 'alice', password: member.password, next }, headers: { origin: url.origin }, maxRedirects: 0,
  })
  t.equal((await loginWith('/tokens?state=all')).headers().location, '/tokens?state=all', 'a path of the console, with its query')
  for (const next of ['/\t/evil.example', '/\n/evil.example', '//evil.example', '/\\evil.example', '/a\\b', 'https://evil.example/', 'javascript:alert(1)',
    ' /tokens', '/tokens x', '/jetons-é', `/${'a'.repeat(5000)}`, '']) {
    const r = await loginWith(next)
    t.equal(r.status(), 303, JSON.stringify(next.slice(0, 40)))
    t.equal(r.headers().location, '/', `${JSON.stringify(next.slice(0, 40))}: the default page`)
  }
  const loggedOut = await newContext(t, browser)
  const form = await loggedOut.request.get(new URL(`/login?next=${encodeURIComponent('/\t/evil.example')}`, url).href)
  t.equal(form.status(), 200)
  t.match(await form.text(), '<input type="hidden" name="next" value="/">', 'the form carries the default page, not the tab')
  const raw = await loggedOut.request.get(new URL('/login?next=/%C3%A9t%C3%A9', url).href)
  t.equal(raw.status(), 200, 'a non-ASCII next: the form, in French, no error')
})

t.test('an address locked by failures on many accounts says so; an admin sees it, lifts it, and the lift is audited', async t => {
  const adminPage = await newPage(t, browser)
  t.equal(await signIn(adminPage, url, 'root', admin.password), 303)
  const page = await newPage(t, browser)
  // 20 attempts per address (LOGIN_LIMITS): a spray of unknown names, each failing.
  let last = 0
  for (let i = 0; i < 25 && last !== 429; i++) last = await signIn(page, url, `spray-${i}`, 'not a password at all')
  t.equal(last, 429, 'the address is locked')
  t.equal(await login(page, url, 'alice', member.password), 429, 'for every account, even with the right password')
  await t.resolveMatch(page.getByRole('alert').textContent(), /depuis votre adresse \(.+\) : elle est verrouillée jusqu'à \d\d:\d\d \(heure de Paris\), dans \d+ minutes?, pour tous les comptes\./)

  await screenshot(page, 'login-address-locked')

  // Every browser here comes from 127.0.0.1: the admin's session was opened before the lock.
  await adminPage.goto(new URL('/admin/users', url).href)
  const row = adminPage.locator('table.address-locks tr', { hasText: '127.0.0.1' })
  await t.resolveMatch(row.count(), 1, 'the admin sees the locked address')
  if (SYSTEM) t.same(await accessibilityProblems(adminPage), [], 'users page with its locks: no serious or critical accessibility problem')
  await row.getByRole('button', { name: 'Lever le verrou' }).click()
  await adminPage.waitForURL(/\/admin\/users$/)
  await t.resolveMatch(adminPage.getByRole('status').first().textContent(), /Le verrou de l'adresse .*127\.0\.0\.1 est levé\./)
  await t.resolveMatch(adminPage.getByText('Aucune adresse verrouillée.').count(), 1)
  await adminPage.reload()
  await t.resolveMatch(adminPage.getByRole('status').count(), 0, 'a reload lifts nothing and says nothing again')
  t.equal(await signIn(page, url, 'alice', member.password), 303, 'the address logs in again')
  let audited: unknown
  for (let i = 0; i < 100 && !audited; i++) {
    audited = openAudit(epx.store).list({ action: 'user.unlocked' }).find(r => r.actor.kind === 'console' && r.actor.user === 'root')
    if (!audited) await new Promise(resolve => setTimeout(resolve, 20))
  }
  t.ok(audited, 'the lift is in the audit trail, with the admin who did it')
})

// The system tier: test/console/server.test.ts refuses a form without its CSRF token or its origin; this is the browser's forms.
t.test('a form posted without its CSRF token, or from a foreign Origin, is refused and changes nothing', SYSTEM_ONLY, async t => {
  const page = await newPage(t, browser)
  await signIn(page, url, 'root', admin.password)
  await page.goto(new URL('/admin/companies', url).href)
  const before = epx.companies.list().length

  await page.getByLabel('Identifiant', { exact: true }).fill('csrf-victim')
  await page.getByLabel('Nom').fill('Victim')
  await page.locator('form[action="/admin/companies"] input[name="_csrf"]').evaluate(e => e.remove())
  const [noToken] = await Promise.all([
    page.waitForResponse(r => r.request().method() === 'POST'),
    page.getByRole('button', { name: 'Ajouter' }).click(),
  ])
  t.equal(noToken.status(), 403, 'no _csrf: 403')
  await t.resolveMatch(page.getByRole('alert').textContent(), /Le formulaire a expiré ou n'est pas valide/)
  await screenshot(page, 'csrf-refused')

  // The right session cookie and the right CSRF token, but posted from another origin.
  await page.goto(new URL('/admin/companies', url).href)
  const csrf = await page.locator('input[name="_csrf"]').first().inputValue()
  const foreign = await page.request.post(new URL('/admin/companies', url).href, {
    form: { _csrf: csrf, id: 'csrf-victim', name: 'Victim', sites: 'all' }, headers: { origin: 'https://evil.example' }, maxRedirects: 0,
  })
  t.equal(foreign.status(), 403, 'foreign Origin: 403')
  const crossSite = await page.request.post(new URL('/admin/companies', url).href, {
    form: { _csrf: csrf, id: 'csrf-victim', name: 'Victim', sites: 'all' }, headers: { 'sec-fetch-site': 'cross-site', origin: url.origin }, maxRedirects: 0,
  })
  t.equal(crossSite.status(), 403, 'Sec-Fetch-Site: cross-site: 403')
  t.equal(epx.companies.list().length, before, 'nothing was created')
  t.equal(epx.companies.get('csrf-victim'), undefined)

  const same = await page.request.post(new URL('/admin/companies', url).href, {
    form: { _csrf: csrf, id: 'csrf-ok', name: 'Ok', sites: 'PRM30000000000003' }, headers: { origin: url.origin }, maxRedirects: 0,
  })
  t.equal(same.status(), 303, 'the same request from the console itself goes through (the refusals above were the checks)')
})

// The system tier: test/auth/accounts.test.ts and test/console/server.test.ts end the sessions of a disabled user and of a suspended company.
t.test("disabling a user or suspending its company ends that user's session at the next click", SYSTEM_ONLY, async t => {
  await epx.addCompany('beta')
  const carol = await addUser(epx.store, { username: 'carol', admin: false, companyId: 'beta' }, Date.now())
  const dave = await addUser(epx.store, { username: 'dave', admin: false, companyId: 'beta' }, Date.now())
  const adminPage = await newPage(t, browser)
  await signIn(adminPage, url, 'root', admin.password)
  const carolPage = await newPage(t, browser)
  await signIn(carolPage, url, 'carol', carol.password)
  const davePage = await newPage(t, browser)
  await signIn(davePage, url, 'dave', dave.password)

  await adminPage.goto(new URL('/admin/users', url).href)
  await adminPage.locator('tr', { hasText: 'carol' }).getByRole('link', { name: 'Désactiver' }).click()
  await adminPage.waitForLoadState()
  await carolPage.goto(new URL('/tokens', url).href)
  t.match(carolPage.url(), /\/tokens$/, 'asking to disable changes nothing yet')
  await adminPage.getByRole('button', { name: 'Désactiver définitivement' }).click()
  await adminPage.waitForLoadState()
  await t.resolveMatch(adminPage.getByRole('status').first().textContent(), 'carol est désactivé')
  await carolPage.goto(new URL('/tokens', url).href)
  t.match(carolPage.url(), /\/login/, 'carol is logged out')
  t.equal(await signIn(carolPage, url, 'carol', carol.password), 401, 'and cannot log in again')

  await adminPage.goto(new URL('/admin/companies/beta', url).href)
  await adminPage.getByRole('button', { name: "Suspendre l'entreprise" }).click()
  await adminPage.waitForLoadState()
  await adminPage.getByRole('button', { name: 'Confirmer la suspension' }).click()
  await adminPage.waitForLoadState()
  await davePage.goto(new URL('/tokens', url).href)
  t.match(davePage.url(), /\/login/, "dave's session ended with its company's suspension")
  t.equal(await login(davePage, url, 'dave', dave.password), 403, 'a suspended company cannot log in')
  await t.resolveMatch(davePage.getByRole('alert').textContent(), /entreprise est suspendue/)
})

/**
 * Waits for the last-seen time the console wrote after its answer (best effort, not
 * awaited by the page) to land, from whichever thread the console runs on (`api.inWorker`).
 */
async function lastSeenLanded (username: string): Promise<void> {
  const now = epx.clock.now().getTime()
  const sessions = epx.store.db<SessionRecord>('sessions')
  for (let i = 0; i < 500; i++) {
    for (const { value } of sessions.getRange()) if (value?.username === username && value.lastSeenAtMs === now) return
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  throw new Error(`${username}'s last-seen time did not land`)
}

// Last in the file: it moves the clock on.
t.test('idle and absolute expiry end a session', async t => {
  const page = await newPage(t, browser)
  await signIn(page, url, 'alice', member.password)
  epx.clock.advance(31 * 60_000)
  await page.goto(new URL('/tokens', url).href)
  t.match(page.url(), /\/login/, 'idle for 31 minutes (console.sessionIdleMinutes 30): logged out')

  await signIn(page, url, 'alice', member.password)
  const tokensUrl = new URL('/tokens', url).href
  for (let elapsed = 0; elapsed < 11.5 * 60; elapsed += 25) {
    epx.clock.advance(25 * 60_000)
    const r = await page.request.get(tokensUrl, { maxRedirects: 0 })
    if (r.status() !== 200) { t.fail(`still logged in after ${elapsed + 25} minutes of use: ${r.status()}`); return }
    await lastSeenLanded('alice')
  }
  epx.clock.advance(25 * 60_000)
  const r = await page.request.get(tokensUrl, { maxRedirects: 0 })
  t.equal(r.status(), 303, 'used every 25 minutes, it still ends 12 hours after login (console.sessionMaxHours)')

  // A session whose cookie never comes back (a closed browser) is not left in the store for ever.
  await openSessions(epx.store).put('abandoned', { username: 'root', csrfToken: 'x', createdAtMs: 0, lastSeenAtMs: 0 })
  await signIn(page, url, 'alice', member.password)
  t.equal(openSessions(epx.store).get('abandoned'), undefined, 'the next login swept it')
})
