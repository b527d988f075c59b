/**
 * The PostgreSQL store below `openStore`: PostgreSQL holds the truth, the local LMDB
 * environment is this instance's replica of it, read synchronously as before.
 *
 * A write batch (`runBatch`), under the database's write lock so writers of every
 * instance, thread and process take turns:
 * 1. `BEGIN`, the lock, and the rows past the replica's cursor, in one round trip;
 * 2. one local transaction: those rows are applied (and the cursor advanced), then the
 *    batch's fns run in a child transaction that is aborted, each fn in its own child
 *    (all or nothing), their puts and removes recorded as the batch's write set;
 * 3. the write set, the notification and `COMMIT` in a second round trip: the
 *    durability point, before any job resolves;
 * 4. the write set applied to the replica, so the writer's next read sees it.
 * A failure before COMMIT leaves nothing anywhere (the jobs get NO_STORE).
 *
 * The change feed (one store per process follows it): a dedicated connection LISTENs,
 * catches up on each notification and on a slow poll, and tells `onApplied` listeners
 * what other writers changed. While it is down the store answers NO_STORE (a stale
 * replica must not answer), and it reconnects with backoff; the door's worker thread
 * reads the same availability cell.
 * @module
 */
import { closeSync, constants, fdatasyncSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { Client, ClientBase, Pool, PoolConfig, QueryResult } from 'pg'
import type { Database, Key, RangeOptions, RootDatabase } from 'lmdb'
import { EpxError } from '../../errors.ts'
import type { Logger } from '../../host/contract.ts'
import { createFaultLog } from '../fault-log.ts'
import { checkSchema } from './migrate.ts'
import { decodeKey, decodeValue, encodeKey, encodeValue } from './records.ts'
import { CHANGE_CHANNEL, REMOVALS_KEPT_DAYS, REVISION_BYTES_DB, SUB_DATABASES, WRITE_LOCK_KEY, type RecordRow } from './schema.ts'
import { isSegmentName, SEGMENTS_FOLDER } from '../revision-segments.ts'
import { verifyReplica, verifyWhenAtSnapshot, type ReplicaView, type Verification } from './verify.ts'
import { LEADER_HOLDER_SQL } from './leader.ts'

export interface PostgresStoreOptions {
  /** Connection settings (store.postgres, made into a pool configuration). */
  readonly pool: PoolConfig
  /**
   * Whether this store follows the change feed (LISTEN, catch-up, `onApplied`): the
   * process's main store does (default). The door's worker does not: its replica is the
   * same LMDB environment, and it reads the main store's `availability`.
   */
  readonly follow?: boolean
  /** The following store's availability cell (`Store.availability`), for a store that does not follow. */
  readonly availability?: SharedArrayBuffer
  /** The database in messages and logs (never a password). Default: host/database of `pool`. */
  readonly describe?: string
  /** A failure to connect as what to check (connect.ts), or undefined for any other error. */
  readonly explain?: (err: unknown) => EpxError | undefined
  /** The feed's safety-net poll (ms): a lost notification is caught up within it. */
  readonly pollMs?: number
  /** SQL text per statement of a write batch (default 16 MiB; tests make it small). */
  readonly statementBytes?: number
}

/** What a batch's job is to the replica (open-store.ts's queued `writeDurable` call). */
export interface BatchJob {
  readonly fn: () => unknown
  /** A fenced write (leadership.ts): the backend pid that must hold the leader lock when the batch runs. */
  readonly fence?: number
  /** Set when `fence` no longer holds the lock: the fn did not run, nothing of it is written. */
  fencedOut?: boolean
  ok?: boolean
  result?: unknown
  error?: unknown
}

/** Changes another writer made, per sub-database. */
export type AppliedChanges = ReadonlyMap<string, readonly Key[]>

/** What the replica needs of the LMDB store it lives in (open-store.ts). */
export interface ReplicaHost {
  readonly root: RootDatabase
  readonly path: string
  /** The raw sub-database `name`, opened with its encoding if it was not. */
  rawDb(name: string): Database<any, Key>
  /** Marks the queued writes running (guarded-db's `writing`). */
  setWriting(on: boolean): void
  /** Forget msgpack structures an aborted transaction saved (open-store.ts). */
  forgetUnsavedStructures(): void
  readonly log?: Logger
}

export interface Replica {
  /** Resolves once the schema is checked and the replica caught up; rejects with a coded error. */
  readonly opened: Promise<void>
  /** [0] = 1 while the store can answer (the feed is up and caught up). */
  readonly availability: SharedArrayBuffer
  ready(): boolean
  /** A put (`removed` false) or remove made by a running job. */
  record(db: string, key: Key, value: unknown, removed: boolean): void
  /** Runs the jobs as one database transaction; throws when none of them landed. */
  runBatch(jobs: readonly BatchJob[]): Promise<void>
  onApplied(listener: (changes: AppliedChanges) => void): () => void
  /** Whether this replica equals the database now (verify.ts), once it is at the database's snapshot. */
  verify(): Promise<Verification>
  close(): Promise<void>
}

/** The replica's own bookkeeping, beside the sub-databases (never in PostgreSQL). */
const META_DB = 'epx-replica'
const CATCH_UP_PAGE = 5000
const BACKOFF_MIN_MS = 100
const BACKOFF_MAX_MS = 5000
const ABORT = Symbol('abort the recording transaction')

interface Write {
  readonly db: string
  readonly key: Key
  readonly keyBytes: Buffer
  /** What the database gets (msgpack, or the bytes of a binary sub-database); null: removed. */
  readonly bytes: Buffer | null
}

/** What the replica keeps of a revision's bytes in LMDB (the bytes are in its segment file). */
const EMPTY_MARKER = Buffer.alloc(0)

/**
 * The revision bytes' sub-database of a PostgreSQL store: a put keeps only an empty
 * marker locally (the bytes go to the database; the replica's segment file has them).
 */
export function revisionBytesMarkers (d: Database<any, Key>): Database<any, Key> {
  return {
    get: (key: Key) => d.get(key),
    doesExist: (key: Key) => d.doesExist(key),
    getRange: (o?: RangeOptions) => d.getRange(o),
    getKeys: (o?: RangeOptions) => d.getKeys(o),
    putSync: (key: Key) => d.putSync(key, EMPTY_MARKER),
    removeSync: (key: Key) => d.removeSync(key),
  } as unknown as Database<any, Key>
}

/** A sub-database's name as an SQL literal: store names are plain words (checked, not escaped). */
function sqlName (db: string): string {
  if (!/^[A-Za-z0-9_.-]+$/.test(db)) throw new Error(`sub-database name ${JSON.stringify(db)} is not a plain word`)
  return `'${db}'`
}

// decode(): the same bytes whatever the server's standard_conforming_strings says of backslashes.
const hex = (b: Buffer): string => `decode('${b.toString('hex')}','hex')`

export function describePool (c: PoolConfig): string {
  if (c.connectionString) {
    try {
      const u = new URL(c.connectionString)
      return `${u.hostname || u.searchParams.get('host') || 'localhost'}/${u.pathname.slice(1) || u.username}`
    } catch { return 'the configured database' }
  }
  return `${c.host ?? 'localhost'}/${c.database ?? c.user ?? ''}`
}

/**
 * Drops the removals older than `keptDays` and notes up to which seq some may be missing
 * (`epx_schema.pruned_through`), under the write lock. Any instance may run it; a second
 * run finds nothing. Resolves to the number of rows dropped.
 */
export async function pruneRemovals (client: ClientBase, keptDays = REMOVALS_KEPT_DAYS): Promise<number> {
  await client.query('BEGIN')
  try {
    await client.query(`SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY})`)
    const { rows } = await client.query<{ n: string }>(
      `WITH d AS (DELETE FROM epx_record WHERE value IS NULL AND removed_at < now() - make_interval(days => $1) RETURNING seq)
       UPDATE epx_schema SET pruned_through = greatest(pruned_through, (SELECT coalesce(max(seq), 0) FROM d))
       RETURNING (SELECT count(*) FROM d)::text AS n`, [keptDays])
    await client.query('COMMIT')
    return Number(rows[0]?.n ?? 0)
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  }
}

/**
 * Ends a connection now, whatever state it is in: pg's end() waits for the server to
 * close its side, which a server that never answered does not do (its connect() then
 * never settles either), so the socket is destroyed as well.
 */
function drop (client: Client): void {
  client.end().catch(() => {})
  ;(client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
}

/** node-postgres's error for a query past `query_timeout`: the connection is then of no use. */
const isQueryTimeout = (err: unknown): boolean => /query read timeout/i.test(String((err as Error)?.message))

/** SQL text per statement of a write batch (writeStatements). */
const STATEMENT_BYTES = 16 * 2 ** 20

/** How often a following store drops old removals (pruneRemovals). */
const PRUNE_EVERY_MS = 3_600_000

export function openReplica (host: ReplicaHost, options: PostgresStoreOptions): Replica {
  const { root, log } = host
  const where = options.describe ?? describePool(options.pool)
  const follow = options.follow ?? true
  // pg is loaded on first use of a PostgreSQL store: an LMDB store's process never pays for it.
  let pool: Pool | undefined
  const pgLoaded = import('pg').then(m => {
    const pgm = m.default
    pool = new pgm.Pool(options.pool)
    // An idle client's connection lost (a database restart) is an 'error' on the pool: the
    // pool drops that client; without a listener it would end the process.
    pool.on('error', err => log?.debug({ database: where, err }, 'an idle database connection was lost (a restart?): the pool makes a new one when needed'))
    return pgm
  })
  pgLoaded.catch(() => {})
  const connectPool = async () => (pool ?? (await pgLoaded, pool!)).connect()
  const statementBytes = options.statementBytes ?? STATEMENT_BYTES
  const batchBoundMs = options.pool.query_timeout ?? (options.pool.statement_timeout ? options.pool.statement_timeout + 2000 : undefined)
  const availability = options.availability ?? new SharedArrayBuffer(4)
  const cell = new Int32Array(availability)
  const meta: Database<any, Key> = root.openDB({ name: META_DB, encoding: 'msgpack' })
  // Opened now, outside any transaction: a sub-database first opened inside the recording
  // transaction would be created in it, and its handle would die with its abort.
  for (const name of Object.keys(SUB_DATABASES)) host.rawDb(name)
  const binaryOf = (db: string): boolean => SUB_DATABASES[db]?.binary ?? false
  let closed = false
  let recording: Write[] | undefined
  const listeners = new Set<(changes: AppliedChanges) => void>()
  /** This store's write between its COMMIT and the note of its seq range. */
  let inflight: Promise<void> | undefined
  /** Seq ranges this store wrote itself: not reported as another writer's. */
  let own: Array<[number, number]> = []

  const cursorNow = (): number => (meta.get('cursor') as number | undefined) ?? 0

  const segmentDir = join(host.path, SEGMENTS_FOLDER)
  /**
   * Another instance's revision bytes, into this replica's segment file of the same name
   * at the same offset; a segment another writer dropped is deleted here too.
   */
  const segmentFiles = {
    fds: new Map<string, number>(),
    write (key: Key, bytes: Buffer): void {
      const [name, offset] = key as [string, number]
      if (typeof name !== 'string' || !isSegmentName(name) || typeof offset !== 'number') return
      let fd = this.fds.get(name)
      if (fd === undefined) {
        mkdirSync(segmentDir, { recursive: true })
        // Positional writes into a file that may not exist yet (never O_APPEND: it ignores the offset).
        this.fds.set(name, fd = openSync(join(segmentDir, name), constants.O_RDWR | constants.O_CREAT, 0o644))
      }
      let done = 0
      while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, offset + done)
    },
    drop (name: Key): void {
      if (typeof name === 'string' && isSegmentName(name)) rmSync(join(segmentDir, name), { force: true })
    },
    /** Durable before the cursor that says they were applied. */
    sync (): void {
      for (const fd of this.fds.values()) { try { fdatasyncSync(fd) } finally { closeSync(fd) } }
      this.fds.clear()
    },
  }

  /** Inside a local write transaction: the rows past the cursor, applied in seq order. */
  const applyRows = (rows: readonly RecordRow[]): void => {
    const cursor = cursorNow()
    let top = cursor
    try {
      for (const row of rows) {
        const seq = Number(row.seq)
        if (seq <= cursor || row.fetched === false) continue
        const d = host.rawDb(row.db)
        const key = decodeKey(row.key)
        if (row.value === null) {
          d.removeSync(key)
          if (row.db === 'rev-segments') segmentFiles.drop(key)
        } else if (row.db === REVISION_BYTES_DB) {
          segmentFiles.write(key, row.value)
          d.putSync(key, EMPTY_MARKER)
        } else {
          d.putSync(key, decodeValue(row.value, binaryOf(row.db)))
        }
        if (seq > top) top = seq
      }
    } finally {
      segmentFiles.sync()
    }
    if (top > cursor) meta.putSync('cursor', top)
  }

  /** The batch's fns in a transaction that is then aborted: what they wrote, per record, last write winning. */
  const runAborted = (jobs: readonly BatchJob[]): Map<string, Write> => {
    const writes = new Map<string, Write>()
    host.setWriting(true)
    try {
      root.childTransaction(() => {
        for (const job of jobs) {
          const mine: Write[] = recording = []
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
      recording = undefined
      host.setWriting(false)
      // The aborted transaction may have saved msgpack shapes: reload them before encoding.
      host.forgetUnsavedStructures()
    }
    return writes
  }

  /**
   * The write set as statements of at most `statementBytes` of SQL each (a record larger
   * than that is a statement of its own): every write, one seq each; the last statement
   * also notifies and commits. One statement in the usual case, so one round trip; a
   * burst of large programmes stays far below PostgreSQL's 1 GB bound on a statement.
   */
  const writeStatements = (writes: Iterable<Write>): string[] => {
    const chunks: string[][] = [[]]
    let size = 0
    for (const w of writes) {
      const row = `(${sqlName(w.db)},${hex(w.keyBytes)},${w.bytes ? `${hex(w.bytes)},NULL` : 'NULL,now()'},nextval('epx_change_seq'))`
      if (size > 0 && size + row.length > statementBytes) { chunks.push([]); size = 0 }
      chunks[chunks.length - 1]!.push(row)
      size += row.length + 1
    }
    return chunks.map((rows, i) => `WITH w AS (INSERT INTO epx_record (db, key, value, removed_at, seq) VALUES ${rows.join(',')} ` +
      'ON CONFLICT (db, key) DO UPDATE SET value = EXCLUDED.value, removed_at = EXCLUDED.removed_at, seq = EXCLUDED.seq RETURNING seq) ' +
      (i < chunks.length - 1
        ? 'SELECT min(seq)::text AS lo, max(seq)::text AS hi FROM w'
        : `SELECT min(seq)::text AS lo, max(seq)::text AS hi, pg_notify('${CHANGE_CHANNEL}', max(seq)::text) FROM w; COMMIT`))
  }

  const applyOwn = (writes: Iterable<Write>, hi: number): void => {
    // The feed may have applied them already (and later writers' after them).
    if (cursorNow() >= hi) return
    for (const w of writes) {
      const d = host.rawDb(w.db)
      if (w.bytes === null) d.removeSync(w.key)
      // This instance wrote them into its segment file: the marker only. Otherwise what
      // the database got, decoded, not the object the job put: the replica holds the
      // database's record even where msgpack does not give an object back as it was.
      else d.putSync(w.key, w.db === REVISION_BYTES_DB ? EMPTY_MARKER : decodeValue(w.bytes, binaryOf(w.db)))
    }
    meta.putSync('cursor', hi)
  }

  /**
   * Runs the batch within `batchBoundMs` (store.postgres.statementTimeoutMs + 2 s): a
   * frozen server, a connection that never comes or a synchronous standby gone answers
   * NO_STORE (503) within the bound, as docs/operating.md promises, instead of waiting for
   * each query's own timeout in turn. The abandoned attempt ends in the background, its
   * connection dropped (which rolls back what it had not committed); a commit that landed
   * all the same reaches the replica through the feed.
   */
  const runBatch = async (jobs: readonly BatchJob[]): Promise<void> => {
    if (!batchBoundMs) return attemptBatch(jobs, { abandoned: false })
    const attempt = { abandoned: false }
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        attempt.abandoned = true
        reject(new Error(`the database did not answer the write within ${batchBoundMs} ms (store.postgres.statementTimeoutMs + 2 s)`))
      }, batchBoundMs)
    })
    const running = attemptBatch(jobs, attempt)
    running.catch(() => {})
    try {
      return await Promise.race([running, bound])
    } finally {
      clearTimeout(timer)
    }
  }

  const attemptBatch = async (jobs: readonly BatchJob[], attempt: { abandoned: boolean }): Promise<void> => {
    const gone = () => { if (attempt.abandoned) throw new Error('abandoned: past the write\'s bound') }
    const client = await connectPool()
    if (attempt.abandoned) { client.release(); gone() }
    let broken: Error | undefined
    // A connection lost while checked out is an 'error' on the client (the query fails too):
    // unheard, it would end the process.
    const heard = (err: Error) => { broken = err }
    client.on('error', heard)
    try {
      // A fenced write's leader is checked under the write lock: no write of a new leader
      // can come between the check and this batch's COMMIT.
      const fenced = jobs.some(j => j.fence !== undefined)
      const begun = await client.query(
        `BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY}); ` +
        // ORDER BY names the column, not the text alias `seq`, which would sort 1, 10, 100…
        `SELECT db, key, value, seq::text AS seq FROM epx_record WHERE epx_record.seq > ${cursorNow()} ORDER BY epx_record.seq` +
        (fenced ? `; ${LEADER_HOLDER_SQL}` : '')) as unknown as QueryResult<RecordRow>[]
      gone()
      const holder = fenced ? (begun[3]!.rows[0] as { pid?: number } | undefined)?.pid : undefined
      for (const j of jobs) if (j.fence !== undefined && j.fence !== holder) j.fencedOut = true
      let writes = new Map<string, Write>()
      await root.transaction(() => {
        gone()
        applyRows(begun[2]!.rows)
        writes = runAborted(fenced ? jobs.filter(j => !j.fencedOut) : jobs)
      })
      gone()
      if (writes.size === 0) {
        await client.query('COMMIT')
        return
      }
      const statements = writeStatements(writes.values())
      let lo = 0
      for (const sql of statements.slice(0, -1)) {
        const part = (await client.query<{ lo: string }>(sql)).rows[0]!
        lo ||= Number(part.lo)
        gone()
      }
      const committing = client.query(statements[statements.length - 1]!) as unknown as Promise<QueryResult<{ lo: string; hi: string }>[]>
      // The feed may see these rows before this continuation runs: it waits to tell them apart.
      inflight = committing.then(() => {}, () => {})
      const done = await committing
      lo ||= Number(done[0]!.rows[0]!.lo)
      const hi = Number(done[0]!.rows[0]!.hi)
      if (follow) own.push([lo, hi])
      inflight = undefined
      try {
        await root.transaction(() => applyOwn(writes.values(), hi))
      } catch (err) {
        // Durable in the database: the feed brings it to the replica.
        log?.warn({ path: host.path, err }, 'a committed write could not be applied to the local replica: the change feed catches it up')
        scheduleCatchUp()
      }
    } catch (err) {
      // Past the bound the connection is dropped, not rolled back: a ROLLBACK would wait
      // for the same server as long again.
      if (attempt.abandoned || isQueryTimeout(err)) broken ??= err as Error
      else try { await client.query('ROLLBACK') } catch { broken = err as Error }
      throw err
    } finally {
      inflight = undefined
      client.off('error', heard)
      client.release(broken)
    }
  }

  // The change feed ------------------------------------------------------------------
  let feed: Client | undefined
  let reported = 0
  let caughtUpOnce = false
  let catching: Promise<void> | undefined
  let again = false
  let reconnectTimer: NodeJS.Timeout | undefined
  let backoff = BACKOFF_MIN_MS
  // One error line per episode, one when it ends (fault-log.ts).
  const episodes = createFaultLog(host.path, log, Date.now, undefined, {
    failing: `the store's database is unreachable, or its change feed failed (${where}): every read and write answers 503 NO_STORE until it is back; epx reconnects by itself`,
    recovered: `the store's database is reachable again (${where}): reads and writes are served`,
    counted: 'failedAttempts',
  })
  const setUp = (up: boolean) => { Atomics.store(cell, 0, up ? 1 : 0) }

  const report = (rows: readonly RecordRow[]): void => {
    if (!caughtUpOnce || listeners.size === 0) return
    const changes = new Map<string, Key[]>()
    for (const row of rows) {
      const seq = Number(row.seq)
      if (own.some(([lo, hi]) => seq >= lo && seq <= hi)) continue
      let keys = changes.get(row.db)
      if (!keys) changes.set(row.db, keys = [])
      keys.push(decodeKey(row.key))
    }
    if (changes.size === 0) return
    for (const l of listeners) {
      try { l(changes) } catch (err) { log?.error({ err }, 'a listener of the store\'s change feed threw') }
    }
  }

  const catchUpOnce = async (client: Client): Promise<void> => {
    for (;;) {
      // Rows another thread of this process wrote (the door's) are in the replica already
      // (the cursor is shared): their values are not fetched again, and without a row
      // past the cursor there is no local transaction, only their report.
      // ORDER BY names the column, not the text alias `seq`, which would sort 1, 10, 100…
      const { rows } = await client.query<RecordRow>(
        'SELECT db, key, CASE WHEN epx_record.seq > $3 THEN value END AS value, epx_record.seq > $3 AS fetched, seq::text AS seq ' +
        'FROM epx_record WHERE epx_record.seq > $1 ORDER BY epx_record.seq LIMIT $2',
        [reported, CATCH_UP_PAGE, cursorNow()])
      if (rows.length > 0) {
        if (Number(rows[rows.length - 1]!.seq) > cursorNow()) await root.transaction(() => applyRows(rows))
        // A write of this store committing now: its range is known once it returns.
        while (inflight) await inflight.then(() => new Promise(resolve => setImmediate(resolve)))
        report(rows)
        reported = Number(rows[rows.length - 1]!.seq)
        own = own.filter(([, hi]) => hi > reported)
      }
      if (rows.length < CATCH_UP_PAGE) return
    }
  }

  function scheduleCatchUp (): void {
    if (!follow || closed || !feed) return
    if (catching) { again = true; return }
    const client = feed
    catching = (async () => {
      do { again = false; await catchUpOnce(client) } while (again && !closed)
    })().catch(err => feedDown(err)).finally(() => { catching = undefined })
  }

  /** A replica of another database (or a fresh folder): cleared, then loaded from seq 0. */
  const ensureDatabase = async (databaseId: string, client: Client): Promise<void> => {
    if (meta.get('database_id') === databaseId) {
      // The same database behind an earlier point than this replica has applied: a
      // failover to a standby that lacked the last commits (asynchronous replication).
      // What this replica holds of them exists nowhere else now, and the database's new
      // changes may reuse their seq numbers: reload.
      const { top, pruned } = (await client.query<{ top: string; pruned: string }>(
        'SELECT greatest((SELECT max(seq) FROM epx_record), pruned_through, 0)::text AS top, pruned_through::text AS pruned FROM epx_schema')).rows[0]!
      const cursor = cursorNow()
      if (Number(top) < cursor) {
        log?.warn({ path: host.path, database: where, cursor, databaseSeq: Number(top) },
          'the database is behind what this replica applied (a failover lost its last commits?): reloading the replica from the database')
      } else if (meta.get('loading') === true) {
        log?.warn({ path: host.path, database: where }, 'the local replica\'s last load from the database did not finish, or did not verify: loading it again')
      } else if (cursor < Number(pruned)) {
        // Offline longer than removals are kept: some it never saw are gone from the database.
        log?.info({ path: host.path, database: where, cursor, prunedThrough: Number(pruned) },
          `the local replica was offline longer than removals are kept (${REMOVALS_KEPT_DAYS} days): reloading it from the database`)
      } else {
        return
      }
    } else if (meta.get('database_id') === undefined) {
      const used = Object.keys(SUB_DATABASES).find(name => { for (const _ of host.rawDb(name).getKeys({ limit: 1 })) return true; return false })
      if (used) {
        throw new EpxError('EPX_STORE_OPEN_FAILED', [host.path,
          'it holds an LMDB store (store.kind "lmdb"), not a replica of a PostgreSQL store: move its records into the database with `epx store copy --to postgres`, then point store.path at a new folder'])
      }
      log?.info({ path: host.path, database: where }, 'the local replica is new: loading it from the database')
    } else {
      log?.info({ path: host.path, database: where }, 'the local replica is of another database: loading it from the database')
    }
    await root.transaction(() => { meta.removeSync('database_id') })
    for (const name of new Set([...Object.keys(SUB_DATABASES), ...openedNames()])) await host.rawDb(name).clearAsync()
    host.forgetUnsavedStructures()
    // `loading` until the load is verified (loadVerified): a replica whose load was cut
    // short, or does not equal the database, is loaded again, never served.
    await root.transaction(() => { meta.putSync('cursor', 0); meta.putSync('database_id', databaseId); meta.putSync('loading', true) })
  }

  /**
   * After a load from scratch: the replica, caught up under the write lock, must equal the
   * database (verify.ts), or the store does not open. Costs one more read of the database,
   * paid only when a replica is loaded whole (a new folder, a failover that lost commits).
   */
  const loadVerified = async (client: Client): Promise<void> => {
    const started = Date.now()
    const v = await verifyReplica(view, client,
      { underWriteLock: { key: WRITE_LOCK_KEY, catchUp: () => catchUpOnce(client) } })
    if (v.kind !== 'compared' || v.differ.length > 0) {
      const why = v.kind === 'compared'
        ? `sub-database(s) ${v.differ.join(', ')} differ after the load (${v.tables.filter(t => v.differ.includes(t.db)).map(t => `${t.db}: ${t.replica.records} record(s) here, ${t.postgres.records} in the database`).join('; ')})`
        : `the replica is at change ${v.cursor} and the database at ${v.seq} under the write lock`
      throw new EpxError('EPX_STORE_OPEN_FAILED', [host.path, `the replica loaded from ${where} does not equal it: ${why}; it is loaded again at the next connection`])
    }
    await root.transaction(() => { meta.removeSync('loading') })
    const records = v.tables.reduce((n, t) => n + t.replica.records, 0)
    log?.info({ path: host.path, database: where, records, seq: v.seq, ms: Date.now() - started }, 'the local replica is loaded and verified: it equals the database')
  }
  const view: ReplicaView = { root, path: host.path, rawDb: host.rawDb, cursor: cursorNow }
  const openedNames = (): string[] => [...root.getKeys({})].filter((k): k is string => typeof k === 'string' && k !== META_DB)

  /** The feed's connection while it is being made: close() ends it, so no connection outlives the store. */
  let connecting: Client | undefined
  let closing: () => void = () => {}
  const whenClosed = new Promise<never>((_, reject) => {
    closing = () => reject(new EpxError('EPX_STORE_OPEN_FAILED', [host.path, `the store was closed before ${where} answered`]))
  })
  whenClosed.catch(() => {})
  const connectFeed = async (): Promise<void> => {
    const client = new ((options.pool.Client as typeof Client | undefined) ?? (await pgLoaded).Client)(options.pool)
    client.on('error', err => { if (feed === client) feedDown(err) })
    client.on('end', () => { if (feed === client) feedDown(new Error('the connection closed')) })
    client.on('notification', () => { if (feed === client) scheduleCatchUp() })
    connecting = client
    try {
      if (closed) throw new Error('the store was closed before it connected')
      // pg never settles connect() when end() comes first: close() is raced here instead.
      await Promise.race([client.connect(), whenClosed])
      const databaseId = await checkSchema(client, where)
      // LISTEN first: a change committed during the catch-up is notified, not missed.
      await client.query(`LISTEN ${CHANGE_CHANNEL}`)
      await ensureDatabase(databaseId, client)
      // Reconnecting: a write batch may have applied others' rows (the cursor moved) that
      // the feed had not reported yet; they are reported now, not skipped.
      reported = caughtUpOnce ? Math.min(reported, cursorNow()) : cursorNow()
      await catchUpOnce(client)
      if (meta.get('loading') === true) await loadVerified(client)
      if (closed) throw new Error('the store was closed while it connected')
    } catch (err) {
      client.removeAllListeners('end')
      client.on('error', () => {})
      drop(client)
      throw err
    } finally {
      if (connecting === client) connecting = undefined
    }
    feed = client
    caughtUpOnce = true
    setUp(true)
  }

  function feedDown (err: unknown): void {
    const client = feed
    feed = undefined
    setUp(false)
    if (client) {
      client.removeAllListeners('end')
      client.on('error', () => {})
      void client.end().catch(() => {})
    }
    if (closed) return
    episodes.failed(err)
    if (!reconnectTimer) {
      reconnectTimer = setTimeout(reconnect, backoff)
      reconnectTimer.unref?.()
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS)
    }
  }

  async function reconnect (): Promise<void> {
    reconnectTimer = undefined
    if (closed) return
    try {
      await connectFeed()
    } catch (err) {
      feedDown(err)
      return
    }
    if (closed) { await feed?.end().catch(() => {}); return }
    backoff = BACKOFF_MIN_MS
    episodes.succeeded()
  }

  const poll = follow ? setInterval(() => scheduleCatchUp(), options.pollMs ?? 5000) : undefined
  poll?.unref?.()
  const prune = follow
    ? setInterval(() => {
      if (!Atomics.load(cell, 0)) return
      void (async () => {
        const client = await connectPool()
        let broken: Error | undefined
        const heard = (err: Error) => { broken = err }
        client.on('error', heard)
        try {
          await pruneRemovals(client)
        } catch (err) {
          broken ??= err as Error
          log?.warn({ path: host.path, err }, 'dropping old removals from the database failed: retried within the hour')
        } finally {
          client.off('error', heard)
          client.release(broken)
        }
      })().catch(() => {})
    }, PRUNE_EVERY_MS)
    : undefined
  prune?.unref?.()

  const opened = follow
    ? connectFeed().catch(err => {
      throw err instanceof EpxError ? err : options.explain?.(err) ?? new EpxError('EPX_STORE_OPEN_FAILED', [`${where} (PostgreSQL)`, (err as Error).message], { cause: err })
    })
    : pgLoaded.then(() => {})
  opened.catch(() => {})

  return {
    opened,
    availability,
    ready: () => !closed && Atomics.load(cell, 0) === 1,
    record (db, key, value, removed) {
      if (!recording) throw new Error('a store write outside writeDurable: it would be neither atomic nor durable')
      const keyBytes = Buffer.from(encodeKey(key))
      if (removed) { recording.push({ db, key, keyBytes, bytes: null }); return }
      // Bytes copied now: the caller may reuse its buffer once put returns.
      recording.push({ db, key, keyBytes, bytes: binaryOf(db) ? Buffer.from(value as Uint8Array) : encodeValue(value, false) })
    },
    runBatch,
    async verify () {
      const client = await connectPool()
      let broken: Error | undefined
      const heard = (err: Error) => { broken = err }
      client.on('error', heard)
      try {
        return await verifyWhenAtSnapshot(view, client)
      } catch (err) {
        broken ??= err as Error
        throw err
      } finally {
        client.off('error', heard)
        client.release(broken)
      }
    },
    onApplied (listener) {
      listeners.add(listener)
      return () => { listeners.delete(listener) }
    },
    async close () {
      if (closed) return
      closed = true
      if (poll) clearInterval(poll)
      if (prune) clearInterval(prune)
      if (reconnectTimer) clearTimeout(reconnectTimer)
      await catching?.catch(() => {})
      if (connecting) drop(connecting)
      closing()
      const client = feed
      feed = undefined
      if (follow) setUp(false)
      if (client) { client.removeAllListeners('end'); client.on('error', () => {}); await client.end().catch(() => {}) }
      await pgLoaded.catch(() => {})
      await pool?.end().catch(() => {})
    },
  }
}
