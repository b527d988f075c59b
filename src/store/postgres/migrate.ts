/**
 * The schema at the door: activation accepts only a database at this build's version
 * (and writes nothing to any other), `epx store migrate` creates or upgrades one.
 * @module
 */
import { randomUUID } from 'node:crypto'
import type { ClientBase } from 'pg'
import { EpxError } from '../../errors.ts'
import { MIGRATIONS, readSchemaState, SCHEMA_VERSION, WRITE_LOCK_KEY, type SchemaState } from './schema.ts'

/** What a refused schema says, and what to run (the catalogue, errors.ts). */
export function schemaRefusal (state: SchemaState, where: string): EpxError | undefined {
  switch (state.kind) {
    case 'empty': return new EpxError('EPX_STORE_SCHEMA_MISSING', [where])
    case 'foreign': return new EpxError('EPX_STORE_SCHEMA_FOREIGN', [where, state.tables.join(', ')])
    case 'versioned':
      if (state.version > SCHEMA_VERSION) return new EpxError('EPX_STORE_SCHEMA_NEWER', [where, state.version, SCHEMA_VERSION])
      if (state.version < SCHEMA_VERSION) return new EpxError('EPX_STORE_SCHEMA_OLD', [where, state.version, SCHEMA_VERSION])
      return undefined
  }
}

/** The database's identity once its schema is this build's; a coded error otherwise. */
export async function checkSchema (client: ClientBase, where: string): Promise<string> {
  const state = await readSchemaState(client)
  const refused = schemaRefusal(state, where)
  if (refused) throw refused
  return (state as { databaseId: string }).databaseId
}

export interface MigrateReport { readonly from: number; readonly to: number; readonly databaseId: string }

/**
 * Brings the database to SCHEMA_VERSION, one version per transaction, under the write
 * lock (an instance writing meanwhile waits). Idempotent: a database already there is
 * left as it is. Refuses a newer version and a database holding tables of others.
 */
export async function migrateSchema (client: ClientBase, where: string): Promise<MigrateReport> {
  const first = await readSchemaState(client)
  if (first.kind === 'foreign' || (first.kind === 'versioned' && first.version > SCHEMA_VERSION)) throw schemaRefusal(first, where)!
  const from = first.kind === 'versioned' ? first.version : 0
  let version = from
  while (version < SCHEMA_VERSION) {
    await client.query('BEGIN')
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK_KEY])
      // Read again under the lock: a concurrent migrate may have done this step.
      const now = await readSchemaState(client)
      const at = now.kind === 'versioned' ? now.version : 0
      if (at !== version) { await client.query('ROLLBACK'); version = at; continue }
      for (const sql of MIGRATIONS[version + 1]!) await client.query(sql)
      if (version === 0) await client.query('INSERT INTO epx_schema (version, database_id) VALUES ($1, $2)', [1, randomUUID()])
      else await client.query('UPDATE epx_schema SET version = $1, migrated_at = now()', [version + 1])
      await client.query('COMMIT')
      version++
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    }
  }
  const databaseId = await checkSchema(client, where)
  return { from, to: version, databaseId }
}
