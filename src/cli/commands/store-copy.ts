/**
 * `epx store copy --to postgres`: the data folder's LMDB store moved into the empty database
 * of `store.postgres` and verified (store/postgres/copy.ts), with the verification printed
 * per sub-database.
 * @module
 */
import pg from 'pg'
import { inDataDir } from '../../config.ts'
import { EpxError } from '../../errors.ts'
import { connectFailure, describeTarget, poolConfig } from '../../store/postgres/connect.ts'
import { copyLmdbToPostgres } from '../../store/postgres/copy.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { readSettings } from '../settings.ts'
import { formatTable } from '../table.ts'

const spec: CommandSpec = {
  usage: 'epx store copy --to postgres [--json]',
  summary: 'move the LMDB store into the empty PostgreSQL database of store.postgres, verified',
  about: [
    'Copies every record of the LMDB store (store.path) into the database of store.postgres,',
    'which must have been made for it: `epx store migrate` run, no record yet. One transaction:',
    'before it commits, each sub-database\'s count and SHA-256 are computed from LMDB and from',
    'PostgreSQL and must agree; otherwise nothing is written. Stop epx first; afterwards set',
    'store.kind to "postgres" and store.path to a new folder (the instance\'s replica), and start',
    'it. The LMDB store is only read: it stays as it was.',
  ].join('\n'),
  options: {
    to: { type: 'string', arg: 'KIND', help: 'the kind of store to copy into: postgres' },
    json: { type: 'boolean', help: 'print the verification as JSON' },
  },
}

export const copyCommand = defineCommand(spec, async (args, io) => {
  const to = args.string('to')
  if (to !== 'postgres') throw new EpxError('EPX_USAGE', [`epx store copy needs --to postgres (the only kind to copy into)${to === undefined ? '' : `, not --to ${to}`}`])
  const { config } = readSettings(io.dataDir)
  const target = config.store.postgres
  if (!target) throw new EpxError('EPX_USAGE', ['store.postgres is not configured: set it to the database to copy into (docs/configuration.md), run `epx store migrate`, then copy'])
  const where = describeTarget(target)
  const connection = poolConfig(target, { dataDir: io.dataDir })
  const client = new ((connection.Client as typeof pg.Client | undefined) ?? pg.Client)(connection)
  client.on('error', () => {})
  try {
    await client.connect().catch((err: unknown) => { throw connectFailure(err, target, { dataDir: io.dataDir }) })
    const source = inDataDir(io.dataDir, config.store.path)
    const report = await copyLmdbToPostgres(source, client, where)
    if (args.flag('json')) {
      io.out(JSON.stringify({ from: source, to: where, tables: report.tables }, null, 2))
      return
    }
    const total = report.tables.reduce((n, t) => n + t.postgres.records, 0)
    io.out(`copied ${total} record(s) from ${source} into ${where}, verified:`)
    for (const line of formatTable([
      ['SUB-DATABASE', 'LMDB', 'POSTGRESQL', 'SHA-256 (LMDB)', 'SHA-256 (POSTGRESQL)'],
      ...report.tables.map(t => [t.db, String(t.lmdb.records), String(t.postgres.records), t.lmdb.sha256,
        t.postgres.sha256 === t.lmdb.sha256 ? 'same' : t.postgres.sha256]),
    ])) io.out(line)
    io.out(`next: in epx.config.json set store.kind to "postgres" and store.path to a new folder (this instance's replica of the database), then start epx; ${source} stays as it was`)
  } finally {
    await client.end().catch(() => {})
  }
})
