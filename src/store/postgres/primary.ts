/**
 * A PostgreSQL cluster named by its members (`store.postgres.hosts`, or a connection string
 * naming several hosts) and the pg client that connects to the one accepting writes, as
 * libpq's `target_session_attrs=read-write` does: node-postgres takes one host, and without a
 * virtual address that moves, following a promoted standby would otherwise mean editing
 * every instance's configuration and restarting it.
 *
 * `primaryClient()` makes a `pg.Client` subclass, given to pg's Pool as its `Client` option
 * and used wherever epx makes a client: its `connect()` tries the members in turn (the one
 * that was the primary last first, then the configured order, those passed over lately
 * last), each within the connect timeout, and keeps the first whose `pg_is_in_recovery()`
 * is false. A client that later
 * meets a read-only error (25006: its server was demoted behind it) ends, and the next
 * connection looks the primary up again.
 * @module
 */
import { EventEmitter } from 'node:events'
import { createRequire } from 'node:module'
import { isIP } from 'node:net'
import type { Client, ClientConfig } from 'pg'

/** One member of the cluster: a host name or address, or the folder of a Unix socket. */
export interface Member {
  readonly host: string
  readonly port: number
}

export const DEFAULT_PORT = 5432

const HOST_NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_][A-Za-z0-9_-]{0,62})*\.?$/

/**
 * `host`, `host:port`, `[IPv6]`, `[IPv6]:port`, or a Unix socket's folder (an absolute path,
 * `:port` optional). Throws an Error saying what is wrong with it.
 */
export function parseMember (text: string, defaultPort = DEFAULT_PORT): Member {
  let host: string
  let port: string | undefined
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(text)
  if (bracketed) {
    host = bracketed[1]!
    port = bracketed[2]
    if (isIP(host) !== 6) throw new Error(`"${text}": only an IPv6 address is written in brackets`)
  } else if (text.startsWith('/')) {
    const m = /^(\/[^:]*)(?::(.*))?$/.exec(text)!
    host = m[1]!
    port = m[2]
  } else {
    if (text === '') throw new Error('an empty host')
    const colons = text.split(':').length - 1
    if (colons > 1) throw new Error(`"${text}": an IPv6 address is written in brackets, with its port after them: [2001:db8::1]:5432`)
    ;[host, port] = colons ? [text.slice(0, text.indexOf(':')), text.slice(text.indexOf(':') + 1)] : [text, undefined]
    if (!(isIP(host) === 4 || HOST_NAME.test(host))) throw new Error(`"${text}": ${host === '' ? 'no host before the port' : `${host} is not a host name or address`}`)
  }
  return { host, port: port === undefined ? defaultPort : parsePort(port, text) }
}

function parsePort (port: string, text: string): number {
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    throw new Error(`"${text}": ${port === '' ? 'an empty port' : `the port ${port} is not a number from 1 to 65535`}`)
  }
  return Number(port)
}

/** A member as it is written in `hosts`. */
export function formatMember (m: Member): string {
  return `${isIP(m.host) === 6 ? `[${m.host}]` : m.host}:${m.port}`
}

/**
 * The members a connection string names when it names several: in its authority
 * (`postgresql://user@h1:5432,h2:5433/db`, as libpq writes it; pg-connection-string reads
 * one host only) or in its `host` and `port` parameters (`?host=h1,h2&port=5432,5433`, one
 * port for all or one each). `single` is the string with the authority's list replaced by
 * one host, for pg-connection-string to read the rest. Throws on a malformed member.
 */
export function connectionStringHosts (connectionString: string): { members: Member[] | undefined; single: string } {
  const m = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/s.exec(connectionString)
  if (!m || !m[3]!.includes(',')) return { members: undefined, single: connectionString }
  const members = m[3]!.split(',').map(text => parseMember(decodeURIComponent(text)))
  return { members, single: `${m[1]}${m[2] ?? ''}localhost${m[4]}` }
}

