import t from 'tap'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve, dirname } from 'node:path'
import { filesUnder, specifiersOf } from './helpers/imports.ts'

// The folder table of docs/architecture.md, as code: each row of src/ and the rows it may
// import. Lower rows first; an import goes down the table, never up. host/contract.ts is a
// row of its own: the host's types, which every layer speaks, whereas the rest of host/
// is the reference host that only the CLI and the plugin start. Each engine under store/
// is a row of its own too, and so is webhooks/thread/, the deliverer's thread, which the
// door's thread machinery serves.
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  'errors.ts': [],
  'bounded-cache.ts': [],
  'with-resolvers.ts': [],
  'os-thread.ts': [],
  'node-http.ts': [],
  'config-schema.ts': [],
  'data-dir.ts': [],
  'contract/': ['bounded-cache.ts', 'generated/'],
  'generated/': ['contract/'],
  'host/contract.ts': ['contract/'],
  'store/': ['store/lmdb/', 'store/postgres/', 'contract/', 'host/contract.ts', 'config-schema.ts', 'data-dir.ts', 'errors.ts', 'bounded-cache.ts'],
  'store/lmdb/': ['store/', 'host/contract.ts', 'errors.ts', 'with-resolvers.ts'],
  'store/postgres/': ['store/', 'host/contract.ts', 'config-schema.ts', 'data-dir.ts', 'errors.ts', 'with-resolvers.ts'],
  'config.ts': ['store/', 'config-schema.ts', 'data-dir.ts', 'errors.ts', 'generated/'],
  'auth/': ['store/', 'contract/', 'host/contract.ts', 'errors.ts', 'bounded-cache.ts'],
  'publish/': ['store/', 'contract/', 'host/contract.ts', 'config.ts', 'errors.ts'],
  'apply/': ['auth/', 'publish/', 'store/', 'contract/', 'host/contract.ts', 'errors.ts', 'bounded-cache.ts', 'os-thread.ts'],
  'webhooks/': ['store/', 'contract/', 'host/contract.ts', 'config.ts', 'errors.ts'],
  'metrics/': ['auth/', 'store/', 'contract/', 'host/contract.ts', 'config.ts', 'errors.ts', 'node-http.ts'],
  'http/': ['apply/', 'auth/', 'store/', 'contract/', 'host/contract.ts', 'config.ts', 'errors.ts', 'bounded-cache.ts', 'node-http.ts', 'with-resolvers.ts'],
  'console/': ['webhooks/', 'apply/', 'auth/', 'publish/', 'store/', 'contract/', 'host/contract.ts', 'config.ts', 'errors.ts'],
  'bsp/': ['contract/'],
  'door/': ['http/', 'console/', 'metrics/', 'apply/', 'auth/', 'publish/', 'store/', 'contract/', 'host/contract.ts', 'config.ts', 'errors.ts', 'os-thread.ts'],
  'webhooks/thread/': ['door/', 'webhooks/', 'apply/', 'store/', 'host/contract.ts', 'config.ts', 'os-thread.ts'],
  'host/': ['host/contract.ts', 'contract/', 'errors.ts', 'bounded-cache.ts'],
  'cli/': ['bsp/', 'webhooks/', 'apply/', 'auth/', 'publish/', 'store/', 'store/postgres/', 'contract/', 'host/', 'host/contract.ts', 'config.ts', 'errors.ts', 'node-http.ts'],
  'plugin.ts': ['door/', 'webhooks/thread/', 'metrics/', 'apply/', 'publish/', 'store/', 'contract/', 'host/', 'host/contract.ts', 'config.ts'],
  'index.ts': ['plugin.ts', 'host/contract.ts', 'config.ts', 'errors.ts'],
}

// Within store/, the factories pick the engine the configuration names (open-store.ts) and
// the checks of its options (options.ts); the other modules speak to the port
// (store/engine.ts) and never to an engine.
const ENGINE_FACTORIES = ['store/open-store.ts', 'store/options.ts']

const src = resolve(import.meta.dirname, '../src')

const files = (dir: string): string[] => filesUnder(dir)

