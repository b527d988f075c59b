/**
 * Whether a replica equals its database: each sub-database's count and SHA-256
 * (records.ts `tableSum`, the fingerprint `epx store copy` verifies with), computed from
 * the replica's LMDB and from PostgreSQL at one point of the change sequence. A replica is
 * only compared when it has applied exactly the database's last change: the database is
 * read in one REPEATABLE READ snapshot, the replica in one synchronous pass (one LMDB
 * read transaction), and a replica behind or ahead of that snapshot is said to be so,
 * not called different.
 *
 * A revision's bytes are in the replica's segment files, not in LMDB (replica.ts): the
 * replica's side reads them there, at each marker's [segment, offset], as many bytes as
 * the database's row holds, so a missing or short file, or other bytes, differ.
 * @module
 */
import { closeSync, openSync, readSync } from 'node:fs'
import { join } from 'node:path'
import type { Database, Key, RootDatabase } from 'lmdb'
import type { ClientBase } from 'pg'
import { isSegmentName, SEGMENTS_FOLDER } from '../revision-segments.ts'
import type { StoreVerification, TableSum, VerifiedTable } from '../engine.ts'
import { encodeKey, encodeValue, tableSummer } from './records.ts'
import { REVISION_BYTES_DB, SUB_DATABASES } from './schema.ts'

/** Rows per page read from the database. */
const PAGE = 5000

/** What the check says (engine.ts): compared at a seq, or the replica not at the snapshot. */
export type Verification = StoreVerification

/** What the check reads of a replica. */
export interface ReplicaView {
  readonly root: RootDatabase
  /** The replica's folder (its segment files are in it). */
  readonly path: string
  /** The raw sub-database `name`, opened with its encoding; undefined when the replica has none. */
  rawDb(name: string): Database<any, Key> | undefined
  /** The last change the replica applied (its cursor). */
  cursor(): number
}

export interface VerifyOptions {
  /**
   * Hold the write lock (WRITE_LOCK_KEY) while comparing, and run `catchUp` first under
   * it: no writer commits meanwhile, so the replica, caught up, is at the snapshot. For a
   * replica's own check after a full load; an operator's check does not stop writers.
   */
  readonly underWriteLock?: { readonly key: number; readonly catchUp: () => Promise<void> }
}

/**
 * Compares the replica with the database `client` is connected to (its transaction is
 * opened and closed here). Never writes either side.
 */
export async function verifyReplica (replica: ReplicaView, client: ClientBase, opts: VerifyOptions = {}): Promise<Verification> {
  const locked = opts.underWriteLock
  // Under the lock no commit can land, so each statement's snapshot is the same one.
  await client.query(locked ? 'BEGIN' : 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
  try {
    if (locked) {
      await client.query('SELECT pg_advisory_xact_lock($1)', [locked.key])
      await locked.catchUp()
    }
    const top = Number((await client.query<{ seq: string }>('SELECT coalesce(max(seq), 0)::text AS seq FROM epx_record')).rows[0]!.seq)
    const names = (await client.query<{ db: string }>('SELECT DISTINCT db FROM epx_record')).rows.map(r => r.db)
    // The revision bytes' lengths come from the database: the replica keeps only markers.
    const byteLengths = new Map<string, number>()
    const postgres = new Map<string, TableSum>()
    const all = new Set([...Object.keys(SUB_DATABASES), ...names])
    for (const name of all) postgres.set(name, await sumInPostgres(client, name, name === REVISION_BYTES_DB ? byteLengths : undefined))
    // Every sub-database the replica holds, in one synchronous pass: one read snapshot.
    const cursor = replica.cursor()
    if (cursor !== top) return { kind: 'not-at-snapshot', cursor, seq: top }
    for (const k of replica.root.getKeys({})) if (typeof k === 'string' && k !== 'epx-replica') all.add(k)
    const tables: VerifiedTable[] = []
    for (const name of all) {
      const sum = name === REVISION_BYTES_DB ? sumRevisionBytes(replica, byteLengths) : sumInReplica(replica.rawDb(name), SUB_DATABASES[name]?.binary ?? false)
      tables.push({ db: name, replica: sum, postgres: postgres.get(name) ?? tableSummer().sum() })
    }
    const differ = tables.filter(t => t.replica.records !== t.postgres.records || t.replica.sha256 !== t.postgres.sha256).map(t => t.db)
    return { kind: 'compared', seq: top, tables, differ }
  } finally {
    await client.query('ROLLBACK').catch(() => {})
  }
}

function sumInReplica (db: Database<any, Key> | undefined, binary: boolean): TableSum {
  const summer = tableSummer()
  for (const { key, value } of db?.getRange({}) ?? []) summer.add(encodeKey(key), encodeValue(value, binary))
  return summer.sum()
}

/** The revision bytes as the replica's segment files hold them, at each marker it keeps. */
function sumRevisionBytes (replica: ReplicaView, lengths: ReadonlyMap<string, number>): TableSum {
  const summer = tableSummer()
  const fds = new Map<string, number | null>()
  try {
    for (const key of replica.rawDb(REVISION_BYTES_DB)?.getKeys({}) ?? []) {
      const keyBytes = encodeKey(key)
      const [segment, offset] = key as [string, number]
      const bytes = Buffer.alloc(lengths.get(keyBytes.toString('hex')) ?? 0)
      let fd = fds.get(segment)
      if (fd === undefined && typeof segment === 'string' && isSegmentName(segment)) {
        try { fd = openSync(join(replica.path, SEGMENTS_FOLDER, segment), 'r') } catch { fd = null }
        fds.set(segment, fd)
      }
      // A missing file or a short read leaves fewer bytes: the digests then differ.
      const read = fd == null || typeof offset !== 'number' ? 0 : readSync(fd, bytes, 0, bytes.length, offset)
      summer.add(keyBytes, bytes.subarray(0, read))
    }
  } finally {
    for (const fd of fds.values()) if (fd != null) closeSync(fd)
  }
  return summer.sum()
}

/** One sub-database's fingerprint as the snapshot holds it, in key order, a page at a time. */
async function sumInPostgres (client: ClientBase, name: string, lengths?: Map<string, number>): Promise<TableSum> {
  const summer = tableSummer()
  let after: Buffer = Buffer.alloc(0)
  for (;;) {
    const { rows } = await client.query<{ key: Buffer; value: Buffer }>(
      'SELECT key, value FROM epx_record WHERE db = $1 AND value IS NOT NULL AND key > $2 ORDER BY key LIMIT $3', [name, after, PAGE])
    for (const r of rows) {
      summer.add(r.key, r.value)
      lengths?.set(r.key.toString('hex'), r.value.length)
    }
    if (rows.length < PAGE) return summer.sum()
    after = rows[rows.length - 1]!.key
  }
}

/**
 * `verifyReplica` until the replica is at the database's snapshot (an instance that is
 * running applies changes as they come): up to `attempts` tries, `pauseMs` apart.
 */
export async function verifyWhenAtSnapshot (replica: ReplicaView, client: ClientBase, attempts = 20, pauseMs = 100): Promise<Verification> {
  for (let i = 1; ; i++) {
    const v = await verifyReplica(replica, client)
    if (v.kind === 'compared' || i >= attempts) return v
    await new Promise(resolve => setTimeout(resolve, pauseMs))
  }
}
