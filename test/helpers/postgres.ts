/**
 * A throwaway PostgreSQL cluster for the tests that need the real server: `initdb` into a
 * temporary folder, `pg_ctl start` listening on a Unix socket only (no TCP port, no
 * system service). Debian's `postgresql` package keeps its binaries off the PATH
 * (/usr/lib/postgresql/<major>/bin); `initdb` refuses root, so as root the cluster is made
 * and run by the `postgres` user in a folder it owns.
 *
 * A test that needs PostgreSQL fails with the reason when the server binaries are
 * missing: it never skips, so CI cannot turn green without them (`.ci/run` installs the
 * package).
 * @module
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface PostgresCluster {
  /** The folder holding the socket: what `pg` takes as `host`. */
  readonly socketDir: string
  readonly port: number
  /** The superuser the tests connect as (trust authentication on the socket). */
  readonly user: string
  /** Connection settings for `pg` (`new Client(cluster.connection('db'))`). */
  connection(database?: string): { host: string; port: number; user: string; database: string }
  /** A `postgresql://` URL over the socket, for configurations and child processes. */
  url(database?: string): string
  /** A new empty database (its name, checked to be a plain identifier). */
  createDatabase(name: string): void
  /** Runs SQL through psql as the superuser; returns its unaligned, tuples-only output. */
  psql(sql: string, database?: string): string
  /** `pg_ctl stop -m fast`: every connection is cut, as a database restart does. */
  stop(): void
  start(): void
  restart(): void
  /** Stops the cluster and removes its folder. */
  destroy(): void
}

/** Where the server binaries are: $EPX_PG_BIN, the PATH, or Debian's newest major. */
export function postgresBinDir (): string {
  const fromEnv = process.env.EPX_PG_BIN
  if (fromEnv && existsSync(join(fromEnv, 'initdb'))) return fromEnv
  const debian = '/usr/lib/postgresql'
  if (existsSync(debian)) {
    const majors = readdirSync(debian).filter((d) => /^\d+$/.test(d)).sort((a, b) => Number(b) - Number(a))
    for (const m of majors) if (existsSync(join(debian, m, 'bin', 'initdb'))) return join(debian, m, 'bin')
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' })
  if (which.status === 0 && which.stdout.trim()) return join(which.stdout.trim(), '..')
  throw new Error('PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian\'s `postgresql` package (apt-get install postgresql) or set EPX_PG_BIN to their folder')
}

const isRoot = (): boolean => process.getuid?.() === 0

/** The command line run as the cluster's owner: `postgres` when we are root. */
function asOwner (cmd: string, args: string[]): [string, string[]] {
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]
}

function run (cmd: string, args: string[], what: string): string {
  const [c, a] = asOwner(cmd, args)
  const r = spawnSync(c, a, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}): ${(r.stderr || r.stdout || String(r.error)).trim()}`)
  return r.stdout
}

/**
 * Makes and starts a cluster. `settings` are extra `-c name=value` server settings
 * (e.g. `{ fsync: 'off' }` for a test that does not test durability).
 */
export function startPostgres (settings: Record<string, string> = {}): PostgresCluster {
  const bin = postgresBinDir()
  const root = mkdtempSync(join(tmpdir(), 'epx-pg-'))
  if (isRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    chownSync(root, uid, gid)
  }
  chmodSync(root, 0o700)
  const data = join(root, 'data')
  const port = 5432
  run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'], 'initdb')
  const options = [
    `-c listen_addresses=''`, `-k ${root}`, `-p ${port}`,
    ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`),
  ].join(' ')
  const log = join(root, 'server.log')
  const ctl = (...args: string[]) => run(join(bin, 'pg_ctl'), ['-D', data, ...args], `pg_ctl ${args[0]}`)
  const start = () => {
    try {
      ctl('start', '-w', '-t', '30', '-o', options, '-l', log)
    } catch (err) {
      const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-15).join('\n') : ''
      throw new Error(`${(err as Error).message}\n${tail}`)
    }
  }
  const stop = () => { ctl('stop', '-w', '-m', 'fast') }
  start()
  const psql = (sql: string, database = 'postgres'): string =>
    run(join(bin, 'psql'), ['-h', root, '-p', String(port), '-U', 'postgres', '-d', database, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-c', sql], 'psql')
  let destroyed = false
  return {
    socketDir: root,
    port,
    user: 'postgres',
    connection: (database = 'postgres') => ({ host: root, port, user: 'postgres', database }),
    url: (database = 'postgres') => `postgresql://postgres@/${database}?host=${encodeURIComponent(root)}&port=${port}`,
    createDatabase (name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`)
      psql(`CREATE DATABASE ${name}`)
    },
    psql,
    stop,
    start,
    restart () { stop(); start() },
    destroy () {
      if (destroyed) return
      destroyed = true
      try { stop() } catch { /* already stopped */ }
      rmSync(root, { recursive: true, force: true })
    },
  }
}
