import t from 'tap'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// DECISIONS.md "Robustness": a store fault never takes the solver down. A real write
// failure needs a real limit: the fixture runs epx in a child process whose file size
// is capped, posts a programme too big for it, and checks the 503 and its own survival.
t.test('a full disk answers 503 NO_STORE, leaves no unhandled rejection behind, logs one error line with its cause and one on recovery, and prints nothing to stderr', async t => {
  const fixture = fileURLToPath(new URL('./fixtures/disk-full.ts', import.meta.url))
  // 2048 blocks: 1 MiB or 2 MiB depending on the shell's block size, either way too small.
  const run = spawnSync('sh', ['-c', 'ulimit -f 2048 && exec "$0" --import=./test/helpers/ts-loader.mjs "$1"', process.execPath, fixture], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    encoding: 'utf8',
    timeout: 90_000,
  })
  t.equal(run.status, 0, `fixture exit code (stderr: ${run.stderr.slice(-600)})`)
  t.match(run.stdout, /^ok 1 - a programme the disk cannot hold is 503 NO_STORE/m)
  t.notMatch(run.stdout, /not ok/)
  t.notMatch(run.stderr, /Unhandled|ERR_UNHANDLED_REJECTION/)
  // Nothing from a dependency on the host's stderr (lmdb-js printed its stack there).
  t.equal(run.stderr, '', 'the host\'s stderr stays empty')
  t.match(run.stdout, /ok \d+ - one error line an episode/)
})
