import t from 'tap'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// DECISIONS.md "Robustness": a store fault never takes the solver down. A real write
// failure needs a real limit: the fixture runs epx in a child process whose file size
// is capped, posts a programme too big for it, and checks the 503 and its own survival.
t.test('a full disk answers 503 NO_STORE and leaves no unhandled rejection behind', async t => {
  const fixture = fileURLToPath(new URL('./fixtures/disk-full.ts', import.meta.url))
  // 2048 blocks: 1 MiB or 2 MiB depending on the shell's block size, either way too small.
  const run = spawnSync('sh', ['-c', 'ulimit -f 2048 && exec "$0" --import=tsx "$1"', process.execPath, fixture], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    encoding: 'utf8',
    timeout: 90_000,
  })
  t.equal(run.status, 0, `fixture exit code (stderr: ${run.stderr.slice(-600)})`)
  t.match(run.stdout, /^ok 1 - a programme the disk cannot hold is 503 NO_STORE/m)
  t.notMatch(run.stdout, /not ok/)
  t.notMatch(run.stderr, /Unhandled|ERR_UNHANDLED_REJECTION/)
})
