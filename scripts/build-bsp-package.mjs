#!/usr/bin/env node
/**
 * Builds packages/epx-bsp/, the BSP client a BSP installs on its own (`npm pack` there
 * makes its tarball): `dist/index.js` (src/bsp/, the library) and `dist/cli.js` (the
 * `epx-bsp` bin, src/cli/bsp-main.ts), each one ESM file with undici and our sources
 * bundled in, so the package has no dependencies to resolve; `dist/types/` (tsc
 * declarations, their imports rewritten from .ts to .js so a TypeScript user's compiler
 * reads them without allowImportingTsExtensions). Run after `node scripts/build.mjs`,
 * which generates the serializers src/ imports. `npm run build:bsp`; about 5 s; `npm pack`
 * in packages/epx-bsp/ runs both first (its `prepack`), so a tarball is never of a stale build.
 *
 * The declarations are self-contained: only those `dist/types/bsp/index.d.ts` reaches are
 * kept, and the build fails when one of them imports a package (the tarball declares none,
 * so a TypeScript user's compiler could not resolve it); Node's own types aside.
 *
 * `--out DIR` builds a whole copy of the package there (package.json without its scripts,
 * README, bin, dist) and leaves packages/epx-bsp/ alone, so tests build their own;
 * `--no-types` skips tsc.
 */
import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { cpSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const source = join(root, 'packages/epx-bsp')
const args = process.argv.slice(2)
const outAt = args.indexOf('--out')
const pkgDir = outAt >= 0 ? resolve(args[outAt + 1]) : source
const withTypes = !args.includes('--no-types')
if (pkgDir !== source) {
  for (const f of ['README.md', 'bin']) cpSync(join(source, f), join(pkgDir, f), { recursive: true })
  // The copy is built already; its prepack (`cd ../..`) would point nowhere from there.
  const { scripts: _built, ...pkg } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'))
  writeFileSync(join(pkgDir, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
}
const dist = join(pkgDir, 'dist')
const { version } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'))
rmSync(dist, { recursive: true, force: true })

/**
 * Modules that load a dependency through a `require` of their own making (so the process
 * that never needs it does not load it), which esbuild cannot follow. The package has no
 * dependencies to resolve: there, each is imported, and bundled like the rest.
 */
const LATE_REQUIRES = [
  // scripts/build.mjs's generated serializers: fast-json-stringify's small runtime.
  { filter: /[\\/]src[\\/]generated[\\/][^\\/]*-serializer\.js$/, loader: 'js', call: "require('fast-json-stringify/lib/serializer')", from: 'fast-json-stringify/lib/serializer.js' },
  // The programme validator's ajv, loaded by its first compilation (checkProgramme, for another site limit than the default).
  { filter: /[\\/]src[\\/]contract[\\/]compiled\.ts$/, loader: 'ts', call: "createRequire(import.meta.url)('ajv')", from: 'ajv' },
  // The default limit's validator, which scripts/build.mjs generates: ajv's runtime helper for minLength.
  { filter: /[\\/]src[\\/]generated[\\/]programme-validator\.js$/, loader: 'js', call: 'require("ajv/dist/runtime/ucs2length")', from: 'ajv/dist/runtime/ucs2length.js' },
]
const bundledLateRequires = {
  name: 'bundled-late-requires',
  setup (b) {
    for (const { filter, loader, call, from } of LATE_REQUIRES) {
      b.onLoad({ filter }, ({ path }) => {
        const text = readFileSync(path, 'utf8')
        if (!text.includes(call)) throw new Error(`${path}: no ${call} to bundle (scripts/build-bsp-package.mjs must follow it)`)
        return { contents: `import * as __epxLate from '${from}'\n` + text.replace(call, '(__epxLate.default ?? __epxLate)'), loader, resolveDir: dirname(path) }
      })
    }
  },
}

await build({
  absWorkingDir: root,
  plugins: [bundledLateRequires],
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

if (withTypes) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const types = join(dist, 'types')
  execFileSync(process.execPath, [tsc, '-p', join(source, 'tsconfig.json'), '--outDir', types], { stdio: 'inherit' })
  for (const entry of readdirSync(types, { recursive: true })) {
    const file = join(types, String(entry))
    if (!file.endsWith('.d.ts')) continue
    writeFileSync(file, readFileSync(file, 'utf8').replace(/(from '\.{1,2}\/[^']+)\.ts'/g, "$1.js'"))
  }
  keepReachableDeclarations(types, join(types, 'bsp/index.d.ts'))
}

/**
 * Deletes the declarations the entry does not reach (tsc emits one per source file it
 * read), and fails on an import of a package: the tarball has no dependencies.
 */
function keepReachableDeclarations (types, entry) {
  const reached = new Set()
  const foreign = []
  const visit = file => {
    if (reached.has(file)) return
    reached.add(file)
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(/(?:from|import\() *'([^']+)'/g)) {
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.d.ts')))
      else if (!spec.startsWith('node:')) foreign.push(`${relative(types, file)} imports '${spec}'`)
    }
  }
  visit(entry)
  if (foreign.length) throw new Error(`the epx-bsp declarations must be self-contained (the package has no dependencies): ${foreign.join('; ')}; export plain types from src/bsp/ instead`)
  for (const e of readdirSync(types, { recursive: true })) {
    const file = join(types, String(e))
    if (file.endsWith('.d.ts') && !reached.has(file)) rmSync(file)
  }
  for (const e of readdirSync(types, { recursive: true }).map(String).sort().reverse()) {
    const dir = join(types, e)
    if (statSync(dir).isDirectory() && readdirSync(dir).length === 0) rmSync(dir, { recursive: true })
  }
}
console.log(`built ${dist} (epx-bsp ${version})`)
