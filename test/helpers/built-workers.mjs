/**
 * `--import` for test processes (see .taprc): sets `EPX_BUILT_WORKERS` to dist/ when its
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
const BUNDLES = ['door-worker.js', 'programme-worker.js']

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
