#!/usr/bin/env node
/**
 * Builds packages/epx-bsp/, the BSP client a BSP installs on its own (`npm pack` there
 * makes its tarball): `dist/index.js` (src/bsp/, the library) and `dist/cli.js` (the
 * `epx-bsp` bin, src/cli/bsp-main.ts), each one ESM file with undici and our sources
 * bundled in, so the package has no dependencies to resolve; `dist/types/` (tsc
 * declarations, their imports rewritten from .ts to .js so a TypeScript user's compiler
 * reads them without allowImportingTsExtensions). Run after `node scripts/build.mjs`,
 * which generates the serializers src/ imports. `npm run build:bsp`; about 5 s.
 */
import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkgDir = join(root, 'packages/epx-bsp')
const dist = join(pkgDir, 'dist')
const { version } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'))
rmSync(dist, { recursive: true, force: true })

await build({
  absWorkingDir: root,
  entryPoints: { index: 'src/bsp/index.ts', cli: 'src/cli/bsp-main.ts' },
  outdir: dist,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  splitting: true,   // undici and the client once, shared by the two entries
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'error',
  define: { 'process.env.EPX_BSP_VERSION': JSON.stringify(version) },
  // undici is CommonJS: its require() of Node's modules needs a require in an ES module.
  banner: { js: "import { createRequire as __epxCreateRequire } from 'node:module'; const require = __epxCreateRequire(import.meta.url);" },
})

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
execFileSync(process.execPath, [tsc, '-p', join(pkgDir, 'tsconfig.json')], { stdio: 'inherit' })
const types = join(dist, 'types')
for (const entry of readdirSync(types, { recursive: true })) {
  const file = join(types, String(entry))
  if (!file.endsWith('.d.ts')) continue
  writeFileSync(file, readFileSync(file, 'utf8').replace(/(from '\.{1,2}\/[^']+)\.ts'/g, "$1.js'"))
}
console.log(`built packages/epx-bsp/dist (epx-bsp ${version})`)