/** The members of the `host` and `port` parameters pg-connection-string read, when the host lists several. */
export function parameterHosts (host: string, port: string | undefined): Member[] | undefined {
  if (!host.includes(',')) return undefined
  const hosts = host.split(',')
  const ports = port ? port.split(',') : []
  if (ports.length > 1 && ports.length !== hosts.length) throw new Error(`${hosts.length} hosts but ${ports.length} ports: give one port for all, or one for each host`)
  return hosts.map((h, i) => {
    const p = ports.length > 1 ? ports[i]! : ports[0]
    // A parameter's IPv6 address goes without brackets, as libpq reads it.
    const member = parseMember(isIP(h) === 6 ? `[${h}]` : h)
    return p === undefined || p === '' ? member : { host: member.host, port: parsePort(p, `${h} (port ${p})`) }
  })
}

/** What a member answered when it was not taken. */
export interface Refusal {
  readonly member: Member
  readonly error: unknown
}

/** The member answered, and is a standby: it does not accept writes. */
export class StandbyError extends Error {
  constructor () {
    super('a standby (pg_is_in_recovery() is true): it does not accept writes')
    this.name = 'StandbyError'
  }
}

/** No member accepts writes: what each answered, in the order tried. */
export class NoPrimaryError extends Error {
  readonly refusals: readonly Refusal[]
  constructor (refusals: readonly Refusal[]) {
    super(`no member accepts writes: ${refusals.map(r => `${formatMember(r.member)}: ${(r.error as Error)?.message ?? String(r.error)}`).join('; ')}`)
    this.name = 'NoPrimaryError'
    this.refusals = refusals
  }
}

export interface PrimaryOptions {
  /** The members, in the order they are tried (after the last primary). */
  readonly members: readonly Member[]
  /** pg's `ssl` option for one member: a certificate is checked against that member's own name. */
  readonly ssl: (host: string) => ClientConfig['ssl']
  /** Each member's connection, and then its recovery check, within this. */
  readonly connectTimeoutMs: number
}

/** SQLSTATE read_only_sql_transaction: a write reached a standby. */
const READ_ONLY = '25006'

/**
 * A `pg.Client` class whose `connect()` connects to the member accepting writes (see the
 * module's comment). Members share what the last connection found: one class per
 * configured cluster, for its pool, feed and leadership clients alike.
 */
