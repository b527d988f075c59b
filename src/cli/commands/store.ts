/**
 * `epx store backup DIR`: a consistent copy of the store, made while `epx start` (or a
 * solver with the plugin) runs, written atomically (store/backup.ts). `epx store migrate`:
 * the PostgreSQL store's schema created or upgraded (store/postgres/migrate.ts).
 * @module
 */
import pg from 'pg'
import { EpxError } from '../../errors.ts'
import { migrateSchema } from '../../store/postgres/migrate.ts'
import { connectFailure } from '../../store/postgres/connect.ts'
import { postgresStoreOptions } from '../../store/postgres/pool-config.ts'
import { describePool } from '../../store/postgres/connections.ts'
import { POSTGRES_BACKUP } from '../../store/postgres/engine.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { copyCommand } from './store-copy.ts'
import { verifyCommand } from './store-verify.ts'
import type { Command } from '../io.ts'
import { readSettings, withStore } from '../settings.ts'

/** How to put a backup back, for `--help`, the command's output and docs/operating.md. */
export const RESTORE_STEPS = 'to restore: stop epx, move the store folder aside (<data>/epx.lmdb, store.path), copy the backup folder in its place, start epx'

const backupSpec: CommandSpec = {
  usage: 'epx store backup DIR',
  summary: 'copy the store to a new folder, consistently, while the service runs',
  about: [
    'Writes a consistent copy of the store (LMDB snapshot and revision files) to the new',
    'folder DIR, while the service runs: DIR appears only once the copy is whole, and an',
    'existing DIR is never overwritten.',
    `To restore: stop epx, move the store folder (<data>/epx.lmdb) aside, copy DIR in its`,
    'place, start epx.',
  ].join('\n'),
  positionals: ['DIR'],
}

const backup = defineCommand(backupSpec, async (args, io) => {
  if (readSettings(io.dataDir).config.store.kind === 'postgres') {
    // The folder is only this instance's replica: a copy of it restores nothing by itself.
    throw new EpxError('EPX_USAGE', [POSTGRES_BACKUP])
  }
  const result = await withStore(io.dataDir, store => store.backup(args.positionals[0]!))
  io.out(`store backed up to ${result.dir} (${result.segmentFiles} revision file(s)); ${RESTORE_STEPS}`)
})

const migrateSpec: CommandSpec = {
  usage: 'epx store migrate',
  summary: 'create or upgrade the PostgreSQL store\'s schema (store.kind "postgres")',
  about: [
    'Brings the database of store.postgres to the schema this epx needs: creates it in an',
    'empty database, upgrades an older one, leaves a current one as it is. Refuses a',
    'database at a newer version (run that epx) or one holding tables that are not epx\'s.',
    'Safe while instances run: each step waits for the write in progress.',
  ].join('\n'),
}

const migrate = defineCommand(migrateSpec, async (_args, io) => {
  const { config } = readSettings(io.dataDir)
  const options = postgresStoreOptions(config.store, { dataDir: io.dataDir })
  if (!options) throw new EpxError('EPX_USAGE', ['store.kind is "lmdb": an LMDB store has no schema to migrate (set store.kind "postgres" and store.postgres first)'])
  const where = options.describe ?? describePool(options.pool)
  const client = new ((options.pool.Client as typeof pg.Client | undefined) ?? pg.Client)(options.pool)
  client.on('error', () => {})
  try {
    await client.connect().catch((err: unknown) => { throw connectFailure(err, config.store.postgres!, { dataDir: io.dataDir }) })
    const { from, to } = await migrateSchema(client, where)
    io.out(from === to ? `the store's schema in ${where} is at version ${to}: nothing to do` : `the store's schema in ${where} migrated from version ${from} to ${to}`)
  } catch (err) {
    if (err instanceof EpxError) throw err
    throw new EpxError('EPX_STORE_OPEN_FAILED', [`${where} (PostgreSQL)`, (err as Error).message], { cause: err })
  } finally {
    await client.end().catch(() => {})
  }
})

export const storeSubcommands: readonly Command[] = [backup, migrate, copyCommand, verifyCommand]
