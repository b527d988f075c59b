/**
 * `epx demo`, what `npm start` runs: on a fresh clone, one command gives a running
 * service with a demo company, its client certificate bundle, one new token per
 * scope, a publication for tomorrow, and curl commands that work as pasted from the
 * working directory.
 * @module
 */
import { writeFileSync } from 'node:fs'
import { isAbsolute, join, relative, resolve } from 'node:path'
import { SCOPES } from '../../auth/tokens.ts'
import { formatUtcInstant } from '../../contract/instants.ts'
import { addDays, coverageOf, parisDateOf, QUARTER_HOUR_MS } from '../../contract/paris-day.ts'
import { addUser } from '../../auth/accounts.ts'
import { openCompanies } from '../../store/companies.ts'
import type { Store } from '../../store/open-store.ts'
import { openUsers } from '../../store/users.ts'
import { cliActor } from '../../store/audit.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { DEFAULT_DATA_DIR, type CliIo } from '../io.ts'
import { withStore } from '../settings.ts'
import { issueBundle, type CertBundle } from './certs.ts'
import { initDataDir, reportInit } from './init.ts'
import { browserUrl, serve, serveOptions, serveOverrides, type Running } from './start.ts'
import { createToken, type CreatedToken } from '../../auth/issue-token.ts'

const DEMO_COMPANY = 'demo-bsp'
const DEMO_ADMIN = 'admin'
const DEMO_MEMBER = 'demo-bsp-user'
const API = '/api/v0.5/energy-programs'

/** A console account the demo made on this run, with its password (shown once). */
interface DemoAccount { readonly username: string; readonly role: string; readonly password: string }

const spec: CommandSpec = {
  usage: 'epx demo [--port N] [--host H] [--cycle SECONDS] [--console-port N]',
  about: [
    `The demo (npm start): initializes the data folder if needed, registers company ${DEMO_COMPANY}`,
    '(perimeter: all sites), writes its client certificate bundle to <data>/demo/, creates one',
    'new token per scope (printed once), publishes Besoins_Agreges for tomorrow, starts the',
    'service like `epx start` (solver cycle every 10 s) and prints curl commands to try it.',
    `The web console is on: the first run creates its accounts ${DEMO_ADMIN} (service admin) and`,
    `${DEMO_MEMBER} (member of ${DEMO_COMPANY}) and prints their passwords, once.`,
  ].join('\n'),
  options: serveOptions,
}

/** A path as the user should type it: `./`-relative under the working directory, else absolute. */
function shellPath (path: string): string {
  const rel = relative(process.cwd(), path)
  const shown = rel && !rel.startsWith('..') && !isAbsolute(rel) ? `./${rel}` : path
  return shellQuote(shown)
}

