/**
 * `epx demo`, what `npm start` runs: on a fresh clone, one command gives a running
 * service with a demo company, its client certificate bundle, one new token per
 * scope, a publication for tomorrow, and curl commands that work as pasted from the
 * working directory.
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { isAbsolute, join, relative, resolve } from 'node:path'
import { SCOPES } from '../../contract/scopes.ts'
import { formatUtcInstant } from '../../contract/instants.ts'
import { addDays, coverageOf, parisDateOf, parisDayMs, QUARTER_HOUR_MS } from '../../contract/paris-day.ts'
import { openInstructions } from '../../store/instructions.ts'
import { openMetering } from '../../store/metering.ts'
import { createProgrammeCheck } from '../../apply/check-programme.ts'
import { simulatedReadings, simulatedSites } from '../../host/simulated-sites.ts'
import type { EpxConfig } from '../../config.ts'
import { addUser } from '../../auth/accounts.ts'
import { openCompanies } from '../../store/companies.ts'
import type { Store } from '../../store/open-store.ts'
import { openUsers } from '../../store/users.ts'
import { cliActor } from '../../store/audit.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { DEFAULT_DATA_DIR, type CliIo } from '../io.ts'
import { settingsPath, withStore } from '../settings.ts'
import { issueBundle, type CertBundle } from './certs.ts'
import { initDataDir, reportInit } from './init.ts'
import { browserUrl, serve, serveOptions, serveOverrides, type Running } from './start.ts'
import { createToken, type CreatedToken } from '../../auth/issue-token.ts'

const DEMO_COMPANY = 'demo-bsp'
const DEMO_ADMIN = 'admin'
const DEMO_MEMBER = 'demo-bsp-user'
const API = '/api/v0.5/energy-programs'
/** Where the printed webhook receiver listens. */
const DEMO_WEBHOOK_PORT = 8445
/** The demo's solver cycle, seconds (`--cycle` changes it). */
const DEMO_CYCLE_SECONDS = 10
/** The solver cycle a seeded programme reads as applied by: a host numbers its cycles from 1 at each start. */
const SEEDED_CYCLE = 1

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

