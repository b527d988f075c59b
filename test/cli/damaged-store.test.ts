import t from 'tap'
import { closeSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { epx, initializedDataDir, spawnEpx } from '../helpers/cli.ts'

// At the CLI door, a damaged store is `epx: cannot open the store ...`
// with the reason and what to do, exit code 1; no crash (the real binary, in a child).
t.test('epx company list and epx start on a store whose header was zeroed exit 1 with the reason and what to do', async t => {
  const dir = await initializedDataDir(t)
  t.equal((await epx(dir, 'company', 'add', 'acme', '--name', 'ACME')).code, 0)
  const fd = openSync(join(dir, 'epx.lmdb', 'data.mdb'), 'r+')
  writeSync(fd, Buffer.alloc(8192), 0, 8192, 0)
  closeSync(fd)

  for (const argv of [['company', 'list'], ['start', '--port', '0']]) {
    const run = await spawnEpx(['--data', dir, ...argv])
    t.equal(run.code, 1, `epx ${argv[0]} exits 1 (stderr: ${run.stderr.slice(-300)})`)
    t.match(run.stderr, /^epx: cannot open the store at \S+epx\.lmdb: data\.mdb page 0 is not an LMDB meta page .*; restore a backup made with `epx store backup`/m)
    t.notMatch(run.stderr, /\n\s+at /, 'no stack trace')
  }
})
