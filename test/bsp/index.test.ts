// `epx-gateway/bsp`, what a BSP's Node code imports: the built dist/bsp.js, plain
// JavaScript, with none of the server's packages.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import * as bsp from '../../src/bsp/index.ts'

const root = resolve(import.meta.dirname, '../..')

t.test('epx-gateway/bsp resolves to the build and exports the client, the checks, pull, watch and push', async t => {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e',
    'const m = await import("epx-gateway/bsp"); process.stdout.write(Object.keys(m).filter(k => typeof m[k] === "function").sort().join(","))'], {
    cwd: root, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, timeout: 30_000,
  })
  t.equal(r.stderr, '', 'nothing on stderr')
  const names = Object.keys(bsp).filter(k => typeof (bsp as Record<string, unknown>)[k] === 'function').sort()
  t.equal(r.stdout, names.join(','))
  t.ok(names.includes('createBspClient') && names.includes('pullRound') && names.includes('pushProgramme') && names.includes('watch'))
})

t.test('the built client imports no server package (no lmdb, pino, node-forge)', async t => {
  const code = readFileSync(join(root, 'dist/bsp.js'), 'utf8')
  const imported = new Set([...code.matchAll(/^import [^;]*? from "([^"]+)";$/gm)].map(m => m[1]!).filter(m => !m.startsWith('node:')))
  t.same([...imported].sort(), ['ajv/dist/2020.js', 'luxon', 'undici'])
})