function shellQuote (s: string): string {
  return /^[A-Za-z0-9_./:@=+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`
}

/** A small valid Programme_Soutirage: 4 quarter-hours from the start of the Paris day. */
function demoProgramme (targetDate: string, site: { site_id: string; site_name: string }, now: Date): object {
  const start = Date.parse(coverageOf(targetDate).startUtc)
  const energies = [12.5, 12.5, 10, 0]   // kWh: floors of 50, 50 and 40 kW, then a curtailment
  return {
    schema_version: 'v0.2',
    type: 'programme_soutirage',
    emitted_by: DEMO_COMPANY,
    emitted_at: formatUtcInstant(Math.floor(now.getTime() / 1000) * 1000),
    target_date: targetDate,
    slot_duration_secs: 900,
    sites: [{
      site_id: site.site_id,
      site_name: site.site_name,
      energie_programmee: energies.map((energie_kwh, i) => ({
        debut_utc: formatUtcInstant(start + i * QUARTER_HOUR_MS),
        fin_utc: formatUtcInstant(start + (i + 1) * QUARTER_HOUR_MS),
        energie_kwh,
      })),
    }],
  }
}

/** The demo's console accounts, made once: a later run leaves them (and their passwords) alone. */
async function demoAccounts (store: Store): Promise<DemoAccount[]> {
  const users = openUsers(store)
  const made: DemoAccount[] = []
  for (const u of [
    { username: DEMO_ADMIN, admin: true, companyId: null, role: 'service admin' },
    { username: DEMO_MEMBER, admin: false, companyId: DEMO_COMPANY, role: `member of ${DEMO_COMPANY}` },
  ]) {
    if (users.get(u.username)) continue
    const { password } = await addUser(store, u, Date.now())
    made.push({ username: u.username, role: u.role, password })
  }
  return made
}

async function prepare (io: CliIo): Promise<{ bundle: CertBundle; tokens: CreatedToken[]; accounts: DemoAccount[] }> {
  const created = initDataDir(io.dataDir)
  if (created.length) reportInit(io.dataDir, created, io)
  const { tokens, accounts } = await withStore(io.dataDir, async store => {
    const companies = openCompanies(store)
    const company = companies.get(DEMO_COMPANY)
    if (!company) {
      await companies.add({
        id: DEMO_COMPANY, name: 'Demo BSP', status: 'active', certSubject: 'CN=demo-bsp,O=Demo BSP',
        perimeter: 'all', createdAt: new Date().toISOString(),
      })
      io.out(`added company ${DEMO_COMPANY} (perimeter: all sites)`)
    } else if (company.status === 'suspended') {
      io.err(`epx: warning: company ${DEMO_COMPANY} is suspended; its calls get 403 until 'epx company resume ${DEMO_COMPANY}'`)
    }
    const out: CreatedToken[] = []
    for (const scope of SCOPES) out.push(await createToken(store, cliActor(), DEMO_COMPANY, [scope]))
    return { tokens: out, accounts: await demoAccounts(store) }
  })
  const bundle = await issueBundle(io.dataDir, DEMO_COMPANY, join(io.dataDir, 'demo'))
  return { bundle, tokens, accounts }
}

function showConsole (io: CliIo, run: Running, accounts: readonly DemoAccount[]): void {
  if (!run.handle.consoleUrl) return
  io.out('')
  io.out(`Web console: ${browserUrl(run.handle.consoleUrl)} (the browser warns about the demo's own CA: ${shellPath(join(io.dataDir, 'pki', 'ca.crt'))})`)
  if (accounts.length === 0) {
    io.out(`  accounts ${DEMO_ADMIN} and ${DEMO_MEMBER} exist from an earlier run; a new password: npx epx user reset-password ${DEMO_ADMIN}`)
  }
  for (const a of accounts) io.out(`  ${a.username.padEnd(14)} ${a.role.padEnd(20)} password (shown once): ${a.password}`)
}

async function showTryIt (io: CliIo, run: Running, bundle: CertBundle, tokens: readonly CreatedToken[]): Promise<void> {
  const now = new Date()
  const tomorrow = addDays(parisDateOf(now), 1)
  const site = run.reference.sites[0]!
  try {
    const report = await run.handle.publish({ targetDate: tomorrow })
    io.out(`published Besoins_Agreges for ${tomorrow}: ${report.published.length} site(s)` +
      (report.failed.length ? `, ${report.failed.length} failed` : ''))
  } catch (err) {
    io.err(`epx: warning: could not publish for ${tomorrow} (${(err as Error).message}); the GET below answers 404 until a publication`)
  }
  const programme = join(bundle.dir, 'programme.json')
  writeFileSync(programme, JSON.stringify(demoProgramme(tomorrow, site, now), null, 2) + '\n')

  const tokenOf = (scope: string) => tokens.find(t => t.record.scopes.includes(scope as never))!.token
  // The server certificate names localhost, 127.0.0.1 and ::1; other listen addresses are shown as they are.
  const base = new URL(browserUrl(run.handle.apiUrl)).origin
  const tls = `--cert ${shellPath(bundle.cert)} --key ${shellPath(bundle.key)} --cacert ${shellPath(bundle.ca)}`
  io.out('')
  io.out(`Try it (company ${DEMO_COMPANY}; site ${site.site_id}, ${site.site_name}; target date ${tomorrow}):`)
  io.out('')
  io.out('# GET the Besoins_Agreges published for tomorrow')
  io.out(`curl -i ${tls} -H "Authorization: Bearer ${tokenOf('outbound:besoins-agreges')}" ` +
    `"${base}${API}/besoins-agreges?site_id=${site.site_id}&target_date=${tomorrow}"`)
  io.out('')
  io.out(`# POST a Programme_Soutirage (${shellPath(programme)}: 4 quarter-hours of ${site.site_id}); expect 202`)
  io.out(`curl -i ${tls} -H "Authorization: Bearer ${tokenOf('inbound:programme-soutirage')}" ` +
    `-H "Content-Type: application/json" --data-binary @${shellPath(programme)} "${base}${API}/programme-soutirage"`)
  io.out('')
  const data = io.dataDir === resolve(DEFAULT_DATA_DIR) ? '' : ` --data ${shellPath(io.dataDir)}`
  io.out(`In another terminal: npx epx${data} token list, npx epx${data} company list, npx epx${data} sites list.`)
  io.out(`Then: npx epx${data} audit list (who sent what), npx epx${data} deliveries --date ${tomorrow} (who fetched what),`)
  io.out(`npx epx${data} instructions list and show ID (what is infeasible)` + (run.handle.metricsUrl ? `, curl ${run.handle.metricsUrl.href}metrics.` : '.'))
  io.out('Ctrl+C stops the service.')
}

export const demoCommand = defineCommand(spec, async (args, io) => {
  const overrides = serveOverrides(args, spec)
  const { bundle, tokens, accounts } = await prepare(io)
  io.out(`client certificate bundle of ${DEMO_COMPANY}: ${shellPath(bundle.dir)} (client.crt, client.key, ca.crt)`)
  io.out('new tokens, shown this once:')
  for (const t of tokens) io.out(`  ${t.record.scopes.join(',').padEnd(28)} ${t.record.id}  ${t.token}`)
  return serve(io, { cycleSeconds: 10, metrics: true, ...overrides, console: true }, async run => {
    showConsole(io, run, accounts)
    await showTryIt(io, run, bundle, tokens)
  })
})