const edges = files(src).flatMap(file => specifiersOf(readFileSync(file, 'utf8')).map(spec => ({
  from: relative(src, file),
  to: relative(src, resolve(dirname(file), spec)),
})))
// package.json and the manifest's schema, outside src/, are data, not layers.
const inSrc = edges.filter(e => !e.to.startsWith('..'))

/** The row of a path of src/: a root file, host/contract.ts, an engine under store/, webhooks/thread/, or a top folder. */
function rowOf (path: string): string {
  const parts = path.split('/')
  if (parts.length === 1) return path
  if (path === 'host/contract.ts') return path
  if ((parts[0] === 'store' || parts[0] === 'webhooks') && parts.length > 2) return `${parts[0]}/${parts[1]}/`
  return `${parts[0]}/`
}

function allowed (e: { from: string; to: string }): boolean {
  const from = rowOf(e.from), to = rowOf(e.to)
  if (from === to) return true
  if (from === 'store/' && to.startsWith('store/')) return ENGINE_FACTORIES.includes(e.from)
  return ALLOWED[from]?.includes(to) ?? false
}

t.test('every import of src/ goes down the folder table', async t => {
  const bad = inSrc.filter(e => !allowed(e)).map(e => `${e.from} → ${e.to}`)
  t.same(bad, [], 'imports the table does not allow')
})

t.test('the table refuses arrows that go up or sideways between layers', async t => {
  for (const [from, to] of [
    ['apply/enqueue.ts', 'door/supervisor.ts'],   // the solver's side does not know the door's thread
    ['apply/enqueue.ts', 'metrics/registry.ts'],
    ['metrics/registry.ts', 'apply/enqueue.ts'],
    ['config.ts', 'store/postgres/connect.ts'],   // the configuration names a kind; the engine checks its own options
    ['store/postgres/connect.ts', 'config.ts'],
    ['store/revisions.ts', 'store/postgres/schema.ts'],
    ['store/tokens.ts', 'auth/tokens.ts'],         // records below the rules that use them
    ['contract/paris-day.ts', 'host/reference-host.ts'],
  ] as const) t.notOk(allowed({ from, to }), `${from} → ${to} is refused`)
})

t.test('within store/, only the factories reach an engine', async t => {
  t.notOk(allowed({ from: 'store/companies.ts', to: 'store/postgres/records.ts' }), 'a store module may not')
  t.notOk(allowed({ from: 'store/revisions.ts', to: 'store/lmdb/engine.ts' }), 'nor the LMDB engine')
  for (const factory of ENGINE_FACTORIES) {
    t.ok(allowed({ from: factory, to: 'store/postgres/replica.ts' }), `${factory} may`)
    t.ok(inSrc.some(e => e.from === factory && rowOf(e.to) === 'store/postgres/'), `${factory} does`)
  }
  t.ok(inSrc.some(e => e.from === 'store/open-store.ts' && rowOf(e.to) === 'store/lmdb/'), 'the factory opens the LMDB engine too')
})

