/**
 * The SQL a replica sends that is worth reading on its own: a write set as statements of
 * bounded size, and the pruning of old removals.
 * @module
 */
import type { ClientBase } from 'pg'
import { CHANGE_CHANNEL, REMOVALS_KEPT_DAYS, WRITE_LOCK_KEY } from './schema.ts'

/** One put or remove of a write batch, as the database gets it. */
export interface Write {
  readonly db: string
  readonly key: unknown
  readonly keyBytes: Buffer
  /** What the database gets (msgpack, or the bytes of a binary sub-database); null: removed. */
  readonly bytes: Buffer | null
}

/** SQL text per statement of a write batch (writeStatements). */
export const STATEMENT_BYTES = 16 * 2 ** 20

/** A sub-database's name as an SQL literal: store names are plain words (checked, not escaped). */
function sqlName (db: string): string {
  if (!/^[A-Za-z0-9_.-]+$/.test(db)) throw new Error(`sub-database name ${JSON.stringify(db)} is not a plain word`)
  return `'${db}'`
}

// decode(): the same bytes whatever the server's standard_conforming_strings says of backslashes.
const hex = (b: Buffer): string => `decode('${b.toString('hex')}','hex')`

/**
 * The write set as statements of at most `statementBytes` of SQL each (a record larger
 * than that is a statement of its own): every write, one seq each; each answers the
 * range of seq it took, and the last one also notifies and commits. One statement in the
 * usual case, so one round trip; a burst of large programmes stays far below
 * PostgreSQL's 1 GB bound on a statement.
 */
export function writeStatements (writes: Iterable<Write>, statementBytes = STATEMENT_BYTES): string[] {
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

/**
 * The rows past `cursor`, under the write lock, in the batch's first round trip. ORDER BY
 * names the column, not the text alias `seq`, which would sort 1, 10, 100…
 */
export const beginBatchSql = (cursor: number, also = ''): string =>
  `BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY}); ` +
  `SELECT db, key, value, seq::text AS seq FROM epx_record WHERE epx_record.seq > ${Math.trunc(cursor)} ORDER BY epx_record.seq` + also

/**
 * A page of the change feed: the rows past `$1`, `$2` of them; values only past `$3` (the
 * replica's cursor: rows up to it are applied already, written by another thread of
 * this process), `fetched` saying which. ORDER BY names the column, as above.
 */
export const CATCH_UP_SQL =
  'SELECT db, key, CASE WHEN epx_record.seq > $3 THEN value END AS value, epx_record.seq > $3 AS fetched, seq::text AS seq ' +
  'FROM epx_record WHERE epx_record.seq > $1 ORDER BY epx_record.seq LIMIT $2'

/** node-postgres's error for a query past `query_timeout`: the connection is then of no use. */
export const isQueryTimeout = (err: unknown): boolean => /query read timeout/i.test(String((err as Error)?.message))

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
