/**
 * Each engine checks its own options (the configuration's `store`): one entry per kind.
 * @module
 */
import type { StoreConfig } from '../config-schema.ts'
import { postgresOptionProblems } from './postgres/options.ts'

export { PASSWORD_IN_CONFIG } from './postgres/options.ts'

/** What the schema cannot say about the store's options, each problem naming its key. */
export function storeOptionProblems (store: StoreConfig): string[] {
  // store.postgres is checked whenever it is there: a kind switched back to "lmdb" keeps
  // a configuration that will be valid when it is switched again.
  return store.kind === 'postgres' || store.postgres !== undefined ? postgresOptionProblems(store) : []
}
