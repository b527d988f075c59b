import t from 'tap'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { loadConfig } from '../src/config.ts'

const root = resolve(import.meta.dirname, '..')
const json = (f: string) => JSON.parse(readFileSync(resolve(root, f), 'utf8'))
const manifest = json('plugin.manifest.json')
const pkg = json('package.json')

t.test('the manifest version equals package.json', async t => {
  t.equal(manifest.version, pkg.version)
})

t.test('the manifest points at the configuration schema that config.ts compiles', async t => {
  t.equal(manifest.configSchema, './config.schema.json')
})

t.test('the host range is a real range, satisfied by the reference host', async t => {
  const { HOST_API_VERSION } = await import('../src/host/contract.ts')
  const semver = (await import('semver')).default
  t.not(manifest.engines.host, '*')
  t.ok(semver.satisfies(HOST_API_VERSION, manifest.engines.host))
  // Host API 1.1 added EpxHandle.reportMetering, which a host may never call: a 1.0 host still loads it.
  t.equal(HOST_API_VERSION, '1.1.0')
  t.ok(semver.satisfies('1.0.0', manifest.engines.host), 'a 1.0 host is still accepted')
})

t.test('the schedules the manifest declares are the configuration defaults', async t => {
  const config = loadConfig({})
  const byId = Object.fromEntries(manifest.contributes.schedules.map((s: { id: string }) => [s.id, s]))
  t.equal(byId['publish-daily'].cron, config.publish.dailyCron)
  t.equal(byId['publish-weekend'].cron, config.publish.weekendCron)
  t.equal(byId['publish-daily'].timezone, config.publish.timezone)
})

t.test('package.json exposes only the public entry and the reference BSP client, and names the CLI epx', async t => {
  t.same(Object.keys(pkg.exports), ['.', './bsp', './package.json'])
  t.equal(pkg.bin.epx, 'bin/epx.js')
  t.equal(pkg.name, 'epx-gateway')
})

t.test('Node >= 20.20.2 is required by package.json and the manifest, and this runtime satisfies it', async t => {
  const semver = (await import('semver')).default
  t.equal(pkg.engines.node, '>=20.20.2')
  t.equal(manifest.engines.node, '>=20.20.2')
  t.notOk(semver.satisfies('20.20.1', pkg.engines.node), '20.20.1 lacks the last HTTP/TLS fixes')
  t.ok(semver.satisfies(process.versions.node, pkg.engines.node), `running on ${process.versions.node}`)
})
