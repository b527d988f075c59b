import t from 'tap'
import { readFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import { filesUnder, specifiersOf } from './helpers/imports.ts'

// Outside src/, one direction too (docs/development.md "bench/, test/ and scripts/"): bench/
// measures and may import test/ and scripts/; test/ tests and may import scripts/; scripts/
// builds and imports neither; all three import src/, which imports none of them. A helper
// two of them share lives in the lower one. The one way up: a test of bench/ code imports
// the code it tests (`TESTS_OF`).
const LAYERS = ['src/', 'scripts/', 'test/', 'bench/'] as const

/** Test files of a folder, and the bench/ code they test. */
const TESTS_OF: ReadonlyArray<{ tests: string; code: string }> = [
  { tests: 'test/bench/', code: 'bench/' },
]

const root = resolve(import.meta.dirname, '..')

const layerOf = (path: string): number => LAYERS.findIndex(l => path.startsWith(l))

function allowed (from: string, to: string): boolean {
  const a = layerOf(from), b = layerOf(to)
  if (a < 0 || b < 0) return true   // package.json, openapi/, dist/: data and builds, not layers
  if (b <= a) return true
  return from.endsWith('.test.ts') && TESTS_OF.some(x => from.startsWith(x.tests) && to.startsWith(x.code))
}

const edges = LAYERS.flatMap(l => filesUnder(resolve(root, l), ['.ts', '.mjs']))
  .filter(file => !relative(root, file).startsWith('src/generated/') && !relative(root, file).startsWith('bench/.build/'))
  .flatMap(file => specifiersOf(readFileSync(file, 'utf8')).map(spec => ({
    from: relative(root, file),
    to: relative(root, resolve(dirname(file), spec)),
  })))

t.test('every import of bench/, test/, scripts/ and src/ goes down: bench → test → scripts → src', async t => {
  t.same(edges.filter(e => !allowed(e.from, e.to)).map(e => `${e.from} → ${e.to}`), [], 'wrong-way imports')
})

t.test('the rule: down is free, up only from a test of bench/ code to that code', async t => {
  t.ok(allowed('bench/postgres.ts', 'scripts/postgres-cluster.ts'), 'bench → scripts')
  t.ok(allowed('bench/campaign/mtls.ts', 'test/helpers/certs.ts'), 'bench → test')
  t.ok(allowed('test/openapi.test.ts', 'test/openapi/build.ts'), 'within test/')
  t.ok(allowed('scripts/demo-ha.ts', 'src/cli/commands/demo.ts'), 'scripts → src')
  t.notOk(allowed('scripts/demo-ha.ts', 'test/helpers/epx.ts'), 'scripts ↛ test')
  t.notOk(allowed('scripts/build.mjs', 'bench/report.ts'), 'scripts ↛ bench')
  t.notOk(allowed('src/plugin.ts', 'scripts/postgres-cluster.ts'), 'src ↛ scripts')
  t.notOk(allowed('test/store/revisions.test.ts', 'bench/fixtures.ts'), 'a test of src/ ↛ bench')
  t.ok(allowed('test/bench/report.test.ts', 'bench/report.ts'), 'a test of bench/ code → that code')
  t.notOk(allowed('test/bench/fixtures.ts', 'bench/report.ts'), 'a helper beside the tests of bench/ is not a test')
  t.notOk(allowed('test/campaign/faults.test.ts', 'bench/report.ts'), 'the campaign\'s tests, the campaign\'s code only')
})

t.test('the scan sees the imports between the folders', async t => {
  const has = (from: string, to: string) => t.ok(edges.some(e => e.from === from && e.to === to), `${from} → ${to}`)
  has('bench/postgres.ts', 'scripts/postgres-cluster.ts')
  has('test/openapi.test.ts', 'test/openapi/build.ts')
  has('test/bench/report.test.ts', 'bench/report.ts')
  has('scripts/demo-ha.ts', 'scripts/postgres-cluster.ts')
  has('bench/run.ts', 'src/config-schema.ts')
})
