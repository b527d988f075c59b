import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { checkStoreFiles } from '../../src/store/check-file.ts'
import { dataFolderWithStore, FIXTURE, ROOT } from './fixtures/damaged.ts'

// The check must never refuse a healthy store, also while another process commits to
// it (a CLI command beside `epx start`): its pages and meta pages move under our reads.
t.test('a healthy store under a writer in another process always passes the check', async t => {
  const { dir } = await dataFolderWithStore(t)
  const writer = spawn(process.execPath, ['--import=./test/helpers/tsx-with-source-text.mjs', FIXTURE, dir, 'write'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise<number | null>(resolve => writer.on('close', resolve))
  let out = ''
  await new Promise<void>((resolve, reject) => {
    writer.stdout.on('data', d => { out += d; if (out.includes('writing')) resolve() })
    writer.on('close', code => reject(new Error(`writer exited ${code}`)))
  })
  const problems: string[] = []
  for (let i = 0; i < 1500; i++) {
    const check = checkStoreFiles(join(dir, 'epx.lmdb'))
    if (check.problem) problems.push(check.problem)
    if (i % 10 === 0) await new Promise(resolve => setTimeout(resolve, 1))
  }
  writer.stdin.end()
  t.equal(await exited, 0, 'the writer ran to the end')
  t.ok(Number(/wrote (\d+)/.exec(out)?.[1]) >= 20, `commits made meanwhile: ${out.trim().split('\n').at(-1)}`)
  t.same(problems, [], '1,500 checks, no refusal')
})
