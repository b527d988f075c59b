/**
 * The change feed: how a replica follows the database. A connection of its own LISTENs,
 * catches up on each notification and on a slow poll (a lost notification is caught up
 * within it), and tells `onApplied` listeners what other writers changed. While it is
 * down the store answers NO_STORE (a stale replica must not answer): the availability
 * cell, read by the door's worker too, says so; it reconnects with backoff, one error
 * line per outage and one when it ends (fault-log.ts).
 * @module
 */
import type { Key } from 'lmdb'
import type { Client } from 'pg'
import type { Logger } from '../../host/contract.ts'
import type { AppliedChanges } from '../engine.ts'
import { createFaultLog, type FaultLog } from '../fault-log.ts'
import { drop, type Connections } from './connections.ts'
import type { LocalReplica } from './local-replica.ts'
import { checkSchema } from './migrate.ts'
import { decodeKey } from './records.ts'
import type { OwnWrites } from './own-writes.ts'
import { ensureFollowable, finishLoad } from './replica-load.ts'
import { CHANGE_CHANNEL, type RecordRow } from './schema.ts'
import { CATCH_UP_SQL } from './sql.ts'

const CATCH_UP_PAGE = 5000
const BACKOFF_MIN_MS = 100
const BACKOFF_MAX_MS = 5000

export interface ChangeFeedDeps {
  readonly local: LocalReplica
  readonly connections: Connections
  readonly own: OwnWrites
  /** [0] = 1 while the store can answer (the feed is up and caught up). */
  readonly cell: Int32Array
  readonly where: string
  readonly log?: Logger
  readonly pollMs?: number
  forgetUnsavedStructures(): void
}

export class ChangeFeed {
  readonly #d: ChangeFeedDeps
  readonly #listeners = new Set<(changes: AppliedChanges) => void>()
  readonly #episodes: FaultLog
  readonly #poll: NodeJS.Timeout
  /** The connection while it is being made: close() ends it, so no connection outlives the store. */
  #connecting: Client | undefined
  #client: Client | undefined
  #reported = 0
  /** The highest seq a notification named (a writer NOTIFYs the last seq it committed). */
  #notified = 0
  #caughtUpOnce = false
  #catching: Promise<void> | undefined
  #again = false
  #reconnectTimer: NodeJS.Timeout | undefined
  #backoff = BACKOFF_MIN_MS
  #closed = false
  #closing: () => void = () => {}
  /** pg never settles connect() when end() comes first: close() is raced with it instead. */
  readonly #whenClosed = new Promise<never>((_, reject) => { this.#closing = () => reject(new Error('the store was closed before its database answered')) })
  /** The first connection: resolves once the replica is caught up (and verified, when loaded whole). */
  readonly opened: Promise<void>

