import t from 'tap'
import { request } from 'undici'
import { addUser } from '../../src/auth/accounts.ts'
import { accessibilityProblems, launchBrowser, newPage, screenshot, signIn } from '../helpers/browser.ts'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'

// Programme against delivery in the console, in chromium: a programme POSTed on the API,
// meter values reported by the host, the programme page's second series, verdicts and
// totals, the day view of the perimeter and its CSV.
const epx = await startEpx(t, { sites: 3, config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
const browser = await launchBrowser(t)
const DAY = '2026-11-22'
const ID = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'
const acme = await epx.addCompany('acme', { perimeter: [siteId(1), siteId(2)] })
const alice = await addUser(epx.store, { username: 'alice', admin: false, companyId: 'acme' }, Date.now())
{
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  // Floors of 4 kWh for four quarter-hours, then a curtailment.
  const r = await epx.request({ method: 'POST', path: INBOUND_PATH, cert: acme.cert, token: secret, body: programme({ slots: 5, kwh: j => j < 4 ? 4 : 0 }) })
  if (r.status !== 202) throw new Error(r.text)
}
epx.clock.set('2026-11-23T08:00:00Z')
const start = Date.parse('2026-11-21T23:00:00Z')
const at = (site: number, slot: number, kwh: number) => ({
  siteId: siteId(site), startUtc: new Date(start + slot * 900_000).toISOString(), endUtc: new Date(start + (slot + 1) * 900_000).toISOString(), kwh,
})
await epx.handle.reportMetering([at(1, 0, 4.02), at(1, 1, 3), at(1, 2, 4), at(1, 4, 1.5), at(1, 6, 2), at(2, 10, 1.25)])

const page = await newPage(t, browser)
t.equal(await signIn(page, url, 'alice', alice.password), 303)

t.test('the programme page: delivered beside programmed on the chart, a verdict per slot, the day\'s totals', async t => {
  await page.goto(new URL(`/programmes/${ID}/${siteId(1)}`, url).href)
  t.match(await page.locator('section.realise p.totals').textContent(), /Programmé 16 kWh, réalisé 14,52 kWh, manque 1 kWh —\s+2 atteint, 1 insuffisant, 1 effacement non respecté, 1 pas de relevé/)
  t.equal(await page.locator('section.realise svg line.delivered').count(), 5, 'the metered quarter-hours, a second series')
  t.equal(await page.locator('section.realise svg line.floor').count(), 4, 'beside the floors')
  const rows = page.locator('table.slots tbody tr')
  t.equal(await rows.count(), 5)
  t.match(await rows.nth(1).locator('td.verdict').textContent(), 'insuffisant (−1 kWh)')
  t.match(await rows.nth(3).locator('td.verdict').textContent(), 'pas de relevé')
  t.match(await rows.nth(4).locator('td.verdict').textContent(), 'effacement non respecté')
  t.same(await accessibilityProblems(page), [])
  await screenshot(page, 'programme-realise')
})

t.test('the day view lists every site of the perimeter with its verdict counts; the CSV has the same totals', async t => {
  await page.goto(new URL(`/realise?target_date=${DAY}`, url).href)
  const rows = page.locator('table.realise tbody tr')
  t.equal(await rows.count(), 2, 'the two sites of the perimeter, not the third')
  t.same((await rows.nth(0).locator('td').allTextContents()).slice(3), ['16', '14,52', '1', '2', '1', '0', '1', '1', '0'])
  t.equal(await rows.nth(0).locator('td.holder').textContent(), 'acme', 'the holder: alice sees her own company')
  t.match(await rows.nth(1).textContent(), /—\s*0\s*1,25\s*0/)
  t.match(await page.locator('table.realise tfoot').textContent(), /15,77/)
  t.same(await accessibilityProblems(page), [])
  await screenshot(page, 'realise-day')

  const href = await page.locator('a.download:not(.download-fr)').getAttribute('href')
  const cookies = (await page.context().cookies()).map(c => `${c.name}=${c.value}`).join('; ')
  const res = await request(new URL(href!, url), { headers: { cookie: cookies }, dispatcher: new (await import('undici')).Agent({ connect: { rejectUnauthorized: false } }) })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/csv/)
  t.match(res.headers['content-disposition'], `realise-${DAY}.csv`)
  const lines = (await res.body.text()).trimEnd().split('\r\n').map(l => l.split(','))
  t.equal(lines.length, 1 + 2 * 96)
  const total = (col: number) => Math.round(lines.slice(1).reduce((a, l) => a + Number(l[col] || 0), 0) * 1000) / 1000
  t.equal(total(6), 15.77, 'delivered, as the page totals')
  t.equal(total(8), 1, 'shortfall')
  t.same(lines[2]!.slice(12), ['2026-11-22 00:15', '+01:00', 'insuffisant', ''], 'Paris time and the French verdict after the usual columns')

  const fr = await request(new URL((await page.locator('a.download-fr').getAttribute('href'))!, url), { headers: { cookie: cookies }, dispatcher: new (await import('undici')).Agent({ connect: { rejectUnauthorized: false } }) })
  t.match(fr.headers['content-disposition'], `realise-${DAY}-tableur.csv`)
  const bytes = Buffer.from(await fr.body.arrayBuffer())
  t.equal(bytes.subarray(0, 3).toString('hex'), 'efbbbf', 'a UTF-8 BOM')
  const frLines = bytes.subarray(3).toString('utf8').trimEnd().split('\r\n').map(l => l.split(';'))
  t.same(frLines[1]!.slice(5, 9), ['4', '4,02', 'met', ''], 'numbers with a decimal comma')
})

t.test('the sites in default: one click from the counts, and a shareable URL', async t => {
  await page.goto(new URL(`/realise?target_date=${DAY}`, url).href)
  t.equal(await page.locator('a.count-defaut').textContent(), 'en défaut : 1')
  await page.locator('a.count-defaut').click()
  t.match(page.url(), /[?&]defaut=1(&|$)/)
  const rows = page.locator('table.realise tbody tr')
  t.equal(await rows.count(), 1)
  t.match(await rows.nth(0).textContent(), siteId(1))
  t.equal(await page.locator('#defaut').isChecked(), true, 'the form shows the filter it applied')
  t.match(await page.locator('table.realise tfoot').textContent(), /16\s*14,52\s*1/, 'the totals of the selection')
  await page.goto(new URL(`/realise?target_date=${DAY}&q=${siteId(2).slice(-3)}`, url).href)
  t.equal(await rows.count(), 1, 'a site found by part of its PRM')
  t.match(await rows.nth(0).textContent(), siteId(2))
  t.same(await accessibilityProblems(page), [])
})

t.test('a programme for today received late: the page shows when each was in force, the hours the former governed with its verdicts, the late slots as "reçu trop tard"', async t => {
  const today = '2026-11-23'   // the clock stands at 09:00 in Paris
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const send = async (emittedAt: string, kwh: number) => {
    const r = await epx.request({ method: 'POST', path: INBOUND_PATH, cert: acme.cert, token: secret, body: programme({ targetDate: today, sites: [siteId(2)], emittedAt, kwh: () => kwh }) })
    t.equal(r.status, 202, r.text)
  }
  await send('2026-11-23T08:00:00Z', 1)
  epx.clock.set('2026-11-23T08:30:00Z')
  await send('2026-11-23T08:30:00Z', 2)
  const todayStart = Date.parse('2026-11-22T23:00:00Z')
  const at2 = (slot: number, kwh: number) => ({ siteId: siteId(2), startUtc: new Date(todayStart + slot * 900_000).toISOString(), endUtc: new Date(todayStart + (slot + 1) * 900_000).toISOString(), kwh })
  await epx.handle.reportMetering([at2(36, 1.5), at2(37, 0.2)])
  t.equal(await signIn(page, url, 'alice', alice.password), 303, 'half an hour later: a new session')

  await page.goto(new URL(`/programmes/ProgrammeSoutirage-${today}-rev-20261123T080000Z/${siteId(2)}`, url).href)
  t.match(await page.locator('dd.in-force').textContent(), /^du 23\/11\/2026 09:00.* au 23\/11\/2026 09:30.* \(remplacée\)$/)
  const rows = page.locator('table.slots tbody tr')
  t.equal(await rows.count(), 96)
  t.equal(await rows.nth(0).locator('td.verdict').textContent(), 'reçu trop tard', 'received after 00:00 began')
  t.match(await rows.nth(36).locator('td.verdict').textContent(), 'atteint', '09:00, in force at its start: its own verdict')
  t.match(await rows.nth(37).locator('td.verdict').textContent(), 'insuffisant')
  t.equal(await rows.nth(38).locator('td.verdict').textContent(), 'une autre instruction était en vigueur')
  t.same(await accessibilityProblems(page), [])

  await page.goto(new URL(`/programmes/ProgrammeSoutirage-${today}-rev-20261123T083000Z/${siteId(2)}`, url).href)
  t.match(await page.locator('dd.in-force').textContent(), /à ce jour$/)
  t.equal(await rows.nth(37).locator('td.verdict').textContent(), 'reçu trop tard')
  t.equal(await rows.nth(38).locator('td.verdict').textContent(), 'pas de relevé')
  t.match(await page.locator('section.realise p.totals').textContent(), /38 reçu trop tard, comptés à part/)
})
