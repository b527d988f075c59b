/**
 * `npm run demo:ha`: two epx instances on one PostgreSQL database, on this machine. It
 * starts a throwaway cluster (scripts/postgres-cluster.ts: initdb and pg_ctl in a temporary
 * folder, a Unix socket only), then does what docs/operating.md "Two instances on one
 * database" does by hand, printing each `epx` command it runs: two data folders sharing
 * one PKI, `epx store migrate`, a company with its certificate and tokens, a console
 * admin, two `epx start` on different ports, each with its web console (the API's port
 * + 1: 8444 and 8454); then it prints the consoles' addresses and what to try. Ctrl+C stops both instances
 * and removes the cluster. The data folders (./var/epx-ha/a and b, or under `--data DIR`)
 * are made anew at each run, as the database is. `--port-a N`, `--port-b N`: the API
 * ports (8443 and 8453; 0 picks free ones).
 * @module
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, createWriteStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { demoProgramme } from '../src/cli/commands/demo.ts'
import { addDays, parisDateOf } from '../src/contract/paris-day.ts'
import { simulatedSites } from '../src/host/simulated-sites.ts'
import { startPostgres } from './postgres-cluster.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BIN = join(ROOT, 'bin', 'epx.js')
const { values: options } = parseArgs({
  options: { data: { type: 'string' }, 'port-a': { type: 'string' }, 'port-b': { type: 'string' } },
})
const HOME = resolve(options.data ?? join('var', 'epx-ha'))
const API = '/api/v0.5/energy-programs'
const COMPANY = 'demo-bsp'

// `npm run demo:ha -- --port-a 9443 --port-b 9453` when 8443 or 8453 is taken.
interface Instance { readonly name: string; readonly dir: string; readonly port: number }
/** Each console beside its API (8443 → 8444, as `epx start`'s defaults); a free one when the API's port is. */
const consolePort = (i: Instance) => i.port === 0 ? 0 : i.port + 1
const instances: Instance[] = [
  { name: 'A', dir: join(HOME, 'a'), port: Number(options['port-a'] ?? 8443) },
  { name: 'B', dir: join(HOME, 'b'), port: Number(options['port-b'] ?? 8453) },
]

const shown = (path: string) => `./${relative(process.cwd(), path)}`

/** Runs `epx --data DIR ...args`, printing the command as a person would type it; throws on failure. */
function epx (dir: string, ...args: string[]): string {
  console.log(`$ npx epx --data ${shown(dir)} ${args.map(a => /^[\w./:@=,+-]+$/.test(a) ? a : `'${a}'`).join(' ')}`)
  const r = spawnSync(process.execPath, [BIN, '--data', dir, ...args], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`epx ${args.join(' ')} failed (exit ${r.status}):\n${r.stderr}${r.stdout}`)
  return r.stdout
}

function configure (i: Instance, connectionString: string): void {
  const file = join(i.dir, 'epx.config.json')
  const settings = JSON.parse(readFileSync(file, 'utf8')) as { plugin: Record<string, Record<string, unknown>> }
  settings.plugin.store = { kind: 'postgres', path: 'epx-replica.lmdb', postgres: { connectionString } }
  settings.plugin.metrics = { enabled: true, port: 0 }
  settings.plugin.console = { enabled: true, port: consolePort(i) }
  writeFileSync(file, JSON.stringify(settings, null, 2) + '\n')
}

interface Running { readonly child: ChildProcess; readonly port: number; readonly readyz: string; readonly console: string }

/** `epx start` in the background, its output in <dir>/epx.log; resolves once its API listens. */
function start (i: Instance): Promise<Running> {
  console.log(`$ npx epx --data ${shown(i.dir)} start --port ${i.port}   # in the background, log: ${shown(join(i.dir, 'epx.log'))}`)
  const child = spawn(process.execPath, [BIN, '--data', i.dir, 'start', '--port', String(i.port)], { stdio: ['ignore', 'pipe', 'pipe'] })
  const log = createWriteStream(join(i.dir, 'epx.log'))
  child.stdout.pipe(log)
  child.stderr.pipe(log)
  return new Promise((resolve, reject) => {
    let seen = ''
    const onData = (d: Buffer) => {
      seen += d.toString()
      const api = /epx API listening on https:\/\/[^/]*:(\d+)\//.exec(seen)
      const metrics = /metrics, health and readiness on (http:\/\/\S+\/)metrics/.exec(seen)
      const web = /epx web console on (https:\/\/\S+)/.exec(seen)
      if (api && metrics && web) { child.stdout.off('data', onData); resolve({ child, port: Number(api[1]), readyz: `${metrics[1]}readyz`, console: web[1]! }) }
    }
    child.stdout.on('data', onData)
    child.on('exit', code => reject(new Error(`instance ${i.name} exited (code ${code}) before listening; see ${join(i.dir, 'epx.log')}:\n${seen.split('\n').slice(-10).join('\n')}`)))
  })
}

