// The build a solver loads and the operator's `epx` runs (scripts/build.mjs, run by
// `npm install`, `npm test`, `npm start` and `npm run bench`): plain JavaScript, no
// TypeScript loader in the host nor in the CLI.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Agent, request } from 'undici'
import { conformance } from './helpers/openapi.ts'
import { loadPlugin } from '../src/host/load-plugin.ts'
import { createReferenceHost, ManualClock } from '../src/host/reference-host.ts'
import { openStore } from '../src/store/open-store.ts'
import { openCompanies } from '../src/store/companies.ts'
import { openTokens } from '../src/store/tokens.ts'
import { hashToken, newTokenId, newTokenSecret } from '../src/auth/tokens.ts'
import { clientCert, testPki, writePki } from './helpers/certs.ts'
import { INBOUND_PATH, programme } from './helpers/programme.ts'

const root = resolve(import.meta.dirname, '..')
const manifest = JSON.parse(readFileSync(join(root, 'plugin.manifest.json'), 'utf8'))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

t.test('the manifest and package.json name the built entry, dist/index.js', async t => {
  t.equal(manifest.entry, './dist/index.js')
  t.equal(pkg.exports['.'].default, manifest.entry)
  t.equal(pkg.exports['.'].types, './src/index.ts', 'types still come from the sources')
})

t.test('the built plugin loads in a plain node process, without tsx, and exports activate', async t => {
  const entry = pathToFileURL(join(root, manifest.entry)).href
  const r = spawnSync(process.execPath, ['--input-type=module', '-e',
    `const m = await import(${JSON.stringify(entry)}); process.stdout.write(typeof m.${manifest.export})`], {
    encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, execArgv: [], timeout: 30_000,
  } as never)
  t.equal(r.stderr, '', 'nothing on stderr')
  t.equal(r.stdout, 'function')
})

