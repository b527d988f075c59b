#!/usr/bin/env node
/**
 * Builds what a solver loads: `dist/index.js` (the plugin, `activate`) and
 * `dist/programme-worker.js` (the thread that parses large programmes), plain ESM for
 * Node 20. A daemon then runs epx without a TypeScript loader: tsx's loader thread alone
 * is ~37 MB of resident memory (issue 5), and its helpers cost CPU on every request.
 * Dependencies stay external (lmdb is native, pino starts its own threads from files).
 * Tests, the CLI and the bench harness keep running the sources through tsx.
 *
 * `node scripts/build.mjs [--out DIR] [--entry NAME=file.ts ...]` (entries given replace
 * the plugin's; the bench builds its E server this way); about a second.
 */
import { build } from 'esbuild'
import { fileURLToPath } from 'node:url'
import { resolve } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
let outdir = resolve(root, 'dist')
let entryPoints = { index: 'src/index.ts', 'programme-worker': 'src/http/programme-worker.ts' }
let ownEntries = false
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out') outdir = resolve(args[++i])
  else if (args[i] === '--entry') {
    const [name, file] = args[++i].split('=')
    if (!ownEntries) entryPoints = {}
    ownEntries = true
    entryPoints[name] = file
  } else {
    console.error(`build: unknown argument ${args[i]}`)
    process.exit(2)
  }
}

try {
  await build({
    absWorkingDir: root,
    entryPoints,
    outdir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    logLevel: 'warning',
  })
} catch {
  // esbuild has printed what failed and where.
  process.exit(1)
}
