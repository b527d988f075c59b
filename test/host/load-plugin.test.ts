import t, { type Test } from 'tap'
import { existsSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { loadPlugin, readManifest } from '../../src/host/load-plugin.ts'
import { createReferenceHost } from '../../src/host/reference-host.ts'

const root = resolve(import.meta.dirname, '../..')
const realManifest = JSON.parse(readFileSync(join(root, 'plugin.manifest.json'), 'utf8'))

/** A throwaway plugin folder: epx's manifest shape, an entry that records it was called. */
function pluginDir (t: Test, manifest: object) {
  const dir = t.testdir({
    'plugin.manifest.json': JSON.stringify(manifest),
    'entry.mjs': `import { writeFileSync } from 'node:fs'
export async function activate (host) { writeFileSync(new URL('./activated', import.meta.url), 'yes'); return { version: '0', close: async () => {} } }`,
  })
  copyFileSync(join(root, 'config.schema.json'), join(dir, 'config.schema.json'))
  writeFileSync(join(dir, 'plugin.manifest.schema.json'), readFileSync(join(root, 'plugin.manifest.schema.json')))
  return dir
}
const base = { ...realManifest, entry: './entry.mjs' }
const host = () => createReferenceHost({ dataDir: '/nonexistent' }).host

t.test("epx's own manifest is valid and names the plugin id of DECISIONS.md", async t => {
  const m = readManifest(root)
  t.equal(m.id, 'energy-programs-exchange')
  t.equal(m.export, 'activate')
})

t.test('a plugin whose host range the host does not satisfy is refused before its code runs', async t => {
  const dir = pluginDir(t, { ...base, engines: { host: '^2.0.0' } })
  await t.rejects(loadPlugin(dir, host(), {}), { code: 'EPX_HOST_API_MISMATCH', message: /1\.1\.0 does not satisfy the plugin range \^2\.0\.0/ })
  t.notOk(existsSync(join(dir, 'activated')))
})

t.test('a manifest missing a required field, or with a bad id, is refused naming the field', async t => {
  const { entry, ...noEntry } = base
  await t.rejects(loadPlugin(pluginDir(t, noEntry), host(), {}), { code: 'EPX_MANIFEST_INVALID', message: /must have required property 'entry'/ })
  await t.rejects(loadPlugin(pluginDir(t, { ...base, id: 'Bad Id' }), host(), {}), { code: 'EPX_MANIFEST_INVALID', message: /\/id must match pattern/ })
  await t.rejects(loadPlugin(pluginDir(t, { ...base, engines: { host: '*' } }), host(), {}), { code: 'EPX_MANIFEST_INVALID', message: /\/engines\/host/ })
})

t.test('a manifest that is not JSON is refused with the file named', async t => {
  const dir = t.testdir({ 'plugin.manifest.json': '{ nope' })
  await t.rejects(loadPlugin(dir, host(), {}), { code: 'EPX_MANIFEST_INVALID', message: /plugin\.manifest\.json.*cannot read the manifest/ })
})

t.test('a configuration that breaks the plugin schema is refused naming the field, before activation', async t => {
  const dir = pluginDir(t, base)
  await t.rejects(loadPlugin(dir, host(), { api: { port: 'eighty' } }), { code: 'EPX_CONFIG_INVALID', message: /\/api\/port must be integer/ })
  await t.rejects(loadPlugin(dir, host(), { inbound: { maxSite: 3 } }), { code: 'EPX_CONFIG_INVALID', message: /additional properties/ })
  t.notOk(existsSync(join(dir, 'activated')))
})

t.test('an entry without the named export is refused', async t => {
  const dir = pluginDir(t, { ...base, export: 'start' })
  await t.rejects(loadPlugin(dir, host(), {}), { code: 'EPX_MANIFEST_INVALID', message: /exports no function 'start'/ })
})

t.test('an entry that does not exist (a checkout not built yet) is refused, saying how to build it', async t => {
  const dir = pluginDir(t, { ...base, entry: './dist/index.js' })
  await t.rejects(loadPlugin(dir, host(), {}), { code: 'EPX_MANIFEST_INVALID', message: /dist\/index\.js does not exist; build the plugin first \(epx: npm run build\)/ })
})

t.test('a valid plugin is activated with the host and its configuration', async t => {
  const dir = pluginDir(t, base)
  const { manifest, handle } = await loadPlugin(dir, host(), {})
  t.equal(manifest.id, 'energy-programs-exchange')
  t.equal(typeof handle.close, 'function')
  t.ok(existsSync(join(dir, 'activated')))
})

t.test("a host on a Node.js outside the manifest's engines.node is refused before the plugin's code runs, naming both versions", async t => {
  const dir = pluginDir(t, base)
  await t.rejects(loadPlugin(dir, host(), {}, { nodeVersion: '20.10.0' }), {
    code: 'EPX_NODE_UNSUPPORTED',
    message: /epx needs Node\.js >=20\.20\.2, and this process runs Node\.js 20\.10\.0/,
  })
  await t.rejects(loadPlugin(dir, host(), {}, { nodeVersion: '18.20.4' }), { code: 'EPX_NODE_UNSUPPORTED' })
  t.notOk(existsSync(join(dir, 'activated')))
  const { handle } = await loadPlugin(dir, host(), {}, { nodeVersion: '22.12.0' })
  t.ok(handle, 'a newer line is welcome')
  const { handle: here } = await loadPlugin(pluginDir(t, base), host(), {})
  t.ok(here, `this process's Node.js (${process.versions.node}) is accepted`)
})
