/**
 * Which engine holds the store, decided once: `openStore` for a folder and engine
 * options (the tests, the CLI), `openConfiguredStore` for the configuration's `store`
 * (the plugin, the API door's worker, the CLI). Everything else sees the port
 * (engine.ts). A new engine is a folder beside `lmdb/` and `postgres/`, a case here,
 * its options in the configuration schema, and its name in the tests' list of kinds.
 * @module
 */
import { existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { EpxConfig } from '../config-schema.ts'
import { inDataDir } from '../data-dir.ts'
import type { Logger } from '../host/contract.ts'
import type { Store, StoreFaults, StoreThreadShare } from './engine.ts'
import { openLmdbStore } from './lmdb/engine.ts'
import { openPostgresStore } from './postgres/engine.ts'
import { postgresStoreOptions } from './postgres/pool-config.ts'
import type { PostgresStoreOptions } from './postgres/replica.ts'

export { readFailure, readStore, storeUnavailable } from './engine.ts'
export type { AppliedChanges, Store, StoreFaults, StoreThreadShare, StoreVerification } from './engine.ts'

export interface OpenStoreOptions {
  mapSizeBytes?: number
  faults?: StoreFaults
  /** Where store faults are reported (one line per episode, fault-log.ts); none: not reported. */
  log?: Logger
  /** Told of every durable write that failed (the metrics). */
  onWriteFailed?: () => void
  /** Another thread of this process has this store open (environment.ts). */
  openInThisProcess?: boolean
  /** Present: PostgreSQL holds the store and the folder is this instance's replica of it. */
  postgres?: PostgresStoreOptions
}

/**
 * The outermost folder of `path` that does not exist yet: what opening a store there
 * creates (undefined when `path` exists). A caller that is refused removes it, so a
 * refused activation or command leaves no new, empty store behind to be mistaken for one.
 */
export function folderToCreate (path: string): string | undefined {
  let missing: string | undefined
  for (let p = resolve(path); !existsSync(p) && dirname(p) !== p; p = dirname(p)) missing = p
  return missing
}

export function openStore (path: string, opts: OpenStoreOptions = {}): Store {
  const { postgres, ...common } = opts
  return postgres ? openPostgresStore(path, { ...common, postgres }) : openLmdbStore(path, common)
}

export interface ConfiguredStoreOptions extends Omit<OpenStoreOptions, 'postgres' | 'openInThisProcess' | 'mapSizeBytes'> {
  readonly dataDir: string
  /** The store's folder when it is known already (the door's worker gets the plugin's); default: `store.path` in the data folder. */
  readonly path?: string
  /**
   * Opened on another thread of this process beside the store that gave this share
   * (`Store.threadShare()`): the API door's worker. Its connections are `poolSize`, and it
   * follows nothing: the giving store's feed keeps the shared replica.
   */
  readonly besideThisProcess?: { readonly share: StoreThreadShare | undefined; readonly poolSize: number }
}

/** The store the configuration names, its folder resolved against the data folder. */
export function openConfiguredStore (store: EpxConfig['store'], opts: ConfiguredStoreOptions): Store {
  const { dataDir, besideThisProcess, path: given, ...common } = opts
  const path = given ?? inDataDir(dataDir, store.path)
  const postgres = postgresStoreOptions(store, { dataDir })
  const beside = besideThisProcess
  return openStore(path, {
    ...common,
    mapSizeBytes: store.mapSizeBytes,
    ...(beside ? { openInThisProcess: true } : {}),
    ...(postgres
      ? { postgres: beside ? { ...postgres, pool: { ...postgres.pool, max: beside.poolSize }, follow: false, ...(beside.share ? { availability: beside.share.availability, ownWrites: beside.share.ownWrites } : {}) } : postgres }
      : {}),
  })
}
