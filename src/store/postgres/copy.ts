/**
 * `epx store copy --to postgres`: an LMDB store (its files, read with lmdb-js) moved into
 * a database that `epx store migrate` has just made, in one transaction under the write
 * lock, and verified before the commit: each sub-database's count and SHA-256
 * (records.ts `tableSum`) computed from LMDB as it is read and from PostgreSQL as it then
 * holds the rows. Any difference, a database that already holds records, or a sub-database
 * this epx does not know rolls everything back: the database is as it was.
 * Revisions' bytes live beside LMDB in segment files (revision-segments.ts); in PostgreSQL
 * they are rows of their own ([segment, offset] → bytes, schema.ts), read here from the
 * segment files at each kept revision's reference.
 * @module
 */
import { closeSync, existsSync, openSync, readSync } from 'node:fs'
import { join } from 'node:path'
import { open, type Database, type Key, type RootDatabase } from 'lmdb'
import type { ClientBase } from 'pg'
import { EpxError, isEpxError } from '../../errors.ts'
import { checkStoreFiles } from '../check-file.ts'
import { isSegmentName, SEGMENTS_FOLDER, type SegmentRef } from '../revision-segments.ts'
import { checkSchema } from './migrate.ts'
import { encodeKey, encodeValue, tableSummer, type TableSum } from './records.ts'
import { CHANGE_CHANNEL, REVISION_BYTES_DB, SUB_DATABASES, WRITE_LOCK_KEY } from './schema.ts'

/** Rows per INSERT (and per page when reading back). */
const CHUNK = 1000

/** Where each msgpack sub-database keeps its shared record structures (as open-store.ts opens them). */
const STRUCTURES_KEY = Symbol.for('structures')

export interface CopiedTable {
  readonly db: string
  readonly lmdb: TableSum
  readonly postgres: TableSum
}

export interface CopyReport {
  /** Every sub-database this epx knows, in the order of SUB_DATABASES (0 records where LMDB has none). */
  readonly tables: readonly CopiedTable[]
}

/** The LMDB store at `path`, opened read-only; refused as lmdb-js would crash on it (check-file.ts). */
function openSource (path: string, fail: (why: string) => EpxError): RootDatabase {
  if (!existsSync(join(path, 'data.mdb'))) throw fail(`no LMDB store at ${path} (no data.mdb): store.path names the folder to copy`)
  const check = checkStoreFiles(path)
  if (check.problem) throw fail(`${path}: ${check.problem}; ${check.advice}`)
  return open({ path, noSubdir: false, readOnly: true, maxDbs: 64, compression: false })
}

/**
 * Copies the LMDB store at `path` into the database `client` is connected to, which must be
 * at this build's schema and hold no record. `where` names the database in messages.
 */
export async function copyLmdbToPostgres (path: string, client: ClientBase, where: string): Promise<CopyReport> {
  const fail = (why: string) => new EpxError('EPX_STORE_COPY_FAILED', [where, `${why}; nothing was written`])
  const root = openSource(path, fail)
  try {
    const present = new Set([...root.getKeys({})].filter((k): k is string => typeof k === 'string'))
    const unknown = [...present].filter(name => !(name in SUB_DATABASES))
    if (unknown.length) {
      throw fail(`${path} holds sub-database(s) this epx does not know (${unknown.join(', ')}): a replica of a PostgreSQL store, or the store of a newer epx`)
    }
    await client.query('BEGIN')
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK_KEY])
      await checkSchema(client, where)
      const held = Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM epx_record')).rows[0]!.n)
      if (held > 0) throw fail(`the database already holds ${held} record(s): copy only into a database just made for it (createdb, then \`epx store migrate\`)`)
      const tables: CopiedTable[] = []
      for (const [name, { binary }] of Object.entries(SUB_DATABASES)) {
        const lmdb = name === REVISION_BYTES_DB
          ? await copyRevisionBytes(root, present, path, client, fail)
          : present.has(name) ? await copyTable(root, name, binary, client) : tableSummer().sum()
        tables.push({ db: name, lmdb, postgres: await sumInPostgres(client, name) })
      }
      const differ = tables.filter(t => t.lmdb.records !== t.postgres.records || t.lmdb.sha256 !== t.postgres.sha256)
      if (differ.length) {
        throw fail(`the copy does not verify: ${differ.map(t => `${t.db} has ${t.lmdb.records} record(s) in LMDB (sha256 ${t.lmdb.sha256}) and ${t.postgres.records} in PostgreSQL (sha256 ${t.postgres.sha256})`).join('; ')}`)
      }
      // An instance already following the database catches up at once.
      await client.query(`SELECT pg_notify($1, (SELECT coalesce(max(seq), 0)::text FROM epx_record))`, [CHANGE_CHANNEL])
      await client.query('COMMIT')
      return { tables }
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      if (isEpxError(err)) throw err
      throw fail((err as Error).message)
    }
  } finally {
    await root.close()
  }
}

