import t from 'tap'
import { spawn } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { dataFolderWithStore, FIXTURE, openInChild, overwrite, ROOT } from './fixtures/damaged.ts'

// The lock file: LMDB rebuilds a damaged lock.mdb when it is alone,
// and refuses it (lmdb-js then crashes) when another process has the store open.

t.test('a damaged lock.mdb: refused while another process has the store open, rebuilt by LMDB once it is alone', async t => {
  const { dir } = await dataFolderWithStore(t)
  const lockFile = join(dir, 'epx.lmdb', 'lock.mdb')
  const holder = spawn(process.execPath, ['--import=./test/helpers/ts-loader.mjs', FIXTURE, dir, 'hold'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise<number | null>(resolve => holder.on('close', resolve))
  await new Promise<void>((resolve, reject) => {
    holder.stdout.on('data', d => { if (String(d).includes('holding')) resolve() })
    holder.on('close', code => reject(new Error(`holder exited ${code}`)))
  })
  overwrite(lockFile, 0, Buffer.alloc(statSync(lockFile).size))
  const busy = openInChild(dir)
  t.equal(busy.signal, null, `no crash (stderr: ${busy.stderr.slice(-400)})`)
  t.match(busy.attempts[0], { ok: false, code: 'EPX_STORE_OPEN_FAILED' })
  t.match(busy.attempts[0]?.message, /lock\.mdb has no LMDB magic .*while another process has the store open; stop every epx process .* delete .*lock\.mdb \(it holds no data\)/)
  t.same(busy.attempts.at(-1), { step: 'alive', ok: true })
  holder.stdin.end()
  await exited

  const alone = openInChild(dir)
  t.same(alone.attempts.map(a => [a.step, a.ok]), [['openStore', true], ['activate', true], ['alive', true]], alone.stderr.slice(-400))
  t.equal(readFileSync(lockFile).readUInt32LE(0), 0xBEEFC0DE, 'LMDB rebuilt the lock file')
})
