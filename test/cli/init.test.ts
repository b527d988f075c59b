import t from 'tap'
import { X509Certificate } from 'node:crypto'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pkiPaths } from '../../src/auth/pki.ts'
import { loadConfig } from '../../src/config.ts'
import { epx } from '../helpers/cli.ts'

t.test('epx init creates the data folder, the development PKI and epx.config.json', async t => {
  const dir = join(t.testdir(), 'nested', 'data')
  const r = await epx(dir, 'init')
  t.equal(r.code, 0, r.err)
  const p = pkiPaths(dir)
  for (const f of [p.caCert, p.caKey, p.serverCert, p.serverKey, p.clientCaCert, p.clientCaKey]) t.ok(existsSync(f), `${f} exists`)
  t.equal(statSync(p.serverKey).mode & 0o077, 0, 'keys are readable by their owner only')
  t.match(r.out, /created .*pki\/ca\.crt/)
  t.match(r.out, /created .*epx\.config\.json/)

  const ca = new X509Certificate(readFileSync(p.caCert))
  const server = new X509Certificate(readFileSync(p.serverCert))
  t.ok(server.verify(ca.publicKey), 'the server certificate is signed by ca.crt')
  t.ok(server.checkHost('localhost'), 'valid for localhost')
  t.ok(server.checkIP('127.0.0.1'), 'valid for 127.0.0.1')
  t.ok(new X509Certificate(readFileSync(p.clientCaCert)).ca, 'client-ca.crt is a CA')

  const settings = JSON.parse(readFileSync(join(dir, 'epx.config.json'), 'utf8'))
  t.same(settings.host, { sites: 5, cycleSeconds: 10 })
  t.equal(settings.plugin.api.port, 8443)
  t.doesNotThrow(() => loadConfig(settings.plugin), 'the plugin section is a valid plugin configuration')

  const before = readFileSync(p.caCert, 'utf8')
  const again = await epx(dir, 'init')
  t.equal(again.code, 0)
  t.match(again.out, /already initialized; nothing to create/)
  t.equal(readFileSync(p.caCert, 'utf8'), before, 'a second init keeps the existing PKI')
})

t.test('epx init keeps an edited configuration and recreates only a missing file', async t => {
  const dir = t.testdir()
  await epx(dir, 'init')
  const file = join(dir, 'epx.config.json')
  writeFileSync(file, JSON.stringify({ host: { sites: 2 }, plugin: { api: { port: 9443 } } }))
  const r = await epx(dir, 'init')
  t.equal(r.code, 0)
  t.equal(JSON.parse(readFileSync(file, 'utf8')).plugin.api.port, 9443)
})

t.test('a broken epx.config.json stops commands with exit 1 and names the file and field', async t => {
  const dir = t.testdir({ 'epx.config.json': '{ not json' })
  const bad = await epx(dir, 'company', 'list')
  t.equal(bad.code, 1)
  t.match(bad.err, /^epx: invalid configuration: .*epx\.config\.json is not valid JSON/)

  writeFileSync(join(dir, 'epx.config.json'), JSON.stringify({ plugin: { api: { port: 'x' } } }))
  const field = await epx(dir, 'company', 'list')
  t.equal(field.code, 1)
  t.match(field.err, /"plugin": \/api\/port must be integer/)

  writeFileSync(join(dir, 'epx.config.json'), JSON.stringify({ host: { sites: 0 }, plugin: {} }))
  const host = await epx(dir, 'sites', 'list')
  t.equal(host.code, 1)
  t.match(host.err, /"host\.sites" must be an integer from 1 to 10000/)

  writeFileSync(join(dir, 'epx.config.json'), JSON.stringify({ plugins: {} }))
  const key = await epx(dir, 'token', 'list')
  t.equal(key.code, 1)
  t.match(key.err, /unknown key\(s\) plugins; expected "host" and "plugin"/)
})