/** A small valid Programme_Soutirage of the demo company: 4 quarter-hours from the start of the Paris day (also `npm run demo:ha`). */
export function demoProgramme (targetDate: string, site: { site_id: string; site_name: string }, now: Date): object {
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

/**
 * A whole day's programme of the demo company for every simulated site: floors of 40 kW
 * overnight (01:00–06:00), a curtailment at noon, floors of 24 kW in the evening (by
 * quarter-hour index, so a DST day shifts them by an hour).
 */
function demoDayKwh (j: number): number | undefined {
  return j >= 4 && j < 24 ? 10 : j >= 48 && j < 52 ? 0 : j >= 72 && j < 84 ? 6 : undefined
}

/**
 * Programme against delivery has something to show at once: the day before and today get a
 * programme of the demo company (as if sent, and applied, the day before each), and the day before its
 * simulated meter values; today's fill in as its quarter-hours close (the reference host
 * reports them). A later run leaves days already programmed alone.
 */
async function seedRealised (store: Store, config: EpxConfig, siteCount: number, now: Date): Promise<string[]> {
  const today = parisDateOf(now)
  const yesterday = addDays(today, -1)
  const sites = simulatedSites(siteCount)
  const instructions = openInstructions(store)
  const check = createProgrammeCheck({ maxSites: config.inbound.maxSites, requireContiguous: false })
  const seeded: string[] = []
  for (const day of [yesterday, today]) {
    if (sites.every(s => instructions.effectiveId(day, s.site_id))) continue
    const start = Date.parse(coverageOf(day).startUtc)
    const emittedMs = Date.parse(`${addDays(day, -1)}T10:00:00Z`)
    const body = {
      schema_version: 'v0.2', type: 'programme_soutirage', emitted_by: DEMO_COMPANY, emitted_at: formatUtcInstant(emittedMs),
      target_date: day, slot_duration_secs: 900,
      sites: sites.map(s => ({
        site_id: s.site_id, site_name: s.site_name,
        energie_programmee: Array.from({ length: coverageOf(day).slots }, (_, j) => j).filter(j => demoDayKwh(j) !== undefined).map(j => ({
          debut_utc: formatUtcInstant(start + j * QUARTER_HOUR_MS), fin_utc: formatUtcInstant(start + (j + 1) * QUARTER_HOUR_MS), energie_kwh: demoDayKwh(j)!,
        })),
      })),
    }
    const receivedAt = formatUtcInstant(emittedMs + 30_000)
    const r = check(Buffer.from(JSON.stringify(body)), { perimeter: 'all', provenance: { receivedAt, companyId: DEMO_COMPANY, tokenId: 'demo', certFingerprint256: 'demo' } })
    if (!r.ok) throw new Error(`the demo programme of ${day} is invalid: ${JSON.stringify(r.details)}`)
    // What the inbound path records of a programme taken the day before: handed to the solver
    // with the 202 (`queued`), then applied by the solver's next cycle. Left `received`, the
    // day before would read "not yet handed to the solver" once its day is over, and no
    // start hands over an instruction of a day over (DECISIONS.md "Inbound").
    await instructions.save(r.batch, receivedAt, 'queued')
    await instructions.markApplied(r.batch.siteIds.map(siteId => ({ instructionId: r.batch.instructionId, siteId })),
      SEEDED_CYCLE, formatUtcInstant(emittedMs + 30_000 + DEMO_CYCLE_SECONDS * 1000))
    seeded.push(day)
  }
  if (seeded.includes(yesterday)) {
    const { startMs, endMs } = parisDayMs(yesterday)
    const metering = openMetering(store, { now: () => now.getTime(), retentionDays: config.inbound.retentionDays })
    await metering.report(simulatedReadings(sites.map(s => s.site_id), startMs, endMs, (_site, _date, ms) => {
      const kwh = demoDayKwh((ms - startMs) / QUARTER_HOUR_MS)
      return kwh === undefined ? undefined : kwh > 0 ? { minKw: kwh * 4 } : { maxKw: 0 }
    }))
  }
  return seeded
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

/**
 * The demo's webhooks may call a receiver on this machine, under the demo's own CA: written
 * into its settings once (an operator's own `webhooks` section is left as it is), since
 * `epx webhook add`, another process, reads them there too.
 */
function allowLoopbackWebhooks (io: CliIo): void {
  const file = settingsPath(io.dataDir)
  const settings = JSON.parse(readFileSync(file, 'utf8')) as { plugin?: Record<string, unknown> }
  if (settings.plugin?.webhooks !== undefined) return
  settings.plugin = { ...settings.plugin, webhooks: { allowPrivateNetworks: true, caFile: 'pki/ca.crt' } }
  writeFileSync(file, JSON.stringify(settings, null, 2) + '\n')
  io.out(`demo: webhooks may call this machine, trusting the demo's CA (plugin.webhooks in ${shellPath(file)})`)
}

async function prepare (io: CliIo): Promise<{ bundle: CertBundle; tokens: CreatedToken[]; accounts: DemoAccount[] }> {
  const created = initDataDir(io.dataDir)
  if (created.length) reportInit(io.dataDir, created, io)
  allowLoopbackWebhooks(io)
  const { tokens, accounts } = await withStore(io.dataDir, async (store, settings) => {
    // The demo programs and meters the day before too: its company has held every site
    // since a week before, or that day would not be its own (DECISIONS.md "Tenure").
    const since = new Date(Date.now() - 7 * 86_400_000).toISOString()
    const companies = openCompanies(store, { now: () => Date.parse(since) })
    const company = companies.get(DEMO_COMPANY)
    if (!company) {
      await companies.add({
        id: DEMO_COMPANY, name: 'Demo BSP', status: 'active', certSubject: 'CN=demo-bsp,O=Demo BSP',
        perimeter: 'all', createdAt: since,
      })
      io.out(`added company ${DEMO_COMPANY} (perimeter: all sites)`)
    } else if (company.status === 'suspended') {
      io.err(`epx: warning: company ${DEMO_COMPANY} is suspended; its calls get 403 until 'epx company resume ${DEMO_COMPANY}'`)
    }
    const out: CreatedToken[] = []
    for (const scope of SCOPES) out.push(await createToken(store, cliActor(), DEMO_COMPANY, [scope]))
    const seeded = await seedRealised(store, settings.config, settings.host.sites, new Date())
    if (seeded.length) io.out(`programmed ${seeded.join(' and ')} for every site (${DEMO_COMPANY}), with simulated meter values for the day before: npx epx realise --date ${seeded[0]}`)
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
  const yesterday = addDays(parisDateOf(now), -1)
  io.out(`# GET what ${site.site_id} drew yesterday against its programme, quarter-hour by quarter-hour`)
  io.out(`curl -i ${tls} -H "Authorization: Bearer ${tokenOf('outbound:realise')}" ` +
    `"${base}${API}/realise?site_id=${site.site_id}&target_date=${yesterday}"`)
  io.out('')
  // Today's, conditionally: the two lines together, as a BSP polls (docs/bsp-guide.md "Reading outcomes").
  const todayRealise = `-H "Authorization: Bearer ${tokenOf('outbound:realise')}" "${base}${API}/realise?site_id=${site.site_id}&target_date=${parisDateOf(now)}"`
  io.out(`# Today's, as a BSP polls it: keep the ETag, send it back in If-None-Match; 304 while nothing changed.`)
  io.out(`# At 7 minutes past each hour the simulated meters correct one quarter-hour of today reported earlier`)
  io.out(`# (the log line "meter correction" names it, with the values before and after): the next GET answers`)
  io.out(`# 200 with a new ETag and the corrected value (so does each quarter-hour as it closes, at :00, :15, :30, :45)`)
  io.out(`etag=$(curl -sS -o /dev/null -D - ${tls} ${todayRealise} | tr -d '\\r' | awk 'tolower($1) == "etag:" { print $2 }')`)
  io.out(`curl -i ${tls} -H "If-None-Match: $etag" ${todayRealise}`)
  io.out('')
  // DECISIONS.md "Events for BSPs": the same news, told instead of polled (docs/bsp-guide.md "Be told instead of polling").
  io.out(`# Be told instead of polling: what changed for ${DEMO_COMPANY}, oldest first; with nothing new it waits up to 30 s.`)
  io.out('# Send the answer\'s "suivant" back as apres=... on the next call')
  io.out(`curl -i ${tls} -H "Authorization: Bearer ${tokenOf('outbound:evenements')}" "${base}${API}/evenements?limite=100&attente=30"`)
  io.out('')
  const data = io.dataDir === resolve(DEFAULT_DATA_DIR) ? '' : ` --data ${shellPath(io.dataDir)}`
  showWebhooks(io, bundle, data)
  io.out(`In another terminal: npx epx${data} token list, npx epx${data} company list, npx epx${data} sites list.`)
  io.out(`Then: npx epx${data} audit list (who sent what), npx epx${data} deliveries --date ${tomorrow} (who fetched what),`)
  io.out(`npx epx${data} realise --date ${yesterday} (programmed against delivered), ` +
    `npx epx${data} instructions list and show ID (what is infeasible)` + (run.handle.metricsUrl ? `, curl ${run.handle.metricsUrl.href}metrics.` : '.'))
  io.out('Ctrl+C stops the service.')
}

/**
 * The same events pushed (docs/bsp-guide.md "Webhooks"): a receiver on loopback serving the
 * demo's server certificate, then its registration, whose last line is the secret the
 * receiver reads at each delivery (it answers the registration check before it has one).
 */
function showWebhooks (io: CliIo, bundle: CertBundle, data: string): void {
  const pki = (name: string) => shellPath(join(io.dataDir, 'pki', name))
  const secret = shellPath(join(bundle.dir, 'webhook.secret'))
  io.out(`# Or be told by webhooks: a receiver on this machine, then its registration for ${DEMO_COMPANY} (the secret, shown`)
  io.out('# once, goes to the file the receiver reads). Each event is printed as a JSON line: POST the programme above')
  io.out('# and see instruction.statut "queued", then "applied". A running service sees a new endpoint within 30 s.')
  io.out(`: > ${secret}`)
  io.out(`npx epx bsp receive --port ${DEMO_WEBHOOK_PORT} --secret-file ${secret} --tls-cert ${pki('server.crt')} --tls-key ${pki('server.key')} &`)
  io.out(`npx epx${data} webhook add ${DEMO_COMPANY} https://localhost:${DEMO_WEBHOOK_PORT}/ | tail -n 1 > ${secret}`)
  io.out('')
}

export const demoCommand = defineCommand(spec, async (args, io) => {
  const overrides = serveOverrides(args, spec)
  const { bundle, tokens, accounts } = await prepare(io)
  io.out(`client certificate bundle of ${DEMO_COMPANY}: ${shellPath(bundle.dir)} (client.crt, client.key, ca.crt)`)
  io.out('new tokens, shown this once:')
  for (const t of tokens) io.out(`  ${t.record.scopes.join(',').padEnd(28)} ${t.record.id}  ${t.token}`)
  return serve(io, { cycleSeconds: DEMO_CYCLE_SECONDS, metrics: true, ...overrides, console: true }, async run => {
    showConsole(io, run, accounts)
    await showTryIt(io, run, bundle, tokens)
  })
})
