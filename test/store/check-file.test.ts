import t from 'tap'
import { spawn } from 'node:child_process'
import * as fs from 'node:fs'
import { join } from 'node:path'
import { checkStoreFiles } from '../../src/store/check-file.ts'
import { dataFolderWithStore, FIXTURE, ROOT } from './fixtures/damaged.ts'

// The check must never refuse a healthy store, also while another process commits to
// it (a CLI command beside `epx start`): its pages and meta pages move under our reads.
t.test('a healthy store under a writer in another process always passes the check', async t => {
  const { dir } = await dataFolderWithStore(t)
  const writer = spawn(process.execPath, ['--import=./test/helpers/ts-loader.mjs', FIXTURE, dir, 'write'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] })
  let gone = false
  const exited = new Promise<number | null>(resolve => writer.on('close', code => { gone = true; resolve(code) }))
  let out = ''
  let commits = 0
  await new Promise<void>((resolve, reject) => {
    writer.stdout.on('data', d => {
      out += d
      for (const m of out.matchAll(/committed (\d+)\n/g)) commits = Number(m[1])
      out = out.slice(out.lastIndexOf('\n') + 1)
      resolve()
    })
    writer.on('close', code => reject(new Error(`writer exited ${code}`)))
  })
  // Checks go on until the writer has committed 20 times among them, however slow the
  // machine: the test is about reads meeting commits, not about how many fit in a time.
  const problems: string[] = []
  let checks = 0
  for (; checks < 1500 || (commits < 20 && !gone); checks++) {
    const check = checkStoreFiles(join(dir, 'epx.lmdb'))
    if (check.problem) problems.push(check.problem)
    if (checks % 10 === 0) await new Promise(resolve => setTimeout(resolve, 1))
  }
  writer.stdin.end()
  t.equal(await exited, 0, 'the writer ran to the end')
  t.ok(commits >= 20, `commits made meanwhile: ${commits}, over ${checks} checks`)
  t.same(problems, [], `${checks} checks, no refusal`)
})

// The same, without timing luck: a commit lands right after the check has read the file's
// size (another process's writer, played here at that very moment). LMDB writes a
// commit's pages before its meta page, so the metas read before the size never claim
// more than it; a meta read after it may. Both reads of the check (it reads twice before
// a refusal stands) meet such a commit.
t.test('a commit landing right after the check reads the size does not make a healthy store look truncated', async t => {
  const { dataFile } = await dataFolderWithStore(t)
  const PAGE = 4096
  const AT_LAST_PAGE = 144
  const AT_TXN = 152
  let commits = 0
  /** A commit by another writer: one page more, then meta page 1 the newer, saying so. */
  const commitBeside = () => {
    const fd = fs.openSync(dataFile, 'r+')
    try {
      const metas = Buffer.alloc(2 * PAGE)
      fs.readSync(fd, metas, 0, 2 * PAGE, 0)
      const newer = metas.readBigUInt64LE(PAGE + AT_TXN) > metas.readBigUInt64LE(AT_TXN) ? PAGE : 0
      const txn = metas.readBigUInt64LE(newer + AT_TXN)
      const lastPage = metas.readBigUInt64LE(newer + AT_LAST_PAGE)
      // An empty tree of pages past the old end, then the meta.
      fs.ftruncateSync(fd, Number(lastPage + 2n) * PAGE)
      const meta = Buffer.from(metas.subarray(newer, newer + PAGE))
      meta.writeBigUInt64LE(lastPage + 1n, AT_LAST_PAGE)
      meta.writeBigUInt64LE(txn + 1n, AT_TXN)
      // Page 1's own page number in its header (LMDB numbers the meta pages 0 and 1).
      meta.writeBigUInt64LE(1n, 0)
      fs.writeSync(fd, meta, 0, PAGE, PAGE)
      commits++
    } finally {
      fs.closeSync(fd)
    }
  }
  // The commit lands right after each size read (tap's mockImport of node:fs would do the
  // same, but hangs on Node 22 with tsx's loader).
  const result = checkStoreFiles(join(dataFile, '..'), fd => {
    const size = fs.fstatSync(fd).size
    if (commits < 4) commitBeside()
    return size
  })
  t.ok(commits >= 1, `a commit landed while the check ran (${commits})`)
  t.same(result, {}, 'no refusal')
  t.same(checkStoreFiles(join(dataFile, '..')), {}, 'the store after those commits passes the check too')
})
