/**
 * Several epx instances on one PostgreSQL database, as two solver hosts run them: each
 * an `epx start` child process (the reference host, the built CLI) with its own data
 * folder (its configuration and its local replica), all on one database of a throwaway
 * cluster (scripts/postgres-cluster.ts; fails, never skips, without PostgreSQL).
 *
 *   const { cluster, database } = await sharedDatabase(t)
 *   const dirA = await instanceDir(t, cluster.url(database), { plugin: { publish: { dailyCron: '*\/5 * * * * *' } } })
 *   const a = await startInstance(t, dirA)        // a.api, a.console, a.metrics, a.logs()
 *   const b = await startInstance(t, dirB)
 *   a.child.kill('SIGKILL')
 *
 * `console(url)` is a small HTTP client of the web console (login form, pages, forms with
 * their CSRF field), what a browser does, without one.
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { Agent, request } from 'undici'
import { settingsPath } from '../../src/cli/settings.ts'
import { epx, initializedDataDir, startEpx, type RunningEpx } from './cli.ts'
import { testPki } from './certs.ts'
import { startPostgres, type PostgresCluster } from '../../scripts/postgres-cluster.ts'
import { migratedDatabase } from './store-kinds.ts'
import { UNTHROTTLED } from './epx.ts'

/** A cluster for the file, destroyed at its end, and one migrated database on it. */
export async function sharedDatabase (t: Test, settings: Record<string, string> = {}): Promise<{ cluster: PostgresCluster; database: string }> {
  const cluster = startPostgres(settings)
  t.teardown(() => cluster.destroy())
  return { cluster, database: await migratedDatabase(cluster, 'epx_shared') }
}

/**
 * A data folder as `epx init` leaves it (the test PKI: every instance has the same
 * server certificate and client CA), its store the database at `url`, its web console
 * and metrics on, on free ports. `host` and `plugin` are merged over that.
 */
export async function instanceDir (t: Test, url: string, o: { host?: Record<string, unknown>; plugin?: Record<string, any> } = {}): Promise<string> {
  const dir = await initializedDataDir(t)
  const file = settingsPath(dir)
  const s = JSON.parse(readFileSync(file, 'utf8'))
  s.host = { ...s.host, ...o.host }
  s.plugin.store = { ...s.plugin.store, kind: 'postgres', postgres: { connectionString: url } }
  s.plugin.console = { enabled: true, host: '127.0.0.1', port: 0 }
  s.plugin.metrics = { enabled: true, host: '127.0.0.1', port: 0 }
  // Many programmes a second from one company: these tests are not about request budgets.
  s.plugin.api = { ...s.plugin.api, rateLimit: UNTHROTTLED }
  for (const [k, v] of Object.entries(o.plugin ?? {})) s.plugin[k] = { ...s.plugin[k], ...v }
  writeFileSync(file, JSON.stringify(s, null, 2))
  return dir
}

/**
 * Two instance folders on one database of a cluster for the file (`sharedDatabase`), set up
 * once through A's folder as an operator would (it lands in the database, for both): company
 * `acme`, its client certificate bundle, an inbound token, a console user `alice`; a BSP's
 * agent (that certificate) and a browser's (no certificate), closed at the end.
 */
export async function twoInstances (t: Test, o: Parameters<typeof instanceDir>[2]) {
  const { cluster, database } = await sharedDatabase(t, { fsync: 'off' })
  const url = cluster.url(database)
  const dirA = await instanceDir(t, url, o)
  const dirB = await instanceDir(t, url, o)
  /** `epx <argv>` in A's folder; its last line (a secret is printed last). */
  const ok = async (...argv: string[]): Promise<string> => {
    const r = await epx(dirA, ...argv)
    if (r.code !== 0) throw new Error(`epx ${argv.join(' ')}: ${r.err}`)
    return r.lines.at(-1)!
  }
  await ok('company', 'add', 'acme', '--name', 'ACME')
  const bundle = join(dirA, 'acme-bundle')
  await ok('cert', 'issue', 'acme', '--out', bundle)
  const inbound = await ok('token', 'create', '--company', 'acme', '--scope', 'inbound:programme-soutirage')
  const password = await ok('user', 'add', 'alice', '--company', 'acme')
  const bsp = agentFor(bundle)
  const browser = agentFor()
  t.teardown(() => Promise.all([bsp.close(), browser.close()]))
  return { cluster, url, dirA, dirB, ok, inbound, password, bsp, browser, consoleOf: consoleClient(browser) }
}

export interface Instance {
  readonly dir: string
  readonly run: RunningEpx
  readonly child: RunningEpx['child']
  readonly api: URL
  readonly console: URL
  readonly metrics: URL
  /** The JSON log lines written so far (pino's), parsed. */
  logs(): Array<Record<string, any>>
  /** Resolves with the first log line `match` accepts (polling the output), or rejects after `ms`. */
  logged(match: (line: Record<string, any>) => boolean, ms: number, what: string): Promise<Record<string, any>>
}

