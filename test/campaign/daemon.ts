/**
 * What every campaign row shares: the built host (test-output/campaign/campaign-host.js), a data
 * folder with the test PKI, companies and tokens (seeded before epx opens the store, as
 * `epx company add` would), and the daemon started as a child process over IPC (child.ts:
 * every wait bounded, always killable).
 * @module
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Agent } from 'undici'
import { Child } from '../helpers/child.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openTokens } from '../../src/store/tokens.ts'
import { hashToken, newTokenId, newTokenSecret } from '../../src/auth/tokens.ts'
import type { Scope } from '../../src/contract/scopes.ts'
import { canonicalSubject } from '../../src/auth/subject.ts'
import { initialSettings, settingsPath } from '../../src/cli/settings.ts'
import { addDays, parisDateOf } from '../../src/contract/paris-day.ts'
import { clientCert, testPki, writePki, type KeyPairPem } from '../helpers/certs.ts'
import type { HostOptions } from './host.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const BUILD = join(root, 'test-output/campaign')
export const HOST_JS = join(BUILD, 'campaign-host.js')

/** Builds the plugin (dist/, unless a test run has just built it) and the campaign's host; about a second each. */
export function buildHost (o: { plugin?: boolean } = {}): void {
  const build = join(root, 'scripts/build.mjs')
  if (o.plugin !== false) execFileSync(process.execPath, [build], { stdio: ['ignore', 'ignore', 'inherit'] })
  execFileSync(process.execPath, [build, '--out', BUILD, '--entry', 'campaign-host=test/campaign/host.ts'], { stdio: ['ignore', 'ignore', 'inherit'] })
}

const made: string[] = []

/** A data folder of its own under the system's temp folder; `removeTempDirs` removes them all. */
export function tempDir (label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `epx-campaign-${label}-`))
  made.push(dir)
  return dir
}

export function removeTempDirs (): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
}

/** Tomorrow in Europe/Paris: a day every programme may target. */
export const targetDate = (): string => addDays(parisDateOf(new Date()), 1)

export interface SeededCompany {
  readonly id: string
  readonly cert: KeyPairPem
  readonly inbound: string
  readonly outbound: string
}

/**
 * Writes the test PKI and, per company, a subject binding and one token per scope.
 * `subject` defaults to `CN=<id>,O=<id>`; the certificate is the helpers' for that subject.
 */
export async function seedDataDir (dataDir: string, companies: ReadonlyArray<{ id: string; subject?: string }>): Promise<Record<string, SeededCompany>> {
  writePki(dataDir)
  // What `epx init` writes, so the operator's CLI (`epx company pin-cert`) works on this folder too.
  writeFileSync(settingsPath(dataDir), JSON.stringify(initialSettings()))
  const store = openStore(join(dataDir, 'epx.lmdb'))
  const out: Record<string, SeededCompany> = {}
  try {
    const now = new Date().toISOString()
    for (const c of companies) {
      const subject = c.subject ?? `CN=${c.id},O=${c.id}`
      // Every company reads every site (the campaigns test credentials, not tenancy): stored as is, overlaps included.
      await openCompanies(store, { onePerSite: false }).add({ id: c.id, name: c.id, status: 'active', certSubject: canonicalSubject(subject), perimeter: 'all', createdAt: now })
      const token = async (scope: Scope) => {
        const secret = newTokenSecret()
        await openTokens(store).add({ id: newTokenId(), hash: hashToken(secret), companyId: c.id, scopes: [scope], createdAt: now })
        return secret
      }
      out[c.id] = { id: c.id, cert: clientCert(subject), inbound: await token('inbound:programme-soutirage'), outbound: await token('outbound:besoins-agreges') }
    }
  } finally {
    await store.close()
  }
  return out
}

/** Starts the daemon; resolves once it serves (or rejects with why it did not). */
export async function startHost (o: HostOptions, opts: { execArgv?: string[]; timeoutMs?: number } = {}): Promise<{ child: Child; port: number; origin: string }> {
  const child = new Child('campaign-host', HOST_JS, {
    tsx: false,
    execArgv: opts.execArgv, env: { CAMPAIGN_HOST: JSON.stringify(o), CAMPAIGN_HOST_DEADLINE_MS: String(40 * 60_000) },
  })
  try {
    const a = await child.next('activation', opts.timeoutMs ?? 30_000)
    if (!a.ok) throw new Error(`activation refused: ${String(a.code)}: ${String(a.message)}`)
    const r = await child.next('ready', opts.timeoutMs ?? 30_000)
    return { child, port: Number(r.port), origin: `https://127.0.0.1:${Number(r.port)}` }
  } catch (err) {
    child.kill()
    throw err
  }
}

/** An undici agent presenting `cert` (or none), trusting the test server CA. */
export function agentFor (cert: KeyPairPem | undefined, connections = 4): Agent {
  return new Agent({ connections, connect: { ca: testPki().serverCa.certPem, servername: 'localhost', ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}) } })
}

/** Runs `fn` for each index in `[0, n)` with at most `width` at once. */
export async function pool (n: number, width: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: Math.min(width, n) }, async () => {
    while (next < n) await fn(next++)
  }))
}