export function primaryClient (o: PrimaryOptions): typeof Client {
  if (o.members.length === 0) throw new Error('primaryClient needs at least one member')
  // pg loaded here, not on import: the configuration's checks use this module's parsers.
  const Base = (createRequire(import.meta.url)('pg') as typeof import('pg')).Client
  const baseQuery = Base.prototype.query as (this: Client, ...args: unknown[]) => unknown
  const baseEnd = Base.prototype.end as (this: Client, callback?: (err: Error) => void) => Promise<void> | undefined
  const emitterKeys = new Set(Object.keys(new EventEmitter()))
  /** Where the last connection found the primary. */
  let primary: Member | undefined
  /**
   * When each member was last passed over. Tried after the others: a host that does not
   * answer at all would otherwise take a caller's whole wait (the leadership's is shorter
   * than one connect timeout) at every search, and the members after it never be reached.
   */
  const passedOver = new Map<Member, number>()

  class PrimaryClient extends Base {
    readonly #config: ClientConfig
    #closed = false
    /** Fails the connection attempt in progress (end() called meanwhile: pg would never answer it). */
    #abort: ((err: Error) => void) | undefined

    constructor (config?: string | ClientConfig) {
      const c = typeof config === 'object' && config !== null ? config : {}
      super(c)
      this.#config = c
      this.#aim(o.members[0]!)
    }

    /**
     * This client's state as a new, never connected pg client pointed at `member` has it:
     * pg's Client connects once, so each member tried starts afresh. The listeners set on
     * this client (the pool's, the caller's) stay.
     */
    #aim (member: Member): void {
      const fresh = new Base({ ...this.#config, host: member.host, port: member.port, ssl: o.ssl(member.host), connectionTimeoutMillis: o.connectTimeoutMs })
      const self = this as unknown as Record<string, unknown>
      for (const key of Object.keys(fresh)) if (!emitterKeys.has(key)) self[key] = (fresh as unknown as Record<string, unknown>)[key]
      self.readyForQuery = false
    }

    /** Lets the current connection go without a word to this client's listeners: it was only tried. */
    #drop (): void {
      const self = this as unknown as { connection: EventEmitter & { end(): void; stream?: { destroy(): void } }; connectionTimeoutHandle?: NodeJS.Timeout; _connected: boolean }
      const con = self.connection
      con.removeAllListeners()
      con.on('error', () => {})
      clearTimeout(self.connectionTimeoutHandle)
      try {
        if (self._connected) con.end()
        else con.stream?.destroy()
      } catch { /* already closed */ }
    }

    #attempt (): Promise<void> {
      return new Promise((resolve, reject) => {
        this.#abort = reject
        super.connect((err: Error | null) => {
          this.#abort = undefined
          if (!err) return resolve()
          // At once: pg reports the socket's close right after its error, to this client.
          this.#drop()
          reject(err)
        })
      })
    }

    async #connectToPrimary (): Promise<this> {
      const rank = (m: Member): number => m === primary ? -1 : passedOver.get(m) ?? 0
      const order = [...o.members].sort((a, b) => rank(a) - rank(b))
      const refusals: Refusal[] = []
      for (const member of order) {
        if (this.#closed) break
        this.#aim(member)
        let error: unknown
        try {
          await this.#attempt()
          const r = await baseQuery.call(this, { text: 'SELECT pg_is_in_recovery() AS standby', query_timeout: o.connectTimeoutMs }) as { rows: Array<{ standby: boolean }> }
          if (r.rows[0]?.standby === false) {
            primary = member
            passedOver.delete(member)
            return this
          }
          error = new StandbyError()
        } catch (err) {
          error = err
        }
        if (primary === member) primary = undefined
        passedOver.set(member, Date.now())
        // Ended meanwhile: end() waits for this connection's close, which is then its own.
        if (this.#closed) break
        this.#drop()
        refusals.push({ member, error })
      }
      if (this.#closed) throw new Error('Connection terminated')
      this.#aim(o.members[0]!)
      throw new NoPrimaryError(refusals)
    }

    override connect (): Promise<Client>
    override connect (callback: ((err: Error) => void) | ((err: null, c: Client) => void)): void
    override connect (callback?: ((err: Error) => void) | ((err: null, c: Client) => void)): Promise<Client> | undefined {
      const connected = this.#connectToPrimary()
      if (!callback) return connected
      const done = callback as (err: Error | null, c?: Client) => void
      connected.then(c => done(null, c), (err: Error) => done(err))
      return undefined
    }

    override end (): Promise<void>
    override end (callback: (err: Error) => void): void
    override end (callback?: (err: Error) => void): Promise<void> | undefined {
      this.#closed = true
      const abort = this.#abort
      this.#abort = undefined
      const ended = baseEnd.call(this, callback)
      if (abort) {
        // Not yet connected: pg's end() would wait for a member that may never answer to close.
        (this as unknown as { connection: { stream?: { destroy(): void } } }).connection.stream?.destroy()
        abort(new Error('Connection terminated'))
      }
      return ended
    }

    override query (...args: unknown[]): never {
      const result = baseQuery.apply(this, args)
      if (result instanceof Promise) {
        result.catch((err: { code?: string }) => {
          if (err?.code !== READ_ONLY) return
          // This server was demoted behind the connection: the next one looks the primary up.
          if (primary && primary.host === this.host && primary.port === this.port) primary = undefined
          this.end().catch(() => {})
        })
      }
      return result as never
    }
  }
  return PrimaryClient
}
