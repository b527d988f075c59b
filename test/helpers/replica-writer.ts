/**
 * A PostgreSQL store in a process of its own, for a test to SIGKILL while it writes:
 *
 *   node --import=tsx test/helpers/replica-writer.ts <replica folder> <pool config JSON> <jobs JSON>
 *
 * Each job is a list of records to put (`value` a number: things' `{ w }`, metering's
 * bytes) or remove (`value` null), written as one `writeDurable`, one after another. It
 * prints `ready` once the store answers, then `done <i>` or `refused <i>` as each job
 * settles (stdout is a pipe: each line is written before the next job starts), and waits.
 * @module
 */
import { openStore } from '../../src/store/open-store.ts'
import { recordValue, type RecordOp } from './replica-model.ts'

const [dir, poolJson, jobsJson] = process.argv.slice(2)
const jobs = JSON.parse(jobsJson!) as RecordOp[][]
const store = openStore(dir!, { postgres: { pool: JSON.parse(poolJson!), pollMs: 300 } })
const dbs = { things: store.db('things'), metering: store.db('metering', { binary: true }) }
try {
  await store.opened
} catch (err) {
  process.stdout.write(`unopened ${(err as Error).message}\n`)
  process.exit(1)
}
process.stdout.write('ready\n')
for (const [i, ops] of jobs.entries()) {
  try {
    await store.writeDurable(() => {
      for (const op of ops) {
        if (op.w === null) dbs[op.db].removeSync(op.key)
        else dbs[op.db].putSync(op.key, recordValue(op))
      }
    })
    process.stdout.write(`done ${i}\n`)
  } catch {
    process.stdout.write(`refused ${i}\n`)
  }
}
setInterval(() => {}, 60_000)
