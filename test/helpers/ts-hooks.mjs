/**
 * The load hook of ts-loader.mjs: a `.ts` file compiled to an ES module by esbuild, with
 * tsx's options (minified whitespace, kept names, this Node's syntax) so that coverage
 * counts the same functions and lines it did; any other file as Node loads it. `loadSync`
 * is the in-thread form (`module.registerHooks`), `load` the hooks thread's (`module.register`).
 *
 * Each test process compiles again the same files (~150 for one loading epx and the
 * console): the output is kept on disk, in the temp folder's `epx-ts-<key>` (key: this
 * Node and esbuild), under the hash of the file's path and text, so only a file changed
 * since is compiled. esbuild is loaded then, not before (~40 ms of a process's start).
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const ESBUILD = JSON.parse(readFileSync(require.resolve('esbuild/package.json'), 'utf8')).version
const HOOKS = readFileSync(fileURLToPath(import.meta.url), 'utf8')
const CACHE = join(tmpdir(), `epx-ts-${process.versions.node}-${ESBUILD}-${process.getuid?.() ?? 0}`)
mkdirSync(CACHE, { recursive: true })

// tsconfig.json's options that change the JavaScript (the rest only type-check).
const TSCONFIG = { compilerOptions: { verbatimModuleSyntax: true, useDefineForClassFields: true } }
const optionsFor = path => ({
  loader: 'ts', format: 'esm', target: `node${process.versions.node}`, minifyWhitespace: true, keepNames: true,
  sourcemap: 'inline', sourcesContent: true, sourcefile: path, tsconfigRaw: TSCONFIG,
})

// The options are part of this file, so its own text is in the key too.
const keptOf = (path, text) => join(CACHE, createHash('sha256').update(HOOKS).update('\0').update(path).update('\0').update(text).digest('hex') + '.js')

/** A `.ts` file of `url`: its path and text, and its compiled output when it is kept already. */
function lookUp (url) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return undefined
  const path = fileURLToPath(url)
  const text = readFileSync(path, 'utf8')
  const kept = keptOf(path, text)
  try {
    return { path, text, kept, source: readFileSync(kept, 'utf8') }
  } catch {
    return { path, text, kept, source: undefined }
  }
}

/** Keeps `code` for the next process; written aside and renamed, so a process reading it at the same time sees all of it or nothing. */
function keep ({ kept }, code) {
  const aside = `${kept}.${process.pid}`
  try {
    writeFileSync(aside, code)
    renameSync(aside, kept)
  } catch {}
  return code
}

const compiled = source => ({ format: 'module', source, shortCircuit: true })

export function loadSync (url, context, nextLoad) {
  const file = lookUp(url)
  if (!file) return nextLoad(url, context)
  return compiled(file.source ?? keep(file, require('esbuild').transformSync(file.text, optionsFor(file.path)).code))
}

// The hooks thread's: esbuild's asynchronous API there, its service process started once.
export async function load (url, context, nextLoad) {
  const file = lookUp(url)
  if (!file) return nextLoad(url, context)
  return compiled(file.source ?? keep(file, (await require('esbuild').transform(file.text, optionsFor(file.path))).code))
}
