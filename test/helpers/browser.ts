/**
 * The console's browser tests: Debian's chromium driven by playwright-core, one browser
 * per test file (launching is the slow part), one context per test (its own cookies).
 *
 *   const browser = await launchBrowser(t)                 // closed by t.teardown
 *   const page = await newPage(t, browser)                 // HTTPS errors ignored: the test PKI
 *   const context = await newContext(t, browser)           // no page: requests only (context.request)
 *   await login(page, consoleUrl, 'alice', password)       // through the form; lands on the page after login
 *   await signIn(page, consoleUrl, 'alice', password)      // the same POST without rendering a page (faster; a context too)
 *   await screenshot(page, 'tokens-created')               // test-output/screenshots/<name>.png
 *   t.same(await accessibilityProblems(page), [])         // axe-core: serious or critical only
 *
 * `CHROMIUM` overrides the browser's path (default: `which chromium`, /usr/bin/chromium).
 * @module
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core'
import { AxeBuilder } from '@axe-core/playwright'
import axe from 'axe-core'

export const SCREENSHOTS = fileURLToPath(new URL('../../test-output/screenshots/', import.meta.url))

function chromiumPath (): string {
  if (process.env.CHROMIUM) return process.env.CHROMIUM
  try {
    return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim() || '/usr/bin/chromium'
  } catch {
    return '/usr/bin/chromium'
  }
}

export async function launchBrowser (t: Test): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  t.teardown(() => browser.close())
  return browser
}

/** A context without a page, for a test that only sends requests (`context.request`): no renderer process to start. */
export async function newContext (t: Test, browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, locale: 'fr-FR', timezoneId: 'Europe/Paris', viewport: { width: 1200, height: 800 } })
  t.teardown(() => context.close())
  return context
}

export async function newPage (t: Test, browser: Browser): Promise<Page> {
  const page = await (await newContext(t, browser)).newPage()
  page.setDefaultTimeout(15_000)
  return page
}

/** Logs in through the form; resolves once the answer to the login POST has loaded. */
export async function login (page: Page, consoleUrl: URL, username: string, password: string): Promise<number> {
  // Already on the login form (sent there from a page asked for): fill it in place, so its `next` is kept.
  if (!page.url().startsWith(new URL('/login', consoleUrl).href)) await page.goto(new URL('/login', consoleUrl).href)
  await page.getByLabel('Identifiant').fill(username)
  await page.getByLabel('Mot de passe').fill(password)
  const [response] = await Promise.all([
    page.waitForResponse(r => new URL(r.url()).pathname === '/login' && r.request().method() === 'POST'),
    page.getByRole('button', { name: 'Se connecter' }).click(),
  ])
  await page.waitForLoadState()
  return response.status()
}

/** Logs the page's context in with the login POST alone (the session cookie lands in the context); resolves to the status. */
export async function signIn (page: Page | BrowserContext, consoleUrl: URL, username: string, password: string): Promise<number> {
  const r = await page.request.post(new URL('/login', consoleUrl).href, {
    form: { username, password }, headers: { origin: consoleUrl.origin }, maxRedirects: 0,
  })
  return r.status()
}

/**
 * A page per user for the whole file (`t`: the file's), signed in with the login POST at its
 * first use and shared by the tests that are not about logging in (test/console/login.test.ts
 * is), each going to its page first: a browser context, its renderer and a scrypt hash less
 * per test. `setUp` readies a new page before it signs in (a phone's viewport).
 */
export function pagePerUser (t: Test, browser: Browser, consoleUrl: URL, setUp?: (page: Page) => Promise<void>): (username: string, password: string) => Promise<Page> {
  const pages = new Map<string, Promise<Page>>()
  return (username, password) => {
    if (!pages.has(username)) {
      pages.set(username, (async () => {
        const page = await newPage(t, browser)
        await setUp?.(page)
        const status = await signIn(page, consoleUrl, username, password)
        if (status !== 303) throw new Error(`${username} could not sign in: ${status}`)
        return page
      })())
    }
    return pages.get(username)!
  }
}

/**
 * The whole page by default; `{ fullPage: false }` keeps the viewport (a long table's top, for
 * docs/). Only with `EPX_SCREENSHOTS=1` (`npm run test:screenshots`): a picture asserts
 * nothing, and rendering and encoding 21 of them cost `npm test` ~7 s of CPU.
 */
export async function screenshot (page: Page, name: string, o: { fullPage?: boolean } = {}): Promise<void> {
  if (process.env.EPX_SCREENSHOTS !== '1') return
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: o.fullPage ?? true })
}

/** One element of the page (the chart, for docs/), under the same `EPX_SCREENSHOTS=1` rule. */
export async function screenshotOf (locator: Locator, name: string): Promise<void> {
  if (process.env.EPX_SCREENSHOTS !== '1') return
  mkdirSync(SCREENSHOTS, { recursive: true })
  await locator.screenshot({ path: `${SCREENSHOTS}${name}.png` })
}

/**
 * axe-core's source, evaluated only in a document that does not hold it yet. AxeBuilder
 * evaluates its source at each step (twice per check in legacy mode), and compiling those
 * 550 kB cost chromium ~0.7 s of CPU each time; its default mode also opened a blank page
 * per check to merge the frames' results (the console has no frames): ~4.4 s of CPU per
 * check of a 200-row table against ~1.9 s this way.
 */
const AXE_ONCE = `if (typeof window.axe !== 'object') {\n${axe.source}\n}`

/**
 * axe-core's serious and critical violations on the page as it is now: `rule: target…` lines.
 * axe is the costly part of a browser test (~2 s of CPU a check), so `npm test` reads a
 * page of its own once, in one state; its variants (another state or user of a page checked
 * elsewhere) are read in the system tier only (docs/development.md "Test tiers"):
 * `if (SYSTEM) t.same(await accessibilityProblems(page), [])`.
 */
export async function accessibilityProblems (page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page, axeSource: AXE_ONCE }).setLegacyMode(true).options({ resultTypes: ['violations'] }).analyze()
  return result.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.id} (${v.impact}): ${v.nodes.map(n => n.target.join(' ')).join(', ')}`)
}
