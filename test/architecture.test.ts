import t from 'tap'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve, dirname } from 'node:path'

// STYLE.md "A dependency direction you can test": doors may import domain and store,
// domain may import contract/ and store/, nothing imports a door, and only plugin.ts
// and host/ know the host's concrete shape.
const src = resolve(import.meta.dirname, '../src')
// bsp/ is a door too, the other way round: the reference BSP client (`epx-gateway/bsp`).
const DOORS = ['http', 'cli', 'console', 'bsp']
const DOMAIN = ['contract', 'auth', 'publish', 'apply']

function files (dir: string): string[] {
  return readdirSync(dir).flatMap(f => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : []
  })
}

const edges = files(src).flatMap(file => {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/^(?:import|export)[^'"]*from\s+['"](\.[^'"]+)['"]/gm)].map(m => ({
    from: relative(src, file),
    to: relative(src, resolve(dirname(file), m[1]!)),
  }))
})
const area = (p: string) => p.includes('/') ? p.split('/')[0]! : p

// door/: the thread boundary, the composition root's half that runs in the API door's
// worker (the API listener, the console and the metrics listener there).
t.test('no module imports a door, except the composition root (plugin.ts and door/) and the CLI itself', async t => {
  const bad = edges.filter(e => DOORS.includes(area(e.to)) && area(e.from) !== area(e.to) &&
    !['plugin.ts', 'index.ts'].includes(e.from) && area(e.from) !== 'door' && !(area(e.from) === 'cli'))
  t.same(bad, [], 'imports of a door from elsewhere')
})

t.test('http/ is HTTP alone: it knows nothing of the thread it runs in (door/)', async t => {
  const bad = edges.filter(e => area(e.from) === 'http' && area(e.to) === 'door')
  t.same(bad, [])
})

t.test('the domain imports neither doors nor the reference host', async t => {
  const bad = edges.filter(e => DOMAIN.includes(area(e.from)) &&
    (DOORS.includes(area(e.to)) || (area(e.to) === 'host' && e.to !== 'host/contract.ts')))
  t.same(bad, [])
})

t.test('the store imports no door and no domain logic beyond contract types', async t => {
  const bad = edges.filter(e => area(e.from) === 'store' &&
    (DOORS.includes(area(e.to)) || ['publish', 'apply'].includes(area(e.to))))
  t.same(bad, [])
})

t.test('the reference BSP client stands on the contract alone: what a BSP runs holds no server code', async t => {
  const bad = edges.filter(e => area(e.from) === 'bsp' && !['bsp', 'contract'].includes(area(e.to)))
  t.same(bad, [])
})

t.test('the edge scan itself sees the imports it should', async t => {
  t.ok(edges.some(e => e.from === 'plugin.ts' && e.to === 'config.ts'), 'plugin.ts → config.ts found')
})
