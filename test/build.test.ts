// The build a solver loads (scripts/build.mjs, run by `npm install`, `npm test`,
// `npm start` and `npm run bench`): plain JavaScript, no TypeScript loader in the host.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Agent, request } from 'undici'
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
  t.same([...imported].sort(), ['ajv', 'fast-json-stringify', 'lmdb', 'luxon', 'node-cron', 'secure-json-parse', 'semver'])
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
  const agent = new Agent({ connect: { ca: testPki().serverCa.certPem, cert: cert.certPem, key: cert.keyPem } })
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
