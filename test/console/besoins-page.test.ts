import t from 'tap'
import { addUser } from '../../src/auth/accounts.ts'
import { OUTBOUND_PATH } from '../../src/contract/paths.ts'
import { accessibilityProblems, launchBrowser, newPage, screenshot, screenshotOf, signIn } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'

// The "Besoins agrégés" page of a real plugin activation, in chromium, against the API it
// mirrors: one epx and one browser for the file. The clock stands on 2026-11-21: tomorrow
// is the 22nd (96 slots); 2027-03-28 has 92 slots and 2026-10-25 has 100.
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
const [own, , foreign] = epx.ref.sites
const { cert } = await epx.addCompany('acme', { perimeter: [own!.site_id, epx.ref.sites[1]!.site_id] })
await epx.addCompany('beta', { perimeter: [foreign!.site_id] })
const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
const alice = await addUser(epx.store, { username: 'alice', admin: false, companyId: 'acme' }, Date.now())
const DAYS = [['2026-11-22', 96], ['2027-03-28', 92], ['2026-10-25', 100]] as const
for (const [day] of DAYS) await epx.handle.publish({ targetDate: day })

const page = await newPage(t, browser)
// What the browser reports as an error (a CSP refusal, a failed asset), but the 404s asked for.
const browserErrors: string[] = []
page.on('console', m => { if (m.type() === 'error' && !/status of 404/.test(m.text())) browserErrors.push(m.text()) })
t.equal(await signIn(page, url, 'alice', alice.password), 303, 'alice is signed in')
const fr = (n: number) => n.toLocaleString('fr-FR')

for (const [day, slots] of DAYS) {
  t.test(`${day} (${slots} slots): the page shows what the API serves, and its download is the API's bytes`, async t => {
    const api = await epx.request({ path: OUTBOUND_PATH, query: { site_id: own!.site_id, target_date: day }, cert, token: secret })
    t.equal(api.status, 200)
    const doc = api.json()
    const site = doc.sites[0]
    t.equal(site.puissance_disponible.length, slots, 'the fixture is the day asked for')

    const r = await page.goto(new URL(`/besoins-agreges?site_id=${own!.site_id}&target_date=${day}`, url).href)
    t.equal(r?.status(), 200)
    const facts = page.locator('dl.facts')
    t.equal(await facts.locator('code').textContent(), api.headers.etag, 'the ETag')
    const emitted = await facts.locator('dd').first().locator('time').getAttribute('datetime')
    t.equal(Date.parse(emitted!), Date.parse(doc.emitted_at), 'the emitted_at, as the UTC instant of the time shown')
    await t.resolveMatch(facts.textContent(), `${slots} quarts d'heure`)
    t.equal(await page.locator('table.slots tbody tr').count(), slots, 'one row per quarter-hour')
    t.equal(await page.locator('svg.chart rect.slot').count(), slots, 'one chart column per quarter-hour')
    for (const k of [0, 37, slots - 1]) {
      const cells = page.locator('table.slots tbody tr').nth(k).locator('td')
      t.equal(await cells.nth(3).textContent(), fr(site.puissance_disponible[k].p_max_kw), `slot ${k + 1}: the available power`)
    }
    const milestones = page.locator('table.milestones tbody tr')
    t.equal(await milestones.count(), Math.max(1, site.jalons_besoin.length))
    for (const [k, j] of site.jalons_besoin.entries()) {
      const cells = milestones.nth(k).locator('td')
      t.equal(Date.parse((await cells.nth(1).locator('time').getAttribute('datetime'))!), Date.parse(j.deadline_utc), `milestone ${k + 1}: its deadline`)
      t.equal(await cells.nth(2).textContent(), fr(j.valeur_kwh), `milestone ${k + 1}: its energy`)
    }

    const href = await page.getByRole('link', { name: /Télécharger le JSON/ }).getAttribute('href')
    const download = await page.request.get(new URL(href!, url).href)
    t.equal(download.status(), 200)
    t.ok(Buffer.compare(await download.body(), Buffer.from(api.text)) === 0, 'the download is byte-identical to the API body')
    t.equal(download.headers().etag, api.headers.etag)
    await screenshot(page, `besoins-${slots}`)
    await screenshot(page, `besoins-${slots}-top`, { fullPage: false })
    await screenshotOf(page.locator('svg.chart'), `besoins-chart-${slots}`)
  })
}

t.test('the page in its real layout, chart included, has no serious or critical accessibility problem', async t => {
  await page.goto(new URL(`/besoins-agreges?site_id=${own!.site_id}&target_date=2026-10-25`, url).href)
  t.same(await accessibilityProblems(page), [])
  await page.goto(new URL('/besoins-agreges', url).href)
  t.equal(await page.getByLabel('Jour').inputValue(), '2026-11-22', 'tomorrow by default')
  t.same(await accessibilityProblems(page), [])
})

t.test("a member editing the URL to another company's site gets a 404 that names nothing of it", async t => {
  for (const path of [
    `/besoins-agreges?site_id=${foreign!.site_id}&target_date=2026-11-22`,
    `/besoins-agreges/download?site_id=${foreign!.site_id}&target_date=2026-11-22`,
    `/programmes?site_id=${foreign!.site_id}&target_date=2026-11-22`,
  ]) {
    const r = await page.goto(new URL(path, url).href)
    t.equal(r?.status(), 404, path)
    const text = await page.content()
    t.notMatch(text, foreign!.site_name, 'the site name is absent')
    t.notMatch(text, 'beta', 'the other company is not named')
  }
  await screenshot(page, 'besoins-foreign-site')
  await page.goto(new URL('/besoins-agreges', url).href)
  t.same(await page.locator('#site_id option').evaluateAll(os => os.map(o => (o as unknown as { value: string }).value)),
    [own!.site_id, epx.ref.sites[1]!.site_id], 'the chooser offers its own sites only')
})

t.test('the browser reported no error on any page of this file (no CSP refusal, no missing asset)', async t => {
  t.same(browserErrors, [])
})
