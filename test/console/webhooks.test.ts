import t from 'tap'
import type { Page } from 'playwright-core'
import { addUser } from '../../src/auth/accounts.ts'
import { openAudit } from '../../src/store/audit.ts'
import { openEvents } from '../../src/store/events.ts'
import { openWebhooks, secretsInForce } from '../../src/store/webhooks.ts'
import { accessibilityProblems, launchBrowser, pagePerUser, screenshot } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'
import { eventually, until } from '../helpers/eventually.ts'
import { siteId } from '../helpers/programme.ts'
import { startReceiver } from '../helpers/webhook-receiver.ts'

// DECISIONS.md "Events for BSPs" and "Web console": a company's webhooks in the console.
// Added through a form that runs `epx webhook add`'s echo check, the secret shown once;
// listed with their state; each endpoint's page with its delivery log, the rotation of its
// secret, redelivery and removal; audited as the CLI's; another company's are never shown.
// One epx, one browser; the receivers are real HTTPS servers on loopback under the test
// PKI (webhooks.caFile), which webhooks.allowPrivateNetworks lets epx call.
const epx = await startEpx(t, { config: { console: { enabled: true }, webhooks: { allowPrivateNetworks: true, caFile: 'pki/ca.crt' } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
await epx.addCompany('acme', { perimeter: [siteId(1), siteId(2)] })
await epx.addCompany('beta', { perimeter: [siteId(3)] })
const alice = await addUser(epx.store, { username: 'alice', admin: false, companyId: 'acme' }, Date.now())
const bob = await addUser(epx.store, { username: 'bob', admin: false, companyId: 'beta' }, Date.now())
const hooks = openWebhooks(epx.store)
const audit = openAudit(epx.store)

/** The secrets the receiver verifies with: the ones the pages showed. */
const shown: string[] = []
const receiver = await startReceiver(t, { secret: () => shown, nowSeconds: () => epx.clock.now().getTime() / 1000 })

const signedIn = pagePerUser(t, browser, url)
/** The user's page (one for the file: login.test.ts tests logging in), at `path`. */
async function member (username: string, password: string, path: string): Promise<Page> {
  const page = await signedIn(username, password)
  await page.goto(new URL(path, url).href)
  return page
}

/** Clicks a form's button; resolves to the POST's status (the page then shows where it was sent). */
async function submit (page: Page, button: string): Promise<number> {
  const [r] = await Promise.all([page.waitForResponse(r => r.request().method() === 'POST'), page.getByRole('button', { name: button, exact: true }).click()])
  await page.waitForLoadState()
  return r.status()
}

let id = ''

t.test('a member adds an endpoint through the form: checked, its secret shown once, then listed; audited without the secret', async t => {
  const page = await member('alice', alice.password, '/webhooks')
  await page.getByLabel('Adresse').fill(receiver.url)
  await page.getByRole('checkbox', { name: /instruction\.statut/ }).uncheck()
  await page.getByRole('checkbox', { name: /realise\.modifie/ }).uncheck()
  await page.getByRole('checkbox', { name: /perimetre\.modifie/ }).uncheck()
  t.equal(await submit(page, 'Ajouter le webhook'), 303)
  const secret = await page.locator('#webhook-secret').inputValue()
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  await t.resolveMatch(page.getByRole('status').first().textContent(), /ajouté pour acme.*il ne sera plus jamais affiché/s)
  t.same(await accessibilityProblems(page), [], 'the secret\'s page: no serious or critical accessibility problem')
  await screenshot(page, 'webhook-created')
  shown.push(secret)

  const [e] = hooks.list('acme')
  id = e!.id
  t.match(e, { url: receiver.url, types: ['besoins_agreges.publie'] })
  t.same(secretsInForce(e!, epx.clock.now().getTime()), [secret], 'the secret shown is the one that signs')
  t.equal(hooks.stateOf(id).cursor, openEvents(epx.store).lastSeq('acme'), 'from the company\'s next event on')

  await page.reload()
  t.equal(await page.locator('#webhook-secret').count(), 0, 'a reload shows the endpoint without its secret')
  t.notMatch(await page.content(), secret)

  await page.goto(new URL('/webhooks', url).href)
  const row = page.getByRole('row', { name: new RegExp(receiver.url.replace(/[.]/g, '\\.')) })
  await t.resolveMatch(row.textContent(), /besoins_agreges\.publie.*actif.*aucune/s, 'listed: its types, active, nothing delivered yet')
  t.notMatch(await page.content(), secret, 'the list never shows a secret')
  t.same(await accessibilityProblems(page), [], 'the list: no serious or critical accessibility problem')
  await screenshot(page, 'webhooks')

  const records = audit.list({ action: 'webhook.added' })
  t.match(records, [{ actor: { kind: 'console', user: 'alice' }, subject: id, details: { companyId: 'acme', url: receiver.url, types: ['besoins_agreges.publie'] } }])
  t.notMatch(JSON.stringify(records), 'whsec_', 'no secret in the audit')
})

t.test('an endpoint that fails the echo check, or is not https, is refused saying what to fix; nothing is stored', async t => {
  const wrong = await startReceiver(t, { secret: () => [], echo: () => ({ status: 200, body: 'bonjour' }) })
  const page = await member('alice', alice.password, '/webhooks')
  await page.getByLabel('Adresse').fill(wrong.url)
  t.equal(await submit(page, 'Ajouter le webhook'), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(),
    /n'a pas passé la vérification : elle a répondu 200 avec « bonjour » au lieu de la valeur « .+ »\. Il doit répondre à GET <url>\?echo=<valeur> par 200/)
  await t.resolveMatch(page.getByLabel('Adresse').inputValue(), wrong.url, 'the address kept to be fixed')

  await page.getByLabel('Adresse').fill(receiver.url.replace('https:', 'http:'))
  t.equal(await submit(page, 'Ajouter le webhook'), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), /Adresse refusée : le schéma « http » n'est pas accepté : les webhooks ne partent que vers des adresses https:\/\//)
  t.equal(hooks.list('acme').length, 1, 'nothing added')
  t.equal(audit.list({ action: 'webhook.added' }).length, 1, 'nor audited')
})

t.test('the endpoint\'s page shows its delivery log: the event, its status, its latency', async t => {
  await epx.handle.publish({ targetDate: '2026-11-22' })
  await until('the publication\'s events delivered', () => receiver.ids().length === 2 && hooks.log(id).length === 2)
  t.ok(receiver.received.every(r => r.verdict.ok), 'signed with the secret the page showed')
  const page = await member('alice', alice.password, `/webhooks/${id}`)
  const log = page.getByRole('table', { name: /dernières tentatives/ })
  const first = receiver.ids()[0]!
  await t.resolveMatch(log.getByRole('row', { name: new RegExp(first) }).textContent(), new RegExp(`${first}\\s*204\\s*\\d[\\d\\s]* ms\\s*–`),
    'the latency in French digits (a thousands separator past 999 ms, as under load)')
  await t.resolveMatch(page.locator('dl.facts').textContent(), new RegExp(`Curseur${receiver.ids()[1]}`), 'the cursor after the last one delivered')
  t.same(await accessibilityProblems(page), [], 'no serious or critical accessibility problem')
  await screenshot(page, 'webhook-log')

  await page.setViewportSize({ width: 390, height: 844 })
  for (const path of [`/webhooks/${id}`, '/webhooks']) {
    await page.goto(new URL(path, url).href)
    const [scroll, screen] = await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]') as [number, number]
    t.ok(scroll <= screen, `${path} at a phone's width: ${scroll} px wide on a ${screen} px screen`)
  }
})

t.test('rotate: a new secret shown once, the old one signing beside it for the overlap; redeliver from an event; audited', async t => {
  const page = await member('alice', alice.password, `/webhooks/${id}`)
  await page.getByLabel('L\'ancien secret signe encore pendant').selectOption('24')
  t.equal(await submit(page, 'Changer le secret'), 303)
  const secret = await page.locator('#webhook-secret').inputValue()
  t.match(secret, /^whsec_/)
  t.not(secret, shown[0])
  await t.resolveMatch(page.getByRole('status').first().textContent(), /Nouveau secret.*l'ancien signe encore jusqu'au 22\/11\/2026/s)
  t.same(secretsInForce(hooks.get(id)!, epx.clock.now().getTime()), [secret, shown[0]], 'both sign during the overlap')
  t.same(secretsInForce(hooks.get(id)!, epx.clock.now().getTime() + 25 * 3_600_000), [secret], 'the new one alone after it')
  t.match(audit.list({ action: 'webhook.rotated' }), [{ actor: { kind: 'console', user: 'alice' }, subject: id, details: { companyId: 'acme', overlapHours: 24 } }])
  shown.unshift(secret)

  // Retries ran out (as the deliverer settles it, under a lease of its own a minute ahead of the deliverer's).
  const late = epx.clock.now().getTime() + 120_000
  await epx.store.writeDurable(() => {
    hooks.claimSync(id, 'test', late, late + 1000)
    hooks.settleSync(id, 'test', late, { fromCursor: hooks.stateOf(id).cursor, failingSinceMs: late, leaseUntilMs: late })
  })
  await page.reload()
  await t.resolveMatch(page.locator('dl.facts').textContent(), /Étaten échec depuis 21\/11\/2026 13:32/)
  await page.goto(new URL('/webhooks', url).href)
  await t.resolveMatch(page.getByRole('row', { name: new RegExp(id) }).textContent(), /en échec depuis 21\/11\/2026 13:32/, 'the list says so too')
  await page.goto(new URL(`/webhooks/${id}`, url).href)

  const from = receiver.ids()[0]!
  await page.getByLabel('À partir de l\'événement').fill(from)
  t.equal(await submit(page, 'Renvoyer'), 303)
  await t.resolveMatch(page.getByRole('status').first().textContent(), `renvoyés à partir de ${from}`)
  t.match(audit.list({ action: 'webhook.redelivered' }), [{ actor: { kind: 'console', user: 'alice' }, subject: id, details: { companyId: 'acme', from } }])
  t.ok(hooks.stateOf(id).cursor < Number(from), 'the cursor moved back before it')
  t.equal(hooks.get(id)!.failingSince, undefined, 'no longer failing')
  await t.resolveMatch(page.locator('dl.facts').textContent(), /Étatactif/)

  await page.getByLabel('À partir de l\'événement').fill('999999999')
  t.equal(await submit(page, 'Renvoyer'), 400)
  await t.resolveMatch(page.getByRole('alert').textContent(), /acme n'a pas d'événement 999999999 : son dernier est \d{15}\./)
})

t.test('a user of another company neither sees nor changes them: 404 as for a missing one', async t => {
  const page = await member('bob', bob.password, '/webhooks')
  t.notMatch(await page.content(), receiver.url)
  await t.resolveMatch(page.getByText('Aucun webhook pour l\'instant.').count(), 1)
  const csrf = await page.locator('input[name="_csrf"]').first().inputValue()
  t.equal((await page.goto(new URL(`/webhooks/${id}`, url).href))?.status(), 404)
  t.notMatch(await page.content(), receiver.url)
  t.equal((await page.goto(new URL(`/webhooks/${id}/remove`, url).href))?.status(), 404)
  for (const action of ['remove', 'rotate', 'redeliver']) {
    const r = await page.request.post(new URL(`/webhooks/${id}/${action}`, url).href, { form: { _csrf: csrf, overlap: '0' }, headers: { origin: url.origin }, maxRedirects: 0 })
    t.equal(r.status(), 404, `${action}: 404`)
  }
  t.equal(secretsInForce(hooks.get(id)!, epx.clock.now().getTime()).length, 2, 'nothing changed')
  const posted = await page.request.post(new URL('/webhooks', url).href, { form: { _csrf: csrf, company: 'acme', url: receiver.url, type: 'realise.modifie' }, headers: { origin: url.origin }, maxRedirects: 0 })
  t.equal(posted.status(), 303, 'a member adds to its own company only, whatever the form says')
  t.equal(hooks.list('acme').length, 1)
  t.equal(hooks.list('beta').length, 1)
})

t.test('an admin sees every company\'s, and how many a company has from its page', async t => {
  const root = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
  const page = await member('root', root.password, '/admin/companies/acme')
  await t.resolveMatch(page.getByRole('row', { name: /^Webhooks/ }).textContent(), /^Webhooks1 \(voir\)$/)
  await page.getByRole('row', { name: /^Webhooks/ }).getByRole('link', { name: 'voir' }).click()
  await page.waitForLoadState()
  t.equal(new URL(page.url()).search, '?company=acme')
  await t.resolveMatch(page.getByRole('row', { name: new RegExp(id) }).textContent(), /acme/, 'with its company')
  await page.locator('#filter').selectOption('')
  await page.getByRole('button', { name: 'Filtrer' }).click()
  await page.waitForLoadState()
  await t.resolveMatch(page.getByRole('table', { name: /^Webhooks/ }).getByRole('row').count(), 3, 'every company\'s: a header and two rows')
})

t.test('remove after a confirmation (CSRF as every form): nothing more is sent to it; audited', async t => {
  const page = await member('alice', alice.password, `/webhooks/${id}`)
  await page.getByRole('link', { name: 'Retirer ce webhook' }).click()
  await page.waitForLoadState()
  // Retried once on ECONNRESET: the request context may reuse a connection the console closes
  // at its keep-alive timeout as it is sent; refused, the forged POST changes nothing anyway.
  const forged = await page.request.post(new URL(`/webhooks/${id}/remove`, url).href, { form: { _csrf: 'not-the-session-s' }, headers: { origin: url.origin }, maxRedirects: 0, maxRetries: 1 })
  t.equal(forged.status(), 403, 'without the session\'s CSRF token: refused')
  t.ok(hooks.get(id), 'and kept')
  t.equal(await submit(page, 'Retirer le webhook'), 303)
  await t.resolveMatch(page.getByRole('status').textContent(), `Le webhook ${id} est retiré`)
  t.equal(hooks.get(id), undefined)
  t.same(hooks.log(id), [], 'its log gone too')
  t.match(audit.list({ action: 'webhook.removed' }), [{ actor: { kind: 'console', user: 'alice' }, subject: id, details: { companyId: 'acme', url: receiver.url } }])
  const removed = await eventually(() => page.getByRole('row', { name: new RegExp(id) }).count(), n => n === 0)
  t.equal(removed, 0, 'no longer listed')
})
