/**
 * A throwaway PostgreSQL cluster, for the tests that need the real server, the bench's E-pg
 * and `npm run demo:ha` (here, below all three: docs/development.md "bench/, test/ and
 * scripts/"): `initdb`'s data folder (made once, then copied: `initialData`) in a
 * temporary folder, `pg_ctl start` listening on a Unix socket
 * only (no TCP port, no system service). Debian's `postgresql` package keeps its binaries off the PATH
 * (/usr/lib/postgresql/<major>/bin); `initdb` refuses root, so as root the cluster is made
 * and run by the `postgres` user in a folder it owns.
 *
 * `startPostgres(settings, { password })` makes the superuser authenticate with that
 * password (SCRAM-SHA-256, on the socket and TCP alike) instead of trust;
 * `{ tls: { cert, key } }` also listens on 127.0.0.1 at a free port with `ssl=on` and that
 * server certificate (PEM), for tests of what a client verifies.
 *
 * `{ standbyOf: primary }` makes a streaming standby of `primary` instead of a new cluster
 * (pg_basebackup -R over the primary's socket), for tests of following a promotion:
 * `crash()` stops a server at once (`pg_ctl stop -m immediate`), `promote()` makes a
 * standby the primary.
 *
 * A test that needs PostgreSQL fails with the reason when the server binaries are
 * missing: it never skips, so CI cannot turn green without them (`.ci/run` installs the
 * package).
 * @module
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface PostgresCluster {
  /** The folder holding the socket: what `pg` takes as `host`. */
  readonly socketDir: string
  readonly port: number
  /** The superuser the tests connect as (trust authentication on the socket, unless a password was given). */
  readonly user: string
  /** The superuser's password, when the cluster was started with one. */
  readonly password?: string
  /** With `tls`: the loopback address and port it listens on with TLS too. */
  readonly tcp?: { readonly host: string; readonly port: number }
  /** Connection settings for `pg` (`new Client(cluster.connection('db'))`), over the socket. */
  connection(database?: string): { host: string; port: number; user: string; database: string; password?: string }
  /** A `postgresql://` URL over the socket, for configurations and child processes. */
  url(database?: string): string
  /** A new empty database (its name, checked to be a plain identifier). */
  createDatabase(name: string): void
  /** Runs SQL through psql as the superuser; returns its unaligned, tuples-only output. */
  psql(sql: string, database?: string): string
  /** `pg_ctl stop -m fast`: every connection is cut, as a database restart does. */
  stop(): void
  /** `pg_ctl stop -m immediate`: the server dies as in a crash (no shutdown checkpoint). */
  crash(): void
  /** `pg_ctl promote`: a standby becomes a primary (returns once it accepts writes). */
  promote(): void
  start(): void
  restart(): void
  /**
   * SIGSTOP to the postmaster and every backend, as a frozen server (a VM paused, a disk
   * that hangs): connections stay open and nothing answers. Returns the thaw (SIGCONT).
   */
  freeze(): () => void
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

