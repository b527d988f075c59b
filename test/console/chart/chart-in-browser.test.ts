/**
 * The "Besoins agrégés" page body in a real browser (Debian's chromium through
 * playwright-core), under a CSP as strict as the console's: the chart lays out with
 * one column per quarter-hour on 92/96/100-slot days, nothing is refused by the CSP,
 * axe finds no serious or critical violation. Screenshots go to test-output/screenshots/ (ignored), with the others.
 */
import { mkdirSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { chromium, type Browser } from 'playwright-core'
import { AxeBuilder } from '@axe-core/playwright'
import { loadBesoins } from '../../../src/console/pages/besoins-model.ts'
import { renderBesoins } from '../../../src/console/pages/besoins-view.ts'
import { ManualClock } from '../../../src/host/reference-host.ts'
import { simulatedSites } from '../../../src/host/simulated-sites.ts'
import { seedStore } from '../../helpers/seed.ts'
import { admin } from '../../helpers/console-app.ts'
import { siteId } from '../../helpers/programme.ts'
import { SCREENSHOTS } from '../../helpers/browser.ts'
import { coverageOf } from '../../../src/contract/paris-day.ts'

const SHOTS = join(SCREENSHOTS, 'chart')
const CSP = "default-src 'none'; img-src 'self'; form-action 'self'"

let executablePath: string | undefined
try { executablePath = execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim() } catch {}

let browser: Browser
t.before(async () => {
  if (executablePath) browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] })
})
t.teardown(() => browser?.close())

for (const [day, slots] of [['2027-03-28', 92], ['2026-11-22', 96], ['2026-10-25', 100]] as const) {
  t.test(`a ${slots}-slot day in chromium`, { skip: executablePath ? false : 'no chromium on this machine' }, async t => {
    const s = seedStore(t)
    await s.publish(day, siteId(1), { siteName: 'Dépôt <Nord>', kw: k => 60 + 25 * Math.sin(k / 8) })
    // Small floors all day, a curtailment mid-morning, larger floors in the evening.
    const start = Date.parse(coverageOf(day).startUtc)
    await s.receive({ targetDate: day, emittedAt: '2026-11-21T10:00:00Z', slots: 80, kwh: j => j >= 40 && j < 46 ? 0 : j >= 68 ? 8 : 0.5 }, 'acme')
    const deps = { revisions: s.revisions, instructions: s.instructions, companies: s.companies, sites: async () => simulatedSites(2), clock: new ManualClock(new Date(start)) }
    const loaded = await loadBesoins(deps, admin, { site_id: siteId(1), target_date: day })
    if (loaded.status !== 200) throw new Error(String(loaded.status))
    const doc = `<!doctype html><html lang="fr"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${CSP}">` +
      `<title>Besoins agrégés</title></head><body><main><h1>Besoins agrégés</h1>${renderBesoins(loaded.model)}</main></body></html>`

    const context = await browser.newContext({ viewport: { width: 1000, height: 800 } })
    t.teardown(() => context.close())
    const page = await context.newPage()
    const errors: string[] = []
    page.on('console', m => { if (m.type() === 'error') errors.push(m.text()) })
    await page.setContent(doc)
    t.same(errors, [], 'nothing refused by the CSP, no error')
    // A string: this project's TypeScript has no DOM library.
    const laidOut = await page.evaluate('[...document.querySelectorAll("svg rect.slot")].map(r => r.getBoundingClientRect().width)') as number[]
    t.equal(laidOut.length, slots)
    t.ok(laidOut.every(w => w > 5), 'every quarter-hour has a visible column')
    t.equal(await page.locator('table.slots tbody tr').count(), slots)
    t.equal(await page.getByRole('img', { name: /Puissance disponible par quart d'heure, Dépôt <Nord>/ }).count(), 1, 'the chart is an image with its accessible name')

    mkdirSync(SHOTS, { recursive: true })
    await page.locator('figure.chart').screenshot({ path: join(SHOTS, `besoins-chart-${slots}.png`) })

    // axe is injected as a script: a context that bypasses the test's CSP meta runs it.
    const axeContext = await browser.newContext({ bypassCSP: true })
    t.teardown(() => axeContext.close())
    const axePage = await axeContext.newPage()
    await axePage.setContent(doc)
    const { violations } = await new AxeBuilder({ page: axePage }).analyze()
    t.same(violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => `${v.id}: ${v.help}`), [])
  })
}
