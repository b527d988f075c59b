/**
 * `--import` for test processes (see .taprc), for what they start. It sets `EPX_BUILT_WORKERS` to dist/ when its
 * worker bundles are newer than every file of src/ (tap's `before:` has just built them),
 * so a test's door and programme workers load the bundle of today's sources
 * (src/apply/read-programme.ts `workerSource`) instead of starting tsx and compiling
 * those sources in each worker: ~0.5 s of CPU and ~1 s less per worker start, and the
 * suite starts one per activation. Coverage is unchanged:
 * the bundles' source maps lead back to src/. When src/ is newer (a file edited since the
 * last build, a test run with plain `node`), the workers run the sources through tsx.
 */
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
const dist = join(root, 'dist')
const BUNDLES = ['door-worker.js', 'programme-worker.js', 'webhooks-worker.js']

function newestUnder (dir) {
  let newest = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name)
    newest = Math.max(newest, e.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs)
  }
  return newest
}

try {
  const built = Math.min(...BUNDLES.map(b => statSync(join(dist, b)).mtimeMs))
  if (built >= newestUnder(join(root, 'src'))) process.env.EPX_BUILT_WORKERS = dist
} catch {
  // No dist/ yet: the workers run the sources.
}

/**
 * Without coverage (every run but `npm run test:coverage`'s),
 * the threads and the node processes a test starts do without tap's process tracker
 * (@tapjs/processinfo, which tap puts in NODE_OPTIONS, and Node applies to every worker
 * too): in each one it started a loader thread of its own and read every module loaded,
 * ~0.6 s of CPU per door thread's start, and the suite starts one per activation
 * (test/http/inbound.test.ts alone: 38.6 s of CPU with it, 17.7 s without). With coverage
 * it stays: it is what measures the code that runs in the door's thread and in the CLI's
 * processes.
 */
if (process.env._TAPJS_PROCESSINFO_COVERAGE_ === '0' && process.env.NODE_OPTIONS?.includes('@tapjs/processinfo')) {
  const rest = process.env.NODE_OPTIONS.replace(/"?--(?:import|loader)=[^\s"]*@tapjs\/processinfo[^\s"]*"?/g, '').trim()
  if (rest) process.env.NODE_OPTIONS = rest
  else delete process.env.NODE_OPTIONS
}