async function main (): Promise<void> {
  console.log('Starting a throwaway PostgreSQL cluster (initdb, pg_ctl; a Unix socket, no TCP port)...')
  const cluster = startPostgres()
  const children: ChildProcess[] = []
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    console.log('\nstopping both instances, then the database...')
    await Promise.all(children.filter(c => c.exitCode === null && c.signalCode === null).map(c => new Promise(resolve => {
      c.once('exit', resolve)
      c.kill('SIGTERM')
      setTimeout(() => c.kill('SIGKILL'), 10_000).unref()
    })))
    cluster.destroy()
    process.exit(0)
  }
  process.on('SIGINT', () => { void stop() })
  process.on('SIGTERM', () => { void stop() })
  try {
    cluster.createDatabase('epx')
    const url = cluster.url('epx')
    console.log(`PostgreSQL: ${url}\n`)

    rmSync(HOME, { recursive: true, force: true })
    const [a, b] = instances as [Instance, Instance]
    epx(a.dir, 'init')
    // One PKI for both: a BSP's certificate is trusted by each, and each serves the same server certificate.
    mkdirSync(b.dir, { recursive: true })
    console.log(`$ cp -r ${shown(join(a.dir, 'pki'))} ${shown(join(b.dir, 'pki'))}`)
    cpSync(join(a.dir, 'pki'), join(b.dir, 'pki'), { recursive: true })
    epx(b.dir, 'init')
    for (const i of instances) configure(i, url)
    console.log(`(both epx.config.json: "store": { "kind": "postgres", "path": "epx-replica.lmdb", "postgres": { "connectionString": "${url}" } }, "console": { "enabled": true, "port": ${consolePort(a)} or ${consolePort(b)} })`)
    epx(a.dir, 'store', 'migrate')
    epx(a.dir, 'company', 'add', COMPANY, '--name', 'Demo BSP', '--cert-subject', 'CN=demo-bsp,O=Demo BSP')
    const bundle = join(HOME, 'bsp')
    epx(a.dir, 'cert', 'issue', COMPANY, '--out', shown(bundle))
    const token = (scope: string) => JSON.parse(epx(a.dir, 'token', 'create', '--company', COMPANY, '--scope', scope, '--json')) as { id: string; token: string }
    const { token: inbound, id: inboundId } = token('inbound:programme-soutirage')
    const { token: outbound } = token('outbound:besoins-agreges')
    // The password is the last line; one account for both consoles (the database holds accounts and sessions).
    const password = epx(a.dir, 'user', 'add', 'admin', '--admin').trim().split('\n').at(-1)!

    const tomorrow = addDays(parisDateOf(new Date()), 1)
    const site = simulatedSites(1)[0]!
    const programme = join(bundle, 'programme.json')
    writeFileSync(programme, JSON.stringify(demoProgramme(tomorrow, site, new Date()), null, 2) + '\n')
    epx(a.dir, 'publish', '--date', tomorrow)
    console.log('')
    const running: Running[] = []
    for (const i of instances) {
      running.push(await start(i))
      children.push(running.at(-1)!.child)
    }

    const tls = `--cert ${shown(join(bundle, 'client.crt'))} --key ${shown(join(bundle, 'client.key'))} --cacert ${shown(join(bundle, 'ca.crt'))}`
    const [ra, rb] = running as [Running, Running]
    const [pa, pb] = [ra.child, rb.child]
    console.log(`
Two epx instances on one database:
  A: https://localhost:${ra.port}  (pid ${pa.pid}, readiness ${ra.readyz})
  B: https://localhost:${rb.port}  (pid ${pb.pid}, readiness ${rb.readyz})

Web consoles (the browser warns about the demo's own CA: ${shown(join(a.dir, 'pki', 'ca.crt'))}):
  A: ${ra.console}
  B: ${rb.console}
  log in as admin, password ${password} (generated: the console asks for your own at the first login).
  Accounts and sessions live in the database: logged in on A, you are on B too.

Try it (company ${COMPANY}, site ${site.site_id}, target date ${tomorrow}):

# 1. POST a Programme_Soutirage to A; expect 202
curl -i ${tls} -H "Authorization: Bearer ${inbound}" -H "Content-Type: application/json" --data-binary @${shown(programme)} "https://localhost:${ra.port}${API}/programme-soutirage"

# 2. See it on B: its instructions and its status read
npx epx --data ${shown(b.dir)} instructions list --date ${tomorrow}
curl -i ${tls} -H "Authorization: Bearer ${inbound}" "https://localhost:${rb.port}${API}/programme-soutirage?site_id=${site.site_id}&target_date=${tomorrow}"

# 3. GET tomorrow's Besoins_Agreges from B (published through A's data folder)
curl -i ${tls} -H "Authorization: Bearer ${outbound}" "https://localhost:${rb.port}${API}/besoins-agreges?site_id=${site.site_id}&target_date=${tomorrow}"

# 4. Kill A, then POST to B: it answers alone
kill -9 ${pa.pid}
curl -i ${tls} -H "Authorization: Bearer ${inbound}" -H "Content-Type: application/json" --data-binary @${shown(programme)} "https://localhost:${rb.port}${API}/programme-soutirage"

# 5. Revoke the inbound token through A's data folder: B refuses it (401) within a second
npx epx --data ${shown(a.dir)} token revoke ${inboundId}
curl -i ${tls} -H "Authorization: Bearer ${inbound}" "https://localhost:${rb.port}${API}/programme-soutirage?site_id=${site.site_id}&target_date=${tomorrow}"

Logs: ${shown(join(a.dir, 'epx.log'))}, ${shown(join(b.dir, 'epx.log'))}. Ctrl+C stops both and removes the database.`)
    for (const [i, c] of children.entries()) {
      c.on('exit', (code, signal) => { if (!stopping) console.log(`instance ${instances[i]!.name} exited (${signal ?? `code ${code}`})`) })
    }
  } catch (err) {
    console.error(`demo:ha: ${(err as Error).message}`)
    for (const c of children) c.kill('SIGTERM')
    cluster.destroy()
    process.exitCode = 1
  }
}

await main()
