/**
 * The store's suite runs on both store kinds, one suite, not a copy:
 *
 *   for (const kind of storeKinds) t.test(kind, async t => {
 *     const { openStore } = storesOf(t, kind)
 *     t.test('…', async t => { const store = await openStore(t.testdir()); … })
 *   })
 *
 * `openStore(dir, opts)` resolves once the store answers. With `postgres`, the folder is
 * the instance's replica and each new folder gets a database of its own (created and
 * migrated here) in the file's one throwaway cluster (scripts/postgres-cluster.ts, started at the
 * first PostgreSQL store of the file); opening the same folder again reopens its
 * database, so a "reopen" test checks what the database kept. `EPX_STORE_KINDS=lmdb`
 * (or `postgres`) runs one kind only.
 * @module
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import type { Test } from 'tap'
import { openStore as openAnyStore, type OpenStoreOptions, type Store } from '../../src/store/open-store.ts'
import { migrateSchema } from '../../src/store/postgres/migrate.ts'
import { openInstructions, type Instructions } from '../../src/store/instructions.ts'
import { startPostgres, type PostgresCluster } from '../../scripts/postgres-cluster.ts'

export type StoreKind = 'lmdb' | 'postgres'

export const storeKinds: readonly StoreKind[] = (process.env.EPX_STORE_KINDS?.split(',') as StoreKind[] | undefined) ?? ['lmdb', 'postgres']

export interface KindStores {
  readonly kind: StoreKind
  /** A store of this kind in `dir` (its replica folder with PostgreSQL), open and answering. */
  openStore(dir: string, opts?: OpenStoreOptions): Promise<Store>
  /** PostgreSQL: the file's cluster (started on first use). */
  cluster(): PostgresCluster
  /** PostgreSQL: the database behind `dir` (created and migrated on first use). */
  databaseOf(dir: string): Promise<string>
}

/** A store of `stores`' kind in `path` (a fresh folder by default), closed when `t` ends, and its instructions. */
export async function openInstructionStore (t: Test, stores: Pick<KindStores, 'openStore'>, path = t.testdir()): Promise<{ store: Store; instructions: Instructions }> {
  const store = await stores.openStore(path)
  t.teardown(() => store.close())
  return { store, instructions: openInstructions(store) }
}

let shared: PostgresCluster | undefined
let databases = new Map<string, string>()

/** The file's one cluster, fsync off (these tests are not of the server's durability), until `t` ends. */
export function fileCluster (t: Test): PostgresCluster {
  if (!shared) {
    const c = shared = startPostgres({ fsync: 'off', synchronous_commit: 'off' })
    databases = new Map()
    // Gone when `t` ends: the kind's test, which holds every test of the kind.
    t.teardown(() => { c.destroy(); if (shared === c) shared = undefined })
  }
  return shared
}

let counter = 0

/** A new database of `cluster` with epx's schema: its name. */
export async function migratedDatabase (cluster: PostgresCluster, name = `epx_${process.pid}_${++counter}`): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`)
  // Through a connection, not psql: a process less per test.
  const admin = new pg.Client(cluster.connection('postgres'))
  await admin.connect()
  try { await admin.query(`CREATE DATABASE ${name}`) } finally { await admin.end() }
  const client = new pg.Client(cluster.connection(name))
  await client.connect()
  try { await migrateSchema(client, name) } finally { await client.end() }
  return name
}

export function storesOf (t: Test, kind: StoreKind): KindStores {
  const cluster = () => fileCluster(t)
  const databaseOf = async (dir: string): Promise<string> => {
    // The cluster first: its first start makes `databases` anew, and a name set in the map
    // it replaced would be forgotten (the file's first folder reopened on another database).
    const c = cluster()
    let name = databases.get(dir)
    if (!name) databases.set(dir, name = await migratedDatabase(c))
    return name
  }
  return {
    kind,
    cluster,
    databaseOf,
    async openStore (dir, opts = {}) {
      if (kind === 'lmdb') return openAnyStore(dir, opts)
      const database = await databaseOf(dir)
      const store = openAnyStore(dir, { ...opts, postgres: { pool: { ...cluster().connection(database), max: 4 }, ...opts.postgres } })
      try {
        await store.opened
      } catch (err) {
        await store.close()
        throw err
      }
      return endsEqual(store)
    },
  }
}

/**
 * PostgreSQL: two instances on one database, each its own replica in a folder of
 * `t.testdir()`, closed when `t` ends (each then compared with the database, as every
 * store of `openStore` is).
 */
export async function twoStores (t: Test, stores: KindStores): Promise<{ a: Store; b: Store }> {
  const root = t.testdir()
  const database = await stores.databaseOf(join(root, 'a'))
  const connect = { pool: { ...stores.cluster().connection(database), max: 4 } }
  const a = await stores.openStore(join(root, 'a'), { postgres: connect })
  t.teardown(() => a.close())
  const b = await stores.openStore(join(root, 'b'), { postgres: connect })
  t.teardown(() => b.close())
  return { a, b }
}

/**
 * Every replica a test opens ends equal to its database: `close()` first compares them
 * (`store.verify()`) and rejects, failing the test that closes it, when a sub-database
 * differs. A store that cannot be compared then (its database stopped by the test, a
 * replica kept busy off the snapshot, its folder removed) is closed without a verdict.
 */
function endsEqual (store: Store): Store {
  const close = store.close.bind(store)
  let closing: Promise<void> | undefined
  return Object.assign(store, {
    close: () => closing ??= (async () => {
      // A folder its test removed already (t.testdir's cleanup may come first) has nothing to compare.
      const v = store.ready() && existsSync(store.path) ? await store.verify().catch(() => undefined) : undefined
      await close()
      if (v?.kind === 'compared' && v.differ.length > 0) {
        const tables = v.tables.filter(x => v.differ.includes(x.db)).map(x => `${x.db}: ${x.replica.records} here, ${x.postgres.records} in the database`)
        throw new Error(`the replica ${store.path} does not equal its database at seq ${v.seq}: ${tables.join('; ')}`)
      }
    })(),
  })
}