t.test('no module outside store/ names an engine: the kind is decided once, in the factory', async t => {
  const outside = inSrc.filter(e => !e.from.startsWith('store/') && !e.from.startsWith('cli/commands/store') && ['store/lmdb/', 'store/postgres/'].includes(rowOf(e.to)))
  t.same(outside.map(e => `${e.from} → ${e.to}`), [], 'only the `epx store` commands may (they name the kinds)')
  for (const file of files(src).filter(f => !relative(src, f).startsWith('store/') && !relative(src, f).startsWith('cli/commands/store') && !relative(src, f).startsWith('config'))) {
    const text = readFileSync(file, 'utf8')
    t.notMatch(text, /\.kind === ['"](?:lmdb|postgres)['"]/, `${relative(src, file)} does not branch on a store kind`)
    t.notMatch(text, /from ['"](?:lmdb|pg)['"]/, `${relative(src, file)} imports neither engine's library (types included)`)
  }
})

t.test('every arrow the table allows is one the code has', async t => {
  const used = new Set(inSrc.map(e => `${rowOf(e.from)} → ${rowOf(e.to)}`))
  const unused = Object.entries(ALLOWED).flatMap(([from, tos]) => tos.map(to => `${from} → ${to}`)).filter(a => !used.has(a))
  t.same(unused, [], 'arrows to drop from the table (and from docs/architecture.md)')
})

t.test('each folder of src/, each root file and each engine of store/ has its row', async t => {
  const top = readdirSync(src).filter(f => statSync(join(src, f)).isDirectory() ? true : f.endsWith('.ts'))
    .map(f => statSync(join(src, f)).isDirectory() ? `${f}/` : f)
  const engines = ['store', 'webhooks'].flatMap(top => readdirSync(join(src, top)).filter(f => statSync(join(src, top, f)).isDirectory()).map(f => `${top}/${f}/`))
  // src/generated/ is written by the build (scripts/build.mjs) and may not be there yet.
  const rows = new Set(Object.keys(ALLOWED))
  t.same([...top, ...engines].filter(r => !rows.has(r)), [], 'folders and files without a row')
  t.same(files(src).map(f => rowOf(relative(src, f))).filter(r => !rows.has(r)), [], 'modules outside every row')
  for (const tos of Object.values(ALLOWED)) for (const to of tos) t.ok(rows.has(to), `${to} is a row`)
})

t.test('the scan sees every form of import', async t => {
  const text = [
    "import { a } from './a.ts'",
    "import type { B } from '../b.ts'",
    'import {\n  c,\n  d,\n} from "./c.ts"',
    "export { e } from './e.ts'",
    "const f = await import('./f.ts')",
    "type G = typeof import('../g.ts').G",
    "new Worker(new URL('./h.ts', import.meta.url))",
    "import { i } from 'node:fs'",
    "const s = 'not an import from ./x.ts'",
  ].join('\n')
  t.same(specifiersOf(text), ['./a.ts', '../b.ts', './c.ts', './e.ts', './f.ts', '../g.ts', './h.ts'])
  t.ok(edges.length > 500, `the tree's imports are read (${edges.length})`)
  t.ok(edges.some(e => e.from === 'plugin.ts' && e.to === 'config.ts'), 'a static import: plugin.ts → config.ts')
  t.ok(edges.some(e => e.from === 'door/wire.ts' && e.to === 'console/server.ts'), 'a dynamic import: door/wire.ts → console/server.ts')
})

t.test('docs/architecture.md shows this table', async t => {
  const doc = readFileSync(resolve(import.meta.dirname, '../docs/architecture.md'), 'utf8')
  const section = doc.split(/^## /m).find(s => s.startsWith('Folders'))
  t.ok(section, 'a "Folders" section')
  const rows = Object.fromEntries((section ?? '').split('\n')
    .filter(l => /^\| `/.test(l))
    .map(l => l.split('|').slice(1, -1).map(c => c.trim()))
    .map(([row, , imports]) => [row!.replace(/`/g, ''), [...(imports ?? '').matchAll(/`([^`]+)`/g)].map(m => m[1]!).sort()]))
  const expected = Object.fromEntries(Object.entries(ALLOWED).map(([row, tos]) => [row, [...tos].sort()]))
  t.same(rows, expected, 'the same rows, each with the same imports')
})

// Outside src/, imports go bench/ → test/ → scripts/: the fault campaign, test/campaign/,
// stands on src/ and the tests' helpers, never on the bench's modules (test/bench/, the
// bench's own tests, is the one folder of test/ that reads them).
t.test('the fault campaign imports nothing from bench/', async t => {
  const root = resolve(import.meta.dirname, '..')
  const campaign = join(root, 'test/campaign')
  const intoBench = files(campaign).flatMap(file => specifiersOf(readFileSync(file, 'utf8'))
    .map(spec => relative(root, resolve(dirname(file), spec)))
    .filter(to => to.startsWith('bench/'))
    .map(to => `${relative(root, file)} → ${to}`))
  t.same(intoBench, [], 'imports of bench/ from test/campaign/')
  t.ok(files(campaign).some(f => f.endsWith('run.ts')), 'the campaign\'s runner is there')
})