/** Inserts one sub-database's records in key order; returns their fingerprint as read from LMDB. */
async function copyTable (root: RootDatabase, name: string, binary: boolean, client: ClientBase): Promise<TableSum> {
  const db: Database<unknown, Key> = binary
    ? root.openDB({ name, encoding: 'binary' })
    : root.openDB({ name, encoding: 'msgpack', sharedStructuresKey: STRUCTURES_KEY })
  const rows = rowWriter(client, name)
  for (const { key, value } of db.getRange({ snapshot: true })) {
    // A binary value may sit in a buffer lmdb-js reuses: copy it before the next read.
    await rows.add(encodeKey(key), Buffer.from(encodeValue(value, binary)))
  }
  return rows.end()
}

/** Rows of one sub-database inserted a chunk at a time, fingerprinted in the order given. */
function rowWriter (client: ClientBase, name: string): { add(key: Buffer, value: Buffer): Promise<void>; end(): Promise<TableSum> } {
  const summer = tableSummer()
  let keys: Buffer[] = []
  let values: Buffer[] = []
  const flush = async () => {
    if (keys.length === 0) return
    await client.query(
      `INSERT INTO epx_record (db, key, value, seq)
       SELECT $1, k, v, nextval('epx_change_seq') FROM unnest($2::bytea[], $3::bytea[]) WITH ORDINALITY AS r(k, v, i) ORDER BY i`,
      [name, keys, values])
    keys = []
    values = []
  }
  return {
    async add (key, value) {
      summer.add(key, value)
      keys.push(key)
      values.push(value)
      if (keys.length >= CHUNK) await flush()
    },
    async end () {
      await flush()
      return summer.sum()
    },
  }
}

/**
 * The bytes of every kept revision (those `rev-latest` and `rev-older` point at), read from
 * the store's segment files in the database's key order; a missing or short file fails the
 * copy, naming it.
 */
async function copyRevisionBytes (root: RootDatabase, present: ReadonlySet<string>, path: string, client: ClientBase, fail: (why: string) => EpxError): Promise<TableSum> {
  const refs = new Map<string, { key: Buffer; ref: SegmentRef }>()
  for (const name of ['rev-latest', 'rev-older']) {
    if (!present.has(name)) continue
    const db: Database<SegmentRef, Key> = root.openDB({ name, encoding: 'msgpack', sharedStructuresKey: STRUCTURES_KEY })
    for (const { value } of db.getRange({ snapshot: true })) {
      const key = encodeKey([value.segment, value.offset])
      refs.set(key.toString('hex'), { key, ref: { segment: value.segment, offset: value.offset, size: value.size } })
    }
  }
  const ordered = [...refs.values()].sort((a, b) => Buffer.compare(a.key, b.key))
  const rows = rowWriter(client, REVISION_BYTES_DB)
  const fds = new Map<string, number>()
  try {
    for (const { key, ref } of ordered) {
      const file = join(path, SEGMENTS_FOLDER, ref.segment)
      if (!isSegmentName(ref.segment)) throw fail(`a revision names ${JSON.stringify(ref.segment)} as its segment file, which is not a segment file's name`)
      let fd = fds.get(ref.segment)
      if (fd === undefined) {
        try {
          fd = openSync(file, 'r')
        } catch (err) {
          throw fail(`the revision bytes file ${file} cannot be read (${(err as NodeJS.ErrnoException).code}): restore the store's ${SEGMENTS_FOLDER} folder from its backup`)
        }
        fds.set(ref.segment, fd)
      }
      const bytes = Buffer.alloc(ref.size)
      const read = readSync(fd, bytes, 0, ref.size, ref.offset)
      if (read !== ref.size) throw fail(`the revision bytes file ${file} ends before ${ref.offset + ref.size} bytes (a revision's bytes are there): restore it from the store's backup`)
      await rows.add(key, bytes)
    }
  } finally {
    for (const fd of fds.values()) closeSync(fd)
  }
  return rows.end()
}

/** One sub-database's fingerprint as PostgreSQL holds it, read in key order a page at a time. */
async function sumInPostgres (client: ClientBase, name: string): Promise<TableSum> {
  const summer = tableSummer()
  let after: Buffer = Buffer.alloc(0)
  for (;;) {
    const { rows } = await client.query<{ key: Buffer; value: Buffer }>(
      'SELECT key, value FROM epx_record WHERE db = $1 AND value IS NOT NULL AND key > $2 ORDER BY key LIMIT $3', [name, after, CHUNK])
    for (const r of rows) summer.add(r.key, r.value)
    if (rows.length < CHUNK) return summer.sum()
    after = rows[rows.length - 1]!.key
  }
}
