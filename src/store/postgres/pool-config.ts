/**
 * The PostgreSQL store's options from the configuration (`store.kind`, `store.postgres`).
 * @module
 */
import type { EpxConfig } from '../../config.ts'
import { EpxError } from '../../errors.ts'
import type { PostgresStoreOptions } from './replica.ts'

/** Connections of a process's main store; the door's worker keeps a smaller pool of its own. */
const POOL_SIZE = 4
const STATEMENT_TIMEOUT_MS = 5000

/** undefined for `store.kind` "lmdb". */
export function postgresStoreOptions (store: EpxConfig['store']): PostgresStoreOptions | undefined {
  if (store.kind !== 'postgres') return undefined
  const connectionString = store.postgres?.connectionString
  if (!connectionString) throw new EpxError('EPX_CONFIG_INVALID', ['store.kind is "postgres": set store.postgres.connectionString to the database (postgresql://…)'])
  return { pool: { connectionString, max: POOL_SIZE, statement_timeout: STATEMENT_TIMEOUT_MS } }
}
