/**
 * `epx store verify`: whether this instance's replica (store.path) equals the PostgreSQL
 * database, sub-database by sub-database (count and SHA-256, store/postgres/verify.ts),
 * printed as `epx store copy` prints its verification. The replica is opened read-only:
 * LMDB lets a reader in beside `epx start` writing to it, and nothing is written to
 * either side.
 * @module
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { open, type Database, type Key, type RootDatabase } from 'lmdb'
import pg from 'pg'
import { inDataDir } from '../../config.ts'
import { EpxError, isEpxError } from '../../errors.ts'
import { checkStoreFiles } from '../../store/check-file.ts'
import { connectFailure, describeTarget, poolConfig } from '../../store/postgres/connect.ts'
import { checkSchema } from '../../store/postgres/migrate.ts'
import { SUB_DATABASES } from '../../store/postgres/schema.ts'
import { verifyWhenAtSnapshot, type ReplicaView, type Verification } from '../../store/postgres/verify.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { readSettings } from '../settings.ts'
import { formatTable } from '../table.ts'

/** The replica's bookkeeping sub-database and what it holds (store/postgres/replica.ts). */
const META_DB = 'epx-replica'
/** Where each msgpack sub-database keeps its shared record structures (as open-store.ts opens them). */
const STRUCTURES_KEY = Symbol.for('structures')

/** What to do about a replica that differs: only a reload from the database makes it right. */
const RELOAD = 'stop this instance, move its store.path folder aside and start it again: it loads the replica from the database anew and verifies it'

const spec: CommandSpec = {
  usage: 'epx store verify [--json]',
  summary: 'compare this instance\'s replica (store.path) with the PostgreSQL database, per sub-database',
  about: [
    'For store.kind "postgres": compares the local replica (store.path) with the database of',
    'store.postgres, each sub-database\'s count and SHA-256 (the fingerprint `epx store copy`',
    'verifies with), once the replica has applied exactly the database\'s last change. Safe',
    'while `epx start` runs: the replica is only read, the database read in one snapshot;',
    'an instance that keeps writing may not let the two meet: then try again.',
    'Exits 0 when they are equal; 1 with the reason otherwise.',
  ].join('\n'),
  options: {
    json: { type: 'boolean', help: 'print the comparison as JSON' },
  },
}