/** `epx start` on `dir` (solver cycle every `cycle` s); resolves once its API, console and metrics listen. Killed at the test's end. */
export async function startInstance (t: Test, dir: string, cycle = 1): Promise<Instance> {
  const run = await startEpx(['--data', dir, 'start', '--port', '0', '--console-port', '0', '--cycle', String(cycle)],
    /metrics, health and readiness on (https?:\/\/\S+\/)metrics/)
  t.teardown(() => { run.child.kill('SIGKILL') })
  const out = run.output()
  const api = new URL(/epx API listening on (https:\/\/\S+\/)/.exec(out)![1]!)
  // The console line shows `localhost` (what a browser opens); its listener is on 127.0.0.1.
  const console = new URL(/epx web console on (https:\/\/\S+\/)/.exec(out)![1]!)
  console.hostname = '127.0.0.1'
  const logs = () => run.output().split('\n').filter(l => l.startsWith('{')).map(l => { try { return JSON.parse(l) } catch { return {} } })
  return {
    dir, run, child: run.child, api, console, metrics: new URL(run.match[1]!),
    logs,
    async logged (match, ms, what) {
      const start = Date.now()
      for (;;) {
        const line = logs().find(match)
        if (line) return line
        if (Date.now() - start > ms) throw new Error(`${what}: not logged within ${ms} ms`)
        await new Promise(resolve => setTimeout(resolve, 50))
      }
    },
  }
}

/** Trusts the test server CA; presents `bundle`'s client certificate when given (`epx cert issue --out`). */
export function agentFor (bundle?: string): Agent {
  return new Agent({
    connect: {
      ca: testPki().serverCa.certPem, servername: 'localhost',
      ...(bundle ? { cert: readFileSync(join(bundle, 'client.crt')), key: readFileSync(join(bundle, 'client.key')) } : {}),
    },
  })
}

export interface Answer { readonly status: number; readonly headers: Record<string, string>; readonly text: string }

export async function call (agent: Agent, url: URL, o: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  const res = await request(url, { dispatcher: agent, method: (o.method ?? 'GET') as 'GET', headers: o.headers, body: o.body, headersTimeout: 10_000, bodyTimeout: 10_000 })
  const text = await res.body.text()
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v
  return { status: res.statusCode, headers, text }
}

/** The web console as a browser uses it: a session cookie, the pages, the forms with their CSRF field. */
export function consoleClient (agent: Agent) {
  /** Passwords chosen in place of generated ones, by username: later logins use them. */
  const chosen = new Map<string, string>()
  const post = (base: URL, path: string, cookie: string | undefined, fields: Record<string, string>) => call(agent, new URL(path, base), {
    method: 'POST', headers: { origin: base.origin, 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
  })
  const cookieOf = (r: Answer) => r.headers['set-cookie']!.split(';')[0]!
  return {
    /**
     * Logs in; resolves to the session cookie (`name=value`). A generated password (`epx
     * user add`) is replaced first, as its user must do (docs/console.md "Passwords").
     */
    async login (base: URL, username: string, password: string): Promise<string> {
      const current = chosen.get(username) ?? password
      const r = await post(base, '/login', undefined, { username, password: current })
      if (r.status !== 303) throw new Error(`login answered ${r.status}: ${r.text.slice(0, 300)}`)
      const cookie = cookieOf(r)
      const form = await call(agent, new URL('/compte/mot-de-passe', base), { headers: { cookie } })
      if (!form.text.includes('choisissez le vôtre pour continuer')) return cookie
      const csrf = /name="_csrf" value="([^"]+)"/.exec(form.text)![1]!
      const mine = `${current} chosen by its user`
      const changed = await post(base, '/compte/mot-de-passe', cookie, { _csrf: csrf, current, new: mine, confirm: mine })
      if (changed.status !== 303) throw new Error(`password change answered ${changed.status}: ${changed.text.slice(0, 300)}`)
      chosen.set(username, mine)
      return cookieOf(changed)
    },
    page: (base: URL, path: string, cookie: string) => call(agent, new URL(path, base), { headers: { cookie } }),
    /** Posts a form of the page at `formPage` (its CSRF field taken from it). */
    async submit (base: URL, formPage: string, action: string, cookie: string, fields: Array<[string, string]>): Promise<Answer> {
      const page = await call(agent, new URL(formPage, base), { headers: { cookie } })
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1]
      if (!csrf) throw new Error(`no CSRF field on ${formPage} (${page.status})`)
      return call(agent, new URL(action, base), {
        method: 'POST', headers: { cookie, origin: base.origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams([['_csrf', csrf], ...fields]).toString(),
      })
    },
  }
}

/**
 * `epx store verify` on an instance's data folder, while it runs: its replica equals the
 * database. Tried up to three times, since a running instance's writes may keep its
 * replica off the database's snapshot for a moment.
 */
export async function replicaEqualsDatabase (t: Test, dir: string, name: string): Promise<void> {
  let last = { code: -1, err: '' }
  for (let i = 0; i < 3; i++) {
    last = await epx(dir, 'store', 'verify')
    if (last.code === 0) break
    await new Promise(resolve => setTimeout(resolve, 500))
  }
  t.equal(last.code, 0, `${name}: epx store verify says its replica equals the database${last.code === 0 ? '' : ` (${last.err})`}`)
}
