/**
 * From `store.postgres` (the configuration) to what `pg` connects with, and how the
 * target is named in log lines and errors. The password is read at each new connection
 * (a rotated file or variable needs no restart) and never appears in a description or an
 * error message. TLS: `verify-full` checks the server's chain against `caFile` and its
 * certificate against the configured host name (RFC 6125, Node's checkServerIdentity);
 * `require` encrypts without checking; a Unix socket or a loopback host needs neither,
 * so that is the default there.
 *
 * A cluster named by its members (`hosts`, or a connection string listing several hosts)
 * is reached through the one accepting writes (primary.ts): every client pg makes from
 * the pool configuration looks it up, and TLS checks each member's own name.
 * @module
 */
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { checkServerIdentity, type ConnectionOptions, type PeerCertificate } from 'node:tls'
import type { PoolConfig } from 'pg'
import { parseConnectionString } from './connection-string.ts'
import { connectionStringHosts, DEFAULT_PORT, formatMember, NoPrimaryError, parameterHosts, parseMember, primaryClient, StandbyError, type Member } from './primary.ts'
import type { EpxConfig } from '../../config-schema.ts'
import { inDataDir } from '../../data-dir.ts'
import { EpxError, isEpxError } from '../../errors.ts'

export type PostgresConfig = NonNullable<EpxConfig['store']['postgres']>
export type TlsMode = 'disable' | 'require' | 'verify-full'

export interface ConnectOptions {
  /** The data folder: relative file paths (password, TLS) are resolved against it. */
  readonly dataDir: string
  /** Where `passwordEnv` is looked up (default: this process's environment). */
  readonly env?: NodeJS.ProcessEnv
}

/** Host, port, database and user as `pg` will use them (a connection string parsed as pg parses it). */
export interface Target {
  /** The first member's. */
  readonly host: string
  readonly port: number
  /** Every member, in the configured order: one unless `hosts` or the connection string lists several. */
  readonly members: readonly Member[]
  /** Whether a connection looks for the member accepting writes (`hosts`, or several hosts in the connection string). */
  readonly primaryOnly: boolean
  readonly database: string | undefined
  readonly user: string | undefined
  /** Other parameters of the connection string (application_name, options…), passed on to pg. */
  readonly extra: Readonly<Record<string, string>>
}

/** The configuration as `pg` reads it; loadConfig has checked every member's syntax. */
export function target (pg: PostgresConfig): Target {
  if (pg.connectionString === undefined) {
    const members = pg.hosts?.map(h => parseMember(h)) ?? [{ host: pg.host ?? 'localhost', port: pg.port ?? DEFAULT_PORT }]
    return { ...members[0]!, members, primaryOnly: pg.hosts !== undefined, database: pg.database, user: pg.user, extra: {} }
  }
  const listed = connectionStringHosts(pg.connectionString)
  const { host, port, database, user, password: _password, ssl: _ssl, target_session_attrs: _attrs, ...rest } = parseConnectionString(listed.single)
  const extra: Record<string, string> = {}
  for (const [k, v] of Object.entries(rest)) if (typeof v === 'string' && !k.startsWith('ssl')) extra[k] = v
  const members = listed.members ?? parameterHosts(host || 'localhost', port ?? undefined) ??
    [{ host: host || 'localhost', port: port ? Number(port) : DEFAULT_PORT }]
  return {
    ...members[0]!,
    members,
    primaryOnly: members.length > 1,
    database: database || undefined,
    user: user || undefined,
    extra,
  }
}

export function isUnixSocket (host: string): boolean {
  return host.startsWith('/')
}

export function isLoopback (host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  return h === 'localhost' || h === '::1' || (isIP(h) === 4 && h.startsWith('127.'))
}

/** The configured TLS mode, or the default for the host: none on a socket or loopback, verify-full elsewhere. */
export function tlsMode (pg: PostgresConfig): TlsMode {
  if (pg.tls.mode) return pg.tls.mode
  return target(pg).members.every(m => isUnixSocket(m.host) || isLoopback(m.host)) ? 'disable' : 'verify-full'
}

/** One member for a log line or an error. */
export function describeMember (m: Member): string {
  return isUnixSocket(m.host) ? `the Unix socket in ${m.host} (port ${m.port})` : formatMember(m)
}

/**
 * The target for a log line or an error: where, which database, as whom, with what TLS.
 * Never the password (it is not even read here).
 */
export function describeTarget (pg: PostgresConfig): string {
  const t = target(pg)
  const where = t.primaryOnly ? `the member accepting writes of ${t.members.map(describeMember).join(', ')}` : describeMember(t)
  const tls = tlsMode(pg)
  return `database ${t.database ?? t.user ?? '(default)'} on ${where} as ${t.user ?? '(the default user)'}, ${tls === 'disable' ? 'no TLS' : `TLS ${tls}`}`
}

