/**
 * `--import` for test processes (see .taprc): runs the TypeScript of test/ and src/ by a
 * load hook of a few lines (ts-hooks.mjs) instead of tsx. Every test file is a process of
 * its own (~170 in `npm test`), and tsx's resolve and load hooks, which also see each of
 * tap's and Fastify's modules, cost each of them ~0.7 s of CPU more than plain node to
 * load tap alone, 0.8 s more for a file loading the store and the door: ~100 s of the
 * suite's CPU. This hook only compiles `.ts` files (esbuild, as tsx does) and hands every
 * other module straight to Node. It is enough here: every import names its file with its
 * extension (tsconfig `allowImportingTsExtensions`, `verbatimModuleSyntax`), there is no
 * `paths` mapping, no enum or namespace, and nothing `require()`s TypeScript.
 *
 * The inline source map carries each file's text (`sourcesContent`): tap measures
 * coverage through the inspector, and a map without it made c8 read every file as one
 * covered line. Source maps are on, as with tsx, so a stack names the TypeScript lines.
 * Workers do not inherit these hooks on Node 20: src/apply/read-programme.ts
 * `workerSource` says how the door's and the programme's workers load.
 */
import module from 'node:module'

// Node >= 22.1 keeps what V8 compiled of each module in the temp folder's node-compile-cache,
// for the next process: ~0.2 s of CPU less to load the store, Fastify and tap. Through the
// environment it also reaches the hooks' thread (registered after it), the door's and the
// programme's worker threads and the node processes a test starts (the CLI's).
const cache = module.enableCompileCache?.()
if (cache?.directory) process.env.NODE_COMPILE_CACHE = cache.directory

process.setSourceMapsEnabled(true)

// In the process's own thread, as tap's hooks are from Node 24.13.1 (`registerHooks` was
// buggy before): a hooks thread of ours, through which every module of the process then
// loaded, cost each test process ~0.17 s of CPU on Node 24 (14 small test files under tap,
// alternated: 19.3 s against 16.9 s). Older lines keep the hooks thread, which tap's process
// tracker starts there anyway. The rule is @tapjs/core's `registerHooks` export, written
// again here: importing @tapjs/core would load tap's core into the fixtures' processes that
// use this loader without tap (test/store/fixtures/, the disk-full and heap children).
const [major, minor, patch] = process.versions.node.split('.').map(Number)
if (module.registerHooks && (major > 24 || (major === 24 && (minor > 13 || (minor === 13 && patch >= 1))))) {
  const { loadSync } = await import('./ts-hooks.mjs')
  module.registerHooks({ load: loadSync })
} else {
  module.register('./ts-hooks.mjs', import.meta.url)
}
