/**
 * A write batch of the PostgreSQL engine, under the database's write lock so writers of
 * every instance, thread and process take turns:
 * 1. `BEGIN`, the lock, and the rows past the replica's cursor, in one round trip;
 * 2. one local transaction: those rows are applied (and the cursor advanced), then the
 *    batch's fns run in a child transaction that is aborted, each fn in its own child
 *    (all or nothing), their puts and removes recorded as the batch's write set;
 * 3. the write set, the notification and `COMMIT` (sql.ts `writeStatements`): the
 *    durability point, before any job resolves;
 * 4. the write set applied to the replica, so the writer's next read sees it.
 * A failure before COMMIT leaves nothing anywhere (the jobs get NO_STORE).
 * @module
 */
import type { Key, RootDatabase } from 'lmdb'
import type { QueryResult } from 'pg'
import type { Logger } from '../../host/contract.ts'
import type { Job } from '../group-commit.ts'
import type { Connections } from './connections.ts'
import { LEADER_HOLDER_SQL } from './leader.ts'
import { binaryOf, type LocalReplica } from './local-replica.ts'
import { encodeKey, encodeValue } from './records.ts'
import type { RecordRow } from './schema.ts'
import type { OwnWrites } from './own-writes.ts'
import { beginBatchSql, isQueryTimeout, writeStatements, type Write } from './sql.ts'

const ABORT = Symbol('abort the recording transaction')

export interface WriteBatchDeps {
  readonly root: RootDatabase
  readonly local: LocalReplica
  readonly connections: Connections
  readonly own: OwnWrites
  /** Marks the queued writes running (guarded-db's `writing`). */
  setWriting(on: boolean): void
  forgetUnsavedStructures(): void
  /** A committed write that the replica could not take: the feed catches it up. */
  catchUpSoon(): void
  readonly log?: Logger
  /** The bound of one batch (statementTimeoutMs + 2 s); undefined: each query's own. */
  readonly boundMs?: number
  readonly statementBytes?: number
}

export class WriteBatches {
  readonly #d: WriteBatchDeps
  #recording: Write[] | undefined

