/**
 * The PostgreSQL store's options from the configuration (`store.kind`, `store.postgres`):
 * the pool as connect.ts makes it (password read at each connection, TLS as configured)
 * and the target as logs name it.
 * @module
 */
import type { EpxConfig } from '../../config-schema.ts'
import { connectProblem, describeTarget, poolConfig, type ConnectOptions } from './connect.ts'
import type { PostgresStoreOptions } from './replica.ts'

/** undefined for `store.kind` "lmdb". `opts.dataDir` resolves the configured files (password, TLS). */
export function postgresStoreOptions (store: EpxConfig['store'], opts: ConnectOptions): PostgresStoreOptions | undefined {
  // loadConfig refuses kind "postgres" without store.postgres.
  if (store.kind !== 'postgres' || !store.postgres) return undefined
  const pg = store.postgres
  return { pool: poolConfig(pg, opts), describe: describeTarget(pg), explain: err => connectProblem(err, pg, opts) }
}
