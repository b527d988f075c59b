/**
 * The PostgreSQL store's schema and its versions. Every record of every sub-database is a
 * row of `epx_record` (records.ts says how keys and values are encoded); `seq`, taken from
 * one sequence by writers that hold the write lock in turn, orders every change, so an
 * instance catches up by asking for the rows past the last `seq` it applied. A removed
 * record stays as a row without value, stamped `removed_at`, for REMOVALS_KEPT_DAYS; then
 * it is dropped and `epx_schema.pruned_through` says up to which seq removals may be
 * missing: a replica behind that point reloads (postgres/replica.ts).
 * @module
 */
import type { ClientBase } from 'pg'

/** The version this build reads and writes. */
export const SCHEMA_VERSION = 1

/** Each version's statements, applied in order, each version in its own transaction. */
export const MIGRATIONS: readonly (readonly string[])[] = [
  [], // version 0: nothing
  [
    `CREATE TABLE epx_schema (
       version integer NOT NULL,
       database_id uuid NOT NULL,
       migrated_at timestamptz NOT NULL DEFAULT now(),
       pruned_through bigint NOT NULL DEFAULT 0)`,
    'CREATE SEQUENCE epx_change_seq',
    `CREATE TABLE epx_record (
       db text NOT NULL,
       key bytea NOT NULL,
       value bytea,
       seq bigint NOT NULL,
       removed_at timestamptz,
       PRIMARY KEY (db, key))`,
    'CREATE INDEX epx_record_seq ON epx_record (seq)',
    'CREATE INDEX epx_record_removed ON epx_record (removed_at) WHERE value IS NULL',
  ],
]

/** How long a removal stays readable by a replica catching up: one offline longer reloads. */
export const REMOVALS_KEPT_DAYS = 30

/** The channel instances LISTEN on; a writer NOTIFYs it with the last seq it wrote. */
export const CHANGE_CHANNEL = 'epx_change'

/**
 * The advisory lock every writer (each instance, each thread, the CLI, `epx store copy`)
 * holds for its transaction (`pg_advisory_xact_lock`): writers take turns, so `seq` order
 * is commit order and a reader that saw seq n has seen every change before it.
 */
export const WRITE_LOCK_KEY = 0x65707801

export { REVISION_BYTES_DB, SUB_DATABASES } from '../sub-databases.ts'

/** What a database holds: no schema yet, or a version and the database's identity. */
export type SchemaState =
  | { readonly kind: 'empty' }
  | { readonly kind: 'versioned'; readonly version: number; readonly databaseId: string }
  /** Tables of its own, none of them ours: not a database to write into. */
  | { readonly kind: 'foreign'; readonly tables: readonly string[] }

/** The store's records as a reader of the database sees them (catch-up, full load). */
export interface RecordRow {
  readonly db: string
  readonly key: Buffer
  /** null: removed (or not fetched, when `fetched` is false). */
  readonly value: Buffer | null
  readonly seq: string
  /**
   * false: the row's value was not asked for (the replica applied it already, written by
   * another thread of this process), so a null value does not mean removed.
   */
  readonly fetched?: boolean
}

export async function readSchemaState (client: ClientBase): Promise<SchemaState> {
  const tables = (await client.query<{ t: string }>(
    "SELECT tablename AS t FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")).rows.map(r => r.t)
  if (tables.includes('epx_schema')) {
    const row = (await client.query<{ version: number; database_id: string }>(
      'SELECT version, database_id FROM epx_schema')).rows[0]
    if (row) return { kind: 'versioned', version: row.version, databaseId: row.database_id }
  }
  return tables.length === 0 ? { kind: 'empty' } : { kind: 'foreign', tables }
}