  constructor (deps: WriteBatchDeps) { this.#d = deps }

  /** A put (`removed` false) or remove made by a running job. */
  record (db: string, key: Key, value: unknown, removed: boolean): void {
    if (!this.#recording) throw new Error('a store write outside writeDurable: it would be neither atomic nor durable')
    const keyBytes = Buffer.from(encodeKey(key))
    if (removed) { this.#recording.push({ db, key, keyBytes, bytes: null }); return }
    // Bytes copied now: the caller may reuse its buffer once put returns.
    this.#recording.push({ db, key, keyBytes, bytes: binaryOf(db) ? Buffer.from(value as Uint8Array) : encodeValue(value, false) })
  }

  /**
   * Runs the batch within the bound: a frozen server, a connection that never comes or a
   * synchronous standby gone answers NO_STORE (503) within it, as docs/operating.md
   * promises, instead of waiting for each query's own timeout in turn. The abandoned
   * attempt ends in the background, its connection dropped (which rolls back what it had
   * not committed); a commit that landed all the same reaches the replica through the feed.
   */
  async run (jobs: readonly Job[]): Promise<void> {
    const boundMs = this.#d.boundMs
    const attempt = { abandoned: false }
    if (!boundMs) return this.#attempt(jobs, attempt)
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        attempt.abandoned = true
        reject(new Error(`the database did not answer the write within ${boundMs} ms (store.postgres.statementTimeoutMs + 2 s)`))
      }, boundMs)
    })
    const running = this.#attempt(jobs, attempt)
    running.catch(() => {})
    try {
      return await Promise.race([running, bound])
    } finally {
      clearTimeout(timer)
    }
  }

  async #attempt (jobs: readonly Job[], attempt: { abandoned: boolean }): Promise<void> {
    const { root, local, own } = this.#d
    const gone = () => { if (attempt.abandoned) throw new Error('abandoned: past the write\'s bound') }
    const client = await this.#d.connections.checkout()
    if (attempt.abandoned) { client.release(); gone() }
    let broken: Error | undefined
    let committing = false
    // A connection lost while checked out is an 'error' on the client (the query fails too):
    // unheard, it would end the process.
    const heard = (err: Error) => { broken = err }
    client.on('error', heard)
    try {
      // A fenced write's leader is checked under the write lock: no write of a new leader
      // can come between the check and this batch's COMMIT.
      const fenced = jobs.some(j => j.fence !== undefined)
      const begun = await client.query(beginBatchSql(local.cursor(), fenced ? `; ${LEADER_HOLDER_SQL}` : '')) as unknown as QueryResult<RecordRow>[]
      gone()
      const holder = fenced ? (begun[3]!.rows[0] as { pid?: number } | undefined)?.pid : undefined
      for (const j of jobs) if (j.fence !== undefined && j.fence !== holder) j.fencedOut = true
      let writes = new Map<string, Write>()
      local.prepare(begun[2]!.rows)
      await root.transaction(() => {
        gone()
        local.applyRows(begun[2]!.rows)
        writes = this.#runAborted(fenced ? jobs.filter(j => !j.fencedOut) : jobs)
      })
      gone()
      if (writes.size === 0) {
        await client.query('COMMIT')
        return
      }
      const statements = writeStatements(writes.values(), this.#d.statementBytes)
      let lo = 0
      for (const sql of statements.slice(0, -1)) {
        const part = await client.query<{ lo: string }>(sql)
        lo ||= Number(part.rows[0]!.lo)
        gone()
      }
      // The feed (this thread's or the solver's) may see these rows before this continuation
      // runs: it waits for the commit to settle to tell them apart from another writer's.
      own.begin()
      committing = true
      const done = await (client.query(statements[statements.length - 1]!) as unknown as Promise<QueryResult<{ lo: string; hi: string }>[]>)
      lo ||= Number(done[0]!.rows[0]!.lo)
      const hi = Number(done[0]!.rows[0]!.hi)
      own.note(lo, hi)
      try {
        await root.transaction(() => local.applyOwn(writes.values(), hi))
      } catch (err) {
        // Durable in the database: the feed brings it to the replica.
        this.#d.log?.warn({ path: local.path, err }, 'a committed write could not be applied to the local replica: the change feed catches it up')
        this.#d.catchUpSoon()
      } finally {
        // Settled once in the replica too: a feed that waited for it finds the rows there
        // and need not fetch them (change-feed.ts).
        committing = false
        own.settle()
      }
    } catch (err) {
      // Past the bound the connection is dropped, not rolled back: a ROLLBACK would wait
      // for the same server as long again.
      if (attempt.abandoned || isQueryTimeout(err)) broken ??= err as Error
      else try { await client.query('ROLLBACK') } catch { broken = err as Error }
      throw err
    } finally {
      if (committing) own.settle()
      client.off('error', heard)
      client.release(broken)
    }
  }

  /** The batch's fns in a transaction that is then aborted: what they wrote, per record, last write winning. */
  #runAborted (jobs: readonly Job[]): Map<string, Write> {
    const { root } = this.#d
    const writes = new Map<string, Write>()
    this.#d.setWriting(true)
    try {
      root.childTransaction(() => {
        for (const job of jobs) {
          const mine: Write[] = this.#recording = []
          try {
            // A child each: a fn that throws leaves nothing, in LMDB and in the write set.
            job.result = root.childTransaction(job.fn) as unknown
            job.ok = true
            for (const w of mine) writes.set(`${w.db}\0${w.keyBytes.toString('latin1')}`, w)
          } catch (err) {
            job.error = err
          }
        }
        throw ABORT
      })
    } catch (err) {
      if (err !== ABORT) throw err
    } finally {
      this.#recording = undefined
      this.#d.setWriting(false)
      // The aborted transaction may have saved msgpack shapes: reload them before encoding.
      this.#d.forgetUnsavedStructures()
    }
    return writes
  }
}