function run (cmd: string, args: string[], what: string, env?: NodeJS.ProcessEnv): string {
  const [c, a] = asOwner(cmd, args)
  const r = spawnSync(c, a, { encoding: 'utf8', env: env ? { ...process.env, ...env } : undefined })
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}): ${(r.stderr || r.stdout || String(r.error)).trim()}`)
  return r.stdout
}

export interface ClusterOptions {
  /** The superuser's password: SCRAM-SHA-256 authentication instead of trust. */
  readonly password?: string
  /** A server certificate and key (PEM): listen on 127.0.0.1 too, at a free port, with ssl=on. */
  readonly tls?: { readonly cert: string; readonly key: string }
  /** A streaming standby of this (socket-only, trust) cluster, copied with pg_basebackup. */
  readonly standbyOf?: PostgresCluster
}

const INITDB = ['-E', 'UTF8', '--locale=C', '--no-sync']

/**
 * A data folder as `initdb` makes it with trust authentication, made once per machine and
 * PostgreSQL installation (in the temp folder, named after the binaries' folder and the
 * options) and copied for each new cluster: initdb took ~1 s of CPU and 2 s on a loaded
 * machine, and `npm test` starts ~40 clusters; a copy takes a tenth of that. Made aside
 * and renamed into place, so a process that finds it finds it whole, whichever of two
 * processes making it at once wins.
 */
function initialData (bin: string): string {
  const key = createHash('sha256').update(JSON.stringify([bin, INITDB, process.getuid?.()])).digest('hex').slice(0, 16)
  const folder = join(tmpdir(), `epx-pg-initdb-${key}`)
  const data = join(folder, 'data')
  if (existsSync(join(data, 'PG_VERSION'))) return data
  const making = mkdtempSync(`${folder}-making-`)
  if (isRoot()) chownSync(making, ...postgresIds())
  chmodSync(making, 0o700)
  try {
    run(join(bin, 'initdb'), ['-D', join(making, 'data'), '-U', 'postgres', '--auth=trust', ...INITDB], 'initdb')
    renameSync(making, folder)
  } catch (err) {
    rmSync(making, { recursive: true, force: true })
    // Another process renamed its own into place first: that one serves.
    if (!existsSync(join(data, 'PG_VERSION'))) throw err
  }
  return data
}

/** The `postgres` user's uid and gid (the owner of every cluster when we are root). */
function postgresIds (): [number, number] {
  return [Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()), Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())]
}

/** A TCP port free on 127.0.0.1 now (the kernel's pick, released at once). */
function freePort (): number {
  const r = spawnSync(process.execPath, ['-e',
    "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})"],
  { encoding: 'utf8' })
  const port = Number(r.stdout)
  if (!port) throw new Error(`no free port on 127.0.0.1: ${r.stderr}`)
  return port
}

/**
 * Makes and starts a cluster. `settings` are extra `-c name=value` server settings
 * (e.g. `{ fsync: 'off' }` for a test that does not test durability).
 */
export function startPostgres (settings: Record<string, string> = {}, opts: ClusterOptions = {}): PostgresCluster {
  const bin = postgresBinDir()
  const root = mkdtempSync(join(tmpdir(), 'epx-pg-'))
  if (isRoot()) chownSync(root, ...postgresIds())
  chmodSync(root, 0o700)
  const owned = (file: string, text: string) => {
    writeFileSync(file, text, { mode: 0o600 })
    if (isRoot()) chownSync(file, ...postgresIds())
  }
  const data = join(root, 'data')
  const tcp = opts.tls ? { host: '127.0.0.1', port: freePort() } : undefined
  // The socket's name carries the port: a TCP listener needs a port nobody else has.
  const port = tcp?.port ?? 5432
  const auth = ['--auth=trust']
  if (opts.password !== undefined) {
    owned(join(root, 'pwfile'), opts.password + '\n')
    auth.splice(0, 1, '--auth=scram-sha-256', `--pwfile=${join(root, 'pwfile')}`)
  }
  if (opts.standbyOf) {
    // -R: standby.signal and primary_conninfo (over the primary's socket) written in.
    run(join(bin, 'pg_basebackup'), ['-D', data, '-h', opts.standbyOf.socketDir, '-p', String(opts.standbyOf.port), '-U', 'postgres', '-X', 'stream', '-R', '--checkpoint=fast', '--no-sync'], 'pg_basebackup')
  } else if (opts.password === undefined) {
    run('cp', ['-a', initialData(bin), data], 'copying the initial data folder')
  } else {
    run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', ...auth, ...INITDB], 'initdb')
  }
  const tlsSettings: string[] = []
  if (opts.tls) {
    owned(join(root, 'server.crt'), opts.tls.cert)
    owned(join(root, 'server.key'), opts.tls.key)
    tlsSettings.push('-c ssl=on', `-c ssl_cert_file=${join(root, 'server.crt')}`, `-c ssl_key_file=${join(root, 'server.key')}`)
  }
  const options = [
    `-c listen_addresses=${tcp ? tcp.host : "''"}`, `-k ${root}`, `-p ${port}`, ...tlsSettings,
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
    run(join(bin, 'psql'), ['-h', root, '-p', String(port), '-U', 'postgres', '-d', database, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-c', sql], 'psql',
      opts.password === undefined ? undefined : { PGPASSWORD: opts.password })
  let destroyed = false
  const frozen = new Set<() => void>()
  return {
    socketDir: root,
    port,
    user: 'postgres',
    ...(opts.password !== undefined && { password: opts.password }),
    ...(tcp && { tcp }),
    connection: (database = 'postgres') => ({ host: root, port, user: 'postgres', database, ...(opts.password !== undefined && { password: opts.password }) }),
    url: (database = 'postgres') => `postgresql://postgres@/${database}?host=${encodeURIComponent(root)}&port=${port}`,
    createDatabase (name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`)
      psql(`CREATE DATABASE ${name}`)
    },
    psql,
    stop,
    crash () { ctl('stop', '-w', '-m', 'immediate') },
    promote () { ctl('promote', '-w', '-t', '30') },
    start,
    restart () { stop(); start() },
    freeze () {
      const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
      const children = spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number)
      const pids = [postmaster, ...children]
      for (const pid of pids) process.kill(pid, 'SIGSTOP')
      let thawed = false
      const thaw = () => {
        if (thawed) return
        thawed = true
        for (const pid of pids) { try { process.kill(pid, 'SIGCONT') } catch { /* gone */ } }
      }
      frozen.add(thaw)
      return thaw
    },
    destroy () {
      if (destroyed) return
      destroyed = true
      for (const thaw of frozen) thaw()
      try { stop() } catch { /* already stopped */ }
      rmSync(root, { recursive: true, force: true })
    },
  }
}