t.test('the built plugin imports only what the daemon needs at run time: no certificate generator, no TypeScript loader', async t => {
  const code = readFileSync(join(root, 'dist/index.js'), 'utf8')
  const imported = new Set([...code.matchAll(/^import .* from "([^"]+)";$/gm)].map(m => m[1]!).filter(m => !m.startsWith('node:')))
  // The console's template layer (html-escaper, tiny) is loaded with the plugin; fastify and its plugins only when the console opens.
  // msgpackr and ordered-binary (the PostgreSQL store's record encodings) are lmdb's own dependencies, loaded by it anyway.
  t.same([...imported].sort(), ['html-escaper', 'lmdb', 'luxon', 'msgpackr', 'node-cron', 'ordered-binary', 'secure-json-parse', 'semver'])
  for (const lazy of ['fastify', '@fastify/helmet']) t.match(code, `import("${lazy}")`, `${lazy} is imported on use`)
  t.match(code, 'import("pg")', 'pg is imported by a PostgreSQL store only')
  // ajv with the first programme validator (never on the solver's thread when the door is in its worker).
  t.match(code, /\(import\.meta\.url\)\("ajv"\)/, 'ajv is required on use')
  t.notMatch(code, /"fast-json-stringify"/, 'serializers generated at build time: fast-json-stringify\'s compiler never loads')
})

t.test('the door\'s worker loads neither pino nor fast-json-stringify\'s compiler: each costs that thread memory for nothing', async t => {
  const code = readFileSync(join(root, 'dist/door-worker.js'), 'utf8')
  t.same([...new Set(packagesOf('door-worker.js'))].sort(), ['html-escaper', 'lmdb', 'luxon', 'msgpackr', 'ordered-binary', 'pino-std-serializers', 'secure-json-parse'])
  t.notMatch(code, /"fast-json-stringify"/)
})

t.test('the webhook deliverer\'s worker loads neither pino nor the console: only the store\'s packages and pino\'s error serializer (undici on its first delivery)', async t => {
  t.same([...new Set(packagesOf('webhooks-worker.js'))].sort(), ['lmdb', 'luxon', 'msgpackr', 'ordered-binary', 'pino-std-serializers'])
})

t.test('each thread\'s bundle is Latin-1: V8 keeps a module\'s source one byte a character, and one character above U+00FF doubles it', async t => {
  // The console's templates write arrows, dashes and ellipses as HTML references
  // (&larr;, &mdash;, &hellip;): esbuild escapes other strings, but keeps a tagged
  // template's text and a kept comment as written.
  for (const file of ['index.js', 'door-worker.js', 'programme-worker.js', 'webhooks-worker.js']) {
    const lines = readFileSync(join(root, 'dist', file), 'utf8').split('\n')
    const wide = lines.flatMap((line, i) => /[^\u0000-\u00ff]/.test(line) ? [`${i + 1}: ${line.trim().slice(0, 120)}`] : [])
    t.same(wide, [], `dist/${file}: no character above U+00FF`)
  }
})

/** The packages a built file imports (not node: modules, not its own chunks). */
function packagesOf (file: string): string[] {
  const code = readFileSync(join(root, 'dist', file), 'utf8')
  return [...code.matchAll(/^import [^;]*? from "([^"]+)";$/gm)].map(m => m[1]!).filter(m => !m.startsWith('node:') && !m.startsWith('./'))
}

t.test('bin/epx.js runs the built CLI (dist/cli.js) in a plain node process, without tsx', async t => {
  t.equal(pkg.bin.epx, 'bin/epx.js')
  t.notOk('tsx' in pkg.dependencies, 'tsx is a dev dependency only')
  t.match(pkg.scripts.start, /node bin\/epx\.js demo$/, 'npm start runs the built CLI too')
  const r = spawnSync(process.execPath, [join(root, 'bin/epx.js'), '--version'], {
    encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, timeout: 30_000,
  })
  t.equal(r.stderr, '')
  t.equal(r.stdout.trim(), pkg.version)
})

t.test('the built CLI imports no TypeScript loader nor compiler, and `epx --help` loads no package', async t => {
  const cli = readdirSync(join(root, 'dist')).filter(f => /^cli(-chunk-.*)?\.js$/.test(f))
  t.ok(cli.length > 1, `dist/cli.js and its chunks (${cli.length} files)`)
  const imported = new Set(cli.flatMap(packagesOf))
  for (const forbidden of ['tsx', 'typescript', 'esbuild']) {
    t.notOk([...imported].some(m => m === forbidden || m.startsWith(`${forbidden}/`)), `no ${forbidden}`)
  }
  t.ok(imported.has('lmdb') && imported.has('node-forge'), 'the commands\' packages are imported, by their chunks')
  // What `epx --help` evaluates: cli.js and the chunks it imports statically.
  const entry = readFileSync(join(root, 'dist/cli.js'), 'utf8')
  const eager = ['cli.js', ...[...entry.matchAll(/^} from "\.\/(cli-chunk-[^"]+)";$/gm)].map(m => m[1]!)]
  t.same(eager.flatMap(packagesOf), [], `${eager.join(', ')} import only node: modules`)
})

t.test('a checkout that was never built: epx says to run npm run build, exit 1', async t => {
  const dir = t.testdir()
  mkdirSync(join(dir, 'bin'))
  copyFileSync(join(root, 'bin/epx.js'), join(dir, 'bin/epx.js'))
  const r = spawnSync(process.execPath, [join(dir, 'bin/epx.js'), 'company', 'list'], { encoding: 'utf8', timeout: 30_000 })
  t.equal(r.status, 1)
  t.equal(r.stdout, '')
  t.match(r.stderr, /^epx: .*dist\/cli\.js does not exist; build epx first: npm run build \(in .*\)\n$/)
})

t.test('a programme over 1 MiB is parsed by the built worker (dist/programme-worker.js) and accepted', async t => {
  const dataDir = t.testdir()
  writePki(dataDir)
  const seed = openStore(join(dataDir, 'epx.lmdb'))
  await openCompanies(seed).add({ id: 'acme', name: 'ACME', status: 'active', certSubject: 'CN=acme,O=acme', perimeter: 'all', createdAt: '2026-11-21T00:00:00Z' })
  const secret = newTokenSecret()
  await openTokens(seed).add({ id: newTokenId(), hash: hashToken(secret), companyId: 'acme', scopes: ['inbound:programme-soutirage'], createdAt: '2026-11-21T00:00:00Z' })
  await seed.close()

  const ref = createReferenceHost({ dataDir, clock: new ManualClock('2026-11-21T12:30:00Z'), sites: 150, cycleSeconds: 0 })
  const { handle } = await loadPlugin(root, ref.host, { api: { host: '127.0.0.1', port: 0 }, publish: { schedule: false }, inbound: { maxSites: 200 } })
  const cert = clientCert('CN=acme,O=acme')
  const agent = new Agent({ connect: { ca: testPki().serverCa.certPem, cert: cert.certPem, key: cert.keyPem } }).compose(conformance)
  t.teardown(async () => { await agent.close(); await handle.close(); await ref.close() })

  const body = JSON.stringify(programme({ sites: 150 }))
  t.ok(body.length > 2 ** 20, `the body (${body.length} bytes) goes to the worker`)
  const res = await request(new URL(INBOUND_PATH, handle.apiUrl), {
    method: 'POST', dispatcher: agent, body,
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
  })
  const receipt = await res.body.json() as { status: string; count: number }
  t.equal(res.statusCode, 202)
  t.same({ status: receipt.status, count: receipt.count }, { status: 'received', count: 150 })
})
