/**
 * A replica's connections to the database: pg loaded on first use (an LMDB store's
 * process never pays for it), one pool for write batches and checks, and single clients
 * for the change feed, each made with the store's connection settings.
 * @module
 */
import type { Client, Pool, PoolClient, PoolConfig } from 'pg'
import type { Logger } from '../../host/contract.ts'

export class Connections {
  readonly #options: PoolConfig
  #pool: Pool | undefined
  readonly #loaded: Promise<typeof import('pg').default>

  constructor (options: PoolConfig, where: string, log?: Logger) {
    this.#options = options
    this.#loaded = import('pg').then(m => {
      const pgm = m.default
      this.#pool = new pgm.Pool(options)
      // An idle client's connection lost (a database restart) is an 'error' on the pool: the
      // pool drops that client; without a listener it would end the process.
      this.#pool.on('error', err => log?.debug({ database: where, err }, 'an idle database connection was lost (a restart?): the pool makes a new one when needed'))
      // pg-pool stops listening to a connection's errors when it hands it out, and the
      // borrower listens only once its await resumes: an error that comes in between (the
      // server's FATAL read with the connection's first answer) would have no listener and
      // end the process. The query that uses the connection fails all the same.
      this.#pool.on('connect', client => { client.on('error', () => {}) })
      return pgm
    })
    this.#loaded.catch(() => {})
  }

  /** Resolves once pg is loaded (rejects if it cannot be). */
  loaded (): Promise<void> { return this.#loaded.then(() => {}) }

  /** A pooled client; `release(err)` drops its connection when `err` is given. */
  async checkout (): Promise<PoolClient> {
    await this.#loaded
    return this.#pool!.connect()
  }

  /**
   * Runs `fn` on a pooled client. A connection lost while checked out is an 'error' on the
   * client (the query fails too): heard here, or it would end the process; the client is
   * then dropped, not returned to the pool.
   */
  async withClient<T> (fn: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.checkout()
    let broken: Error | undefined
    const heard = (err: Error) => { broken = err }
    client.on('error', heard)
    try {
      return await fn(client)
    } catch (err) {
      broken ??= err as Error
      throw err
    } finally {
      client.off('error', heard)
      client.release(broken)
    }
  }

  /** A client of its own, not connected yet (the change feed's). */
  async newClient (): Promise<Client> {
    const Made = (this.#options.Client as typeof Client | undefined) ?? (await this.#loaded).Client
    return new Made(this.#options)
  }

  async end (): Promise<void> {
    await this.#loaded.catch(() => {})
    await this.#pool?.end().catch(() => {})
  }
}

/**
 * Ends a connection now, whatever state it is in: pg's end() waits for the server to
 * close its side, which a server that never answered does not do (its connect() then
 * never settles either), so the socket is destroyed as well.
 */
export function drop (client: Client): void {
  client.removeAllListeners('end')
  client.on('error', () => {})
  client.end().catch(() => {})
  ;(client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
}

/** The database as log lines name it when no description was given. */
export function describePool (c: PoolConfig): string {
  if (c.connectionString) {
    try {
      const u = new URL(c.connectionString)
      return `${u.hostname || u.searchParams.get('host') || 'localhost'}/${u.pathname.slice(1) || u.username}`
    } catch { return 'the configured database' }
  }
  return `${c.host ?? 'localhost'}/${c.database ?? c.user ?? ''}`
}