export const verifyCommand = defineCommand(spec, async (args, io) => {
  const { config } = readSettings(io.dataDir)
  const target = config.store.postgres
  if (config.store.kind !== 'postgres' || !target) {
    throw new EpxError('EPX_USAGE', ['store.kind is "lmdb": the store is its folder and there is no replica to compare with a database, nothing to verify (`epx store verify` is for store.kind "postgres")'])
  }
  const path = inDataDir(io.dataDir, config.store.path)
  const where = describeTarget(target)
  const fail = (why: string) => new EpxError('EPX_STORE_VERIFY_FAILED', [path, where, why])
  const root = openReplica(path, fail)
  try {
    const present = (): Set<string> => new Set([...root.getKeys({})].filter((k): k is string => typeof k === 'string'))
    const held = present()
    if (!held.has(META_DB)) {
      throw fail(held.size > 0
        ? 'the folder holds an LMDB store (store.kind "lmdb"), not a replica: store.path must name this instance\'s replica folder'
        : 'the replica is empty: start epx on this store.path once (it loads the replica from the database), then verify')
    }
    const meta = root.openDB({ name: META_DB, encoding: 'msgpack' })
    if (meta.get('loading') === true) {
      throw fail('the replica is still loading from the database (its load is not verified yet, and it is not served): wait until epx says "the local replica is loaded and verified", then try again')
    }
    const opened = new Map<string, Database<any, Key>>()
    const view: ReplicaView = {
      root,
      path,
      rawDb (name) {
        // A sub-database the replica never had is empty: nothing was ever written to it.
        let d = opened.get(name)
        if (!d) {
          if (!present().has(name)) return undefined
          d = SUB_DATABASES[name]?.binary
            ? root.openDB({ name, encoding: 'binary' })
            : root.openDB({ name, encoding: 'msgpack', sharedStructuresKey: STRUCTURES_KEY })
          opened.set(name, d)
        }
        return d
      },
      cursor: () => {
        // The pass that starts here decodes records with the shapes of its own snapshot:
        // a running instance adds msgpack record shapes as it writes new kinds of records.
        for (const d of opened.values()) {
          const structures = (d as { encoder?: { structures?: { uninitialized?: boolean } } }).encoder?.structures
          if (structures) structures.uninitialized = true
        }
        return (meta.get('cursor') as number | undefined) ?? 0
      },
    }

    const client = new pg.Client(poolConfig(target, { dataDir: io.dataDir }))
    client.on('error', () => {})
    let v: Verification
    try {
      await client.connect().catch((err: unknown) => { throw connectFailure(err, target, { dataDir: io.dataDir }) })
      const databaseId = await checkSchema(client, where)
      if (meta.get('database_id') !== databaseId) {
        throw fail('the replica is of another database (store.postgres changed since it was loaded): start epx, it loads the replica from this database, then verify')
      }
      v = await compareBeside(view, client)
      if (v.kind === 'compared' && v.differ.length > 0) {
        // Beside an instance publishing, a comparison read by this process (lmdb-js, its
        // read transaction renewed lazily) was seen to find the publication's records
        // with the cursor of the commit before: a difference stands once a second
        // comparison, at the same or a later change, finds it too.
        const again = await compareBeside(view, client)
        if (again.kind === 'compared') v = again
      }
    } finally {
      await client.end().catch(() => {})
    }

    if (args.flag('json')) {
      io.out(JSON.stringify({ replica: path, database: where, ...v, ...(v.kind === 'compared' ? { equal: v.differ.length === 0 } : {}) }, null, 2))
    }
    if (v.kind === 'not-at-snapshot') {
      throw fail(`the replica is at change ${v.cursor} and the database at ${v.seq}, still apart after several tries: the instance is writing or catching up; try again`)
    }
    if (!args.flag('json')) {
      io.out(`the replica ${path} compared with ${where} at change ${v.seq}:`)
      for (const line of formatTable([
        ['SUB-DATABASE', 'REPLICA', 'POSTGRESQL', 'SHA-256 (REPLICA)', 'SHA-256 (POSTGRESQL)'],
        ...v.tables.map(t => [t.db, String(t.replica.records), String(t.postgres.records), t.replica.sha256,
          t.postgres.sha256 === t.replica.sha256 ? 'same' : t.postgres.sha256]),
      ])) io.out(line)
    }
    if (v.differ.length > 0) {
      const counts = v.tables.filter(t => v.differ.includes(t.db)).map(t => `${t.db}: ${t.replica.records} record(s) in the replica, ${t.postgres.records} in the database`)
      throw fail(`sub-database(s) ${v.differ.join(', ')} differ (${counts.join('; ')}): ${RELOAD}`)
    }
    if (!args.flag('json')) io.out('equal: the replica holds exactly what the database holds')
  } finally {
    await root.close()
  }
})

/**
 * `verifyWhenAtSnapshot`, tried again when reading the replica fails: beside an instance
 * writing, a pass can meet a record of a shape committed after its shapes were read.
 * A failure that stays (the database gone) is thrown.
 */
async function compareBeside (view: ReplicaView, client: pg.Client): Promise<Verification> {
  for (let i = 1; ; i++) {
    try {
      return await verifyWhenAtSnapshot(view, client)
    } catch (err) {
      if (i >= 3 || isEpxError(err) || (err as { code?: unknown }).code !== undefined) throw err
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  }
}

/** The replica at `path`, read-only; refused as lmdb-js would crash on it (check-file.ts). */
function openReplica (path: string, fail: (why: string) => EpxError): RootDatabase {
  if (!existsSync(join(path, 'data.mdb'))) {
    throw fail(`there is no replica there yet (no data.mdb): start epx once with this store.path (it loads the replica from the database), then verify`)
  }
  const check = checkStoreFiles(path)
  if (check.problem) throw fail(`${check.problem}; ${check.advice}`)
  return open({ path, noSubdir: false, readOnly: true, maxDbs: 64, compression: false })
}