/** Where the password comes from, said as the operator configured it. */
function passwordSource (pg: PostgresConfig, opts: ConnectOptions): string {
  if (pg.passwordFile !== undefined) return `the file ${inDataDir(opts.dataDir, pg.passwordFile)} (store.postgres.passwordFile)`
  if (pg.passwordEnv !== undefined) return `the environment variable ${pg.passwordEnv} (store.postgres.passwordEnv)`
  return 'no password configured: set store.postgres.passwordFile or store.postgres.passwordEnv'
}

/** Reads the configured password now; undefined when none is configured (certificate, peer or trust authentication). */
export function readPassword (pg: PostgresConfig, opts: ConnectOptions): string | undefined {
  const fail = (why: string) => new EpxError('EPX_STORE_CONNECT_FAILED', [describeTarget(pg), why])
  if (pg.passwordFile !== undefined) {
    const file = inDataDir(opts.dataDir, pg.passwordFile)
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      throw fail(`cannot read the password file ${file} (store.postgres.passwordFile): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
    const password = text.split(/\r?\n/)[0]!
    if (!password) throw fail(`the password file ${file} (store.postgres.passwordFile) is empty; its first line is the password`)
    return password
  }
  if (pg.passwordEnv !== undefined) {
    const password = (opts.env ?? process.env)[pg.passwordEnv]
    if (!password) throw fail(`the environment variable ${pg.passwordEnv} (store.postgres.passwordEnv) is not set or empty`)
    return password
  }
  return undefined
}

function readTlsFile (pg: PostgresConfig, opts: ConnectOptions, key: 'caFile' | 'certFile' | 'keyFile'): string | undefined {
  const path = pg.tls[key]
  if (path === undefined) return undefined
  const file = inDataDir(opts.dataDir, path)
  try {
    return readFileSync(file, 'utf8')
  } catch (err) {
    throw new EpxError('EPX_STORE_CONNECT_FAILED', [describeTarget(pg),
      `cannot read store.postgres.tls.${key} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`])
  }
}

/** The `ssl` option of pg for the configured mode and one host (TLS files are read now, once for every host). */
function sslOptions (pg: PostgresConfig, opts: ConnectOptions): (host: string) => false | ConnectionOptions {
  const mode = tlsMode(pg)
  if (mode === 'disable') return () => false
  const ca = readTlsFile(pg, opts, 'caFile')
  const cert = readTlsFile(pg, opts, 'certFile')
  const key = readTlsFile(pg, opts, 'keyFile')
  const files = { ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }) }
  if (mode === 'require') return () => ({ ...files, rejectUnauthorized: false, checkServerIdentity: () => undefined })
  // The name checked is the configured one, whatever address it resolved to.
  return host => ({ ...files, rejectUnauthorized: true, checkServerIdentity: (_servername: string, cert: PeerCertificate) => checkServerIdentity(host, cert) })
}

/**
 * The pool configuration for `new pg.Pool(...)`. TLS files are read now; the password at
 * each new connection.
 */
export function poolConfig (pg: PostgresConfig, opts: ConnectOptions): PoolConfig {
  const t = target(pg)
  const hasPassword = pg.passwordFile !== undefined || pg.passwordEnv !== undefined
  const ssl = sslOptions(pg, opts)
  return {
    application_name: 'epx',
    ...t.extra,
    host: t.host,
    port: t.port,
    ...(t.database !== undefined && { database: t.database }),
    ...(t.user !== undefined && { user: t.user }),
    ...(hasPassword && { password: () => readPassword(pg, opts)! }),
    ssl: ssl(t.host),
    max: pg.poolSize,
    statement_timeout: pg.statementTimeoutMs,
    // The server's statement_timeout does not bound a COMMIT waiting for a synchronous
    // standby (PostgreSQL docs, "Synchronous Replication"): this client-side bound does, so
    // a write whose standby is gone answers NO_STORE (503) instead of hanging; the
    // connection is then dropped, and a commit that did land comes in through the feed.
    query_timeout: pg.statementTimeoutMs + 2000,
    connectionTimeoutMillis: pg.connectTimeoutMs,
    keepAlive: true,
    ...(t.primaryOnly && {
      Client: primaryClient({ members: t.members, ssl, connectTimeoutMs: pg.connectTimeoutMs }),
      // The pool's own bound is on the whole search: each member, its connection and then
      // its recovery check, within connectTimeoutMs (the client bounds each).
      connectionTimeoutMillis: pg.connectTimeoutMs * 2 * t.members.length,
    }),
  }
}

/** Node's TLS verification codes, said as what the operator checks. */
const TLS_CODES: Readonly<Record<string, string>> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the server\'s certificate does not chain to a trusted CA: set store.postgres.tls.caFile to the CA that signed it',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'the server\'s certificate does not chain to a trusted CA: set store.postgres.tls.caFile to the CA that signed it',
  SELF_SIGNED_CERT_IN_CHAIN: 'the server\'s certificate chains to a CA that is not trusted: set store.postgres.tls.caFile to that CA',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the server\'s certificate is self-signed and not trusted: set store.postgres.tls.caFile to it',
  CERT_HAS_EXPIRED: 'the server\'s certificate has expired',
  CERT_NOT_YET_VALID: 'the server\'s certificate is not valid yet (check the clocks)',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the server\'s certificate does not name the host connected to: use the host name its certificate names',
}

/**
 * A failure to connect (or to authenticate) as EPX_STORE_CONNECT_FAILED, naming the
 * target and what to check. The password is never in it: PostgreSQL's messages do not
 * carry it, and it is masked should any text ever hold it.
 */
export function connectFailure (err: unknown, pg: PostgresConfig, opts: ConnectOptions): EpxError {
  return connectProblem(err, pg, opts) ??
    masked(new EpxError('EPX_STORE_CONNECT_FAILED', [describeTarget(pg), String((err as Error)?.message ?? err)], { cause: err }), pg, opts)
}

/**
 * EPX_STORE_CONNECT_FAILED for an error that says the connection could not be made
 * (refused, unknown host, authentication, TLS, unknown database, timeout); undefined
 * for any other error (a failed query on a connection that was made).
 */
export function connectProblem (err: unknown, pg: PostgresConfig, opts: ConnectOptions): EpxError | undefined {
  if (isEpxError(err)) return err.code === 'EPX_STORE_CONNECT_FAILED' ? err : undefined
  const t = target(pg)
  const why = err instanceof NoPrimaryError
    // Every member tried, and why each was not taken: what the operator checks next.
    ? `no member accepts writes: ${err.refusals.map(r => `${describeMember(r.member)}: ${refusal(r.error, r.member, pg, opts) ?? String((r.error as Error)?.message ?? r.error)}`).join('; ')}`
    : refusal(err, t, pg, opts)
  if (why === undefined) return undefined
  return masked(new EpxError('EPX_STORE_CONNECT_FAILED', [describeTarget(pg), why], { cause: err }), pg, opts)
}

/** Why a connection to `member` could not be made, said as what to check; undefined for an error that does not say that. */
function refusal (err: unknown, member: Member, pg: PostgresConfig, opts: ConnectOptions): string | undefined {
  const e = err as Error & { code?: string }
  const keys = pg.hosts !== undefined ? 'store.postgres.hosts' : pg.connectionString !== undefined ? 'the hosts of store.postgres.connectionString' : 'store.postgres host and port'
  switch (e?.code) {
    case '28P01':
      return `password authentication failed for user ${target(pg).user ?? '(default)'}: check the password in ${passwordSource(pg, opts)}`
    case '28000':
      return `${e.message}: the server's pg_hba.conf does not let this user in from here (or with this method)`
    case '3D000':
      return `${e.message}: create it (createdb), then run \`epx store migrate\``
    case 'ECONNREFUSED':
    case 'ENOENT':
      return `nothing answers there (${e.code}): is the server running, are ${keys} right?`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the host name ${member.host} does not resolve (${e.code})`
  }
  if (err instanceof StandbyError) return err.message
  if (e?.code && TLS_CODES[e.code]) return `${TLS_CODES[e.code]} (${e.code})`
  if (/does not support SSL/.test(String(e?.message))) return 'the server does not offer TLS: turn ssl on in its postgresql.conf, or set store.postgres.tls.mode to "disable" on a trusted network'
  if (/connection timeout|timeout expired/i.test(String(e?.message))) return `no connection within ${pg.connectTimeoutMs} ms (store.postgres.connectTimeoutMs): is the host reachable?`
  return undefined
}

/** The error with the password masked, should its text ever hold it. */
function masked (err: EpxError, pg: PostgresConfig, opts: ConnectOptions): EpxError {
  let password: string | undefined
  try { password = readPassword(pg, opts) } catch { /* unreadable: then it is not in the text either */ }
  if (password && err.message.includes(password)) {
    return new EpxError('EPX_STORE_CONNECT_FAILED', [describeTarget(pg), err.message.split(password).join('***').replace(/^cannot connect to PostgreSQL \(.*?\): /, '')])
  }
  return err
}
