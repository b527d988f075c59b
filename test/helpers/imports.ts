/**
 * The imports of a module, as the architecture tests read them (test/architecture.test.ts
 * for src/, test/architecture-tools.test.ts for bench/, test/ and scripts/).
 * @module
 */
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

/** The files under `dir` whose names end with one of `extensions`, at any depth. */
export function filesUnder (dir: string, extensions: readonly string[] = ['.ts']): string[] {
  return readdirSync(dir).flatMap(f => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? filesUnder(p, extensions) : extensions.some(e => p.endsWith(e)) ? [p] : []
  })
}

/**
 * The relative specifiers a module imports: static imports and re-exports (`import type`
 * and multi-line ones too), dynamic `import()` (a type's `typeof import()` included) and
 * `new URL()` of a module beside it (a worker's code).
 */
export function specifiersOf (text: string): string[] {
  const re = /(?:^(?:import|export)\b[^'";]*?\bfrom\s*|\bimport\s*\(\s*|\bnew URL\(\s*)['"](\.{1,2}\/[^'"]+)['"]/gm
  return [...text.matchAll(re)].map(m => m[1]!)
}