  constructor (deps: ChangeFeedDeps) {
    this.#d = deps
    this.#whenClosed.catch(() => {})
    this.#episodes = createFaultLog(deps.local.path, deps.log, Date.now, undefined, {
      failing: `the store's database is unreachable, or its change feed failed (${deps.where}): every read and write answers 503 NO_STORE until it is back; epx reconnects by itself`,
      recovered: `the store's database is reachable again (${deps.where}): reads and writes are served`,
      counted: 'failedAttempts',
    })
    this.#poll = setInterval(() => this.catchUpSoon(), deps.pollMs ?? 5000)
    this.#poll.unref?.()
    this.opened = this.#connect()
  }

  up (): boolean { return Atomics.load(this.#d.cell, 0) === 1 }

  onApplied (listener: (changes: AppliedChanges) => void): () => void {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  /** A catch-up now, or after the one running. */
  catchUpSoon (): void {
    if (this.#closed || !this.#client) return
    if (this.#catching) { this.#again = true; return }
    const client = this.#client
    this.#catching = (async () => {
      do { this.#again = false; await this.#catchUpOnce(client) } while (this.#again && !this.#closed)
    })().catch(err => this.#down(err)).finally(() => { this.#catching = undefined })
  }

  async close (): Promise<void> {
    this.#closed = true
    clearInterval(this.#poll)
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer)
    await this.#catching?.catch(() => {})
    if (this.#connecting) drop(this.#connecting)
    this.#closing()
    const client = this.#client
    this.#client = undefined
    this.#setUp(false)
    if (client) { client.removeAllListeners('end'); client.on('error', () => {}); await client.end().catch(() => {}) }
  }

  #setUp (up: boolean): void { Atomics.store(this.#d.cell, 0, up ? 1 : 0) }

  #report (rows: readonly RecordRow[]): void {
    if (!this.#caughtUpOnce || this.#listeners.size === 0) return
    const changes = new Map<string, Key[]>()
    // This process's commits, the door's worker's included (own-writes.ts): not another writer's.
    const mine = this.#d.own.mineAbove(this.#reported)
    for (const row of rows) {
      if (mine(Number(row.seq))) continue
      let keys = changes.get(row.db)
      if (!keys) changes.set(row.db, keys = [])
      keys.push(decodeKey(row.key))
    }
    if (changes.size === 0) return
    for (const l of this.#listeners) {
      try { l(changes) } catch (err) { this.#d.log?.error({ err }, 'a listener of the store\'s change feed threw') }
    }
  }

  async #catchUpOnce (client: Client): Promise<void> {
    const { local, own } = this.#d
    // Up to what was notified, every seq this process's own commits (writers take turns
    // under the lock, so no other writer's row lies inside them) and the replica holds them
    // (applied by their writer): nothing to fetch and nothing to report. The query is saved,
    // and the database's part of it, after each of the door's commits.
    const notified = this.#notified
    if (notified > this.#reported) {
      // The notification may come before its writer has noted its range: its COMMIT's
      // answer and the NOTIFY leave the database together.
      await own.settled()
      if (local.cursor() >= notified && own.coverAll(this.#reported, notified)) {
        this.#reported = notified
        return
      }
    }
    for (;;) {
      // Rows another thread of this process wrote (the door's) are in the replica already
      // (the cursor is shared): their values are not fetched again, and without a row
      // past the cursor there is no local transaction, only their report.
      const { rows } = await client.query<RecordRow>(CATCH_UP_SQL, [this.#reported, CATCH_UP_PAGE, local.cursor()])
      if (rows.length > 0) {
        if (Number(rows[rows.length - 1]!.seq) > local.cursor()) {
          local.prepare(rows)
          await local.root.transaction(() => local.applyRows(rows))
        }
        // A write of this process committing now (of any of its threads): its range is known once it settles.
        await own.settled()
        this.#report(rows)
        this.#reported = Number(rows[rows.length - 1]!.seq)
      }
      if (rows.length < CATCH_UP_PAGE) return
    }
  }

  async #connect (): Promise<void> {
    const { local, where } = this.#d
    const client = await this.#d.connections.newClient()
    client.on('error', err => { if (this.#client === client) this.#down(err) })
    client.on('end', () => { if (this.#client === client) this.#down(new Error('the connection closed')) })
    client.on('notification', msg => {
      if (this.#client !== client) return
      const seq = Number(msg.payload)
      if (seq > this.#notified) this.#notified = seq
      this.catchUpSoon()
    })
    this.#connecting = client
    try {
      if (this.#closed) throw new Error('the store was closed before it connected')
      await Promise.race([client.connect(), this.#whenClosed])
      const databaseId = await checkSchema(client, where)
      // LISTEN first: a change committed during the catch-up is notified, not missed.
      await client.query(`LISTEN ${CHANGE_CHANNEL}`)
      await ensureFollowable(this.#d, databaseId, client)
      // Reconnecting: a write batch may have applied others' rows (the cursor moved) that
      // the feed had not reported yet; they are reported now, not skipped.
      this.#reported = this.#caughtUpOnce ? Math.min(this.#reported, local.cursor()) : local.cursor()
      // What the last connection was notified of may be another database's (a failover to a copy).
      this.#notified = 0
      await this.#catchUpOnce(client)
      if (local.loading()) await finishLoad(this.#d, client, () => this.#catchUpOnce(client))
      if (this.#closed) throw new Error('the store was closed while it connected')
    } catch (err) {
      drop(client)
      throw err
    } finally {
      if (this.#connecting === client) this.#connecting = undefined
    }
    this.#client = client
    this.#caughtUpOnce = true
    this.#setUp(true)
  }

  #down (err: unknown): void {
    const client = this.#client
    this.#client = undefined
    this.#setUp(false)
    if (client) {
      client.removeAllListeners('end')
      client.on('error', () => {})
      void client.end().catch(() => {})
    }
    if (this.#closed) return
    this.#episodes.failed(err)
    if (!this.#reconnectTimer) {
      this.#reconnectTimer = setTimeout(() => { void this.#reconnect() }, this.#backoff)
      this.#reconnectTimer.unref?.()
      this.#backoff = Math.min(this.#backoff * 2, BACKOFF_MAX_MS)
    }
  }

  async #reconnect (): Promise<void> {
    this.#reconnectTimer = undefined
    if (this.#closed) return
    try {
      await this.#connect()
    } catch (err) {
      this.#down(err)
      return
    }
    if (this.#closed) { await this.#client?.end().catch(() => {}); return }
    this.#backoff = BACKOFF_MIN_MS
    this.#episodes.succeeded()
  }
}
