#!/usr/bin/env node
/**
 * Builds what a solver loads: `dist/index.js` (the plugin, `activate`) and
 * `dist/programme-worker.js` (the thread that parses large programmes), plain ESM for
 * Node 20. A daemon then runs epx without a TypeScript loader: tsx's loader thread alone
 * is ~37 MB of resident memory (bench/README.md), and its helpers cost CPU on every request.
 * Also `dist/cli.js`, the operator's `epx` (bin/epx.js loads it): through tsx a command
 * took 0.7 to 1.2 s before it printed anything, compiling the sources on every run.
 * Dependencies stay external (lmdb is native, pino starts its own threads from files).
 * Tests and the bench harness keep running the sources through tsx.
 *
 * `node scripts/build.mjs [--out DIR] [--entry NAME=file.ts ...]` (entries given replace
 * the plugin's; the bench builds its E server this way); about a second.
 */
import { build } from 'esbuild'
import { fileURLToPath } from 'node:url'
import { readdirSync, rmSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
let outdir = resolve(root, 'dist')
// bsp.js: the reference BSP client, `epx-gateway/bsp` (package.json "exports").
let entryPoints = { index: 'src/index.ts', 'programme-worker': 'src/apply/programme-worker.ts', bsp: 'src/bsp/index.ts' }
let withCli = true
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out') outdir = resolve(args[++i])
  else if (args[i] === '--entry') {
    const [name, file] = args[++i].split('=')
    if (withCli) entryPoints = {}
    withCli = false
    entryPoints[name] = file
  } else {
    console.error(`build: unknown argument ${args[i]}`)
    process.exit(2)
  }
}

const common = {
  absWorkingDir: root,
  outdir,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  metafile: true,
}

// The CLI is split: each command's code (and the packages it imports) is a chunk loaded
// when that command runs, so `epx --help` loads no package and `epx company list` only
// lmdb and ajv. Chunks stay beside cli.js in dist/: a module that reads a file relative
// to itself (config.ts: ../config.schema.json) finds it from any file of dist/.
const CLI_CHUNK = /^cli-chunk-.*\.js(\.map)?$/
const builds = [{ entryPoints }]
if (withCli) builds.push({ entryPoints: { cli: 'src/cli/main.ts' }, splitting: true, chunkNames: 'cli-chunk-[hash]' })

try {
  const results = await Promise.all(builds.map(b => build({ ...common, ...b })))
  if (withCli) {
    // Chunks of earlier builds (their hash names change with their content) go.
    const written = new Set(Object.keys(results[1].metafile.outputs).map(f => basename(f)))
    for (const f of readdirSync(outdir)) if (CLI_CHUNK.test(f) && !written.has(f)) rmSync(join(outdir, f))
  }
} catch {
  // esbuild has printed what failed and where.
  process.exit(1)
}
