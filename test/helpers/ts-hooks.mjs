/**
 * The load hook of ts-loader.mjs: a `.ts` file compiled to an ES module by esbuild, with
 * tsx's options (minified whitespace, kept names, this Node's syntax) so that coverage
 * counts the same functions and lines it did; any other file as Node loads it.
 */
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { transform } from 'esbuild'

// tsconfig.json's options that change the JavaScript (the rest only type-check).
const TSCONFIG = { compilerOptions: { verbatimModuleSyntax: true, useDefineForClassFields: true } }

export async function load (url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context)
  const path = fileURLToPath(url)
  const { code } = await transform(await readFile(path, 'utf8'), {
    loader: 'ts', format: 'esm', target: `node${process.versions.node}`, minifyWhitespace: true, keepNames: true,
    sourcemap: 'inline', sourcesContent: true, sourcefile: path, tsconfigRaw: TSCONFIG,
  })
  return { format: 'module', source: code, shortCircuit: true }
}
