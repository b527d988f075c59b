import t from 'tap'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pkiPaths } from '../../src/auth/pki.ts'
import { canonicalSubject } from '../../src/auth/subject.ts'
import { epx, initializedDataDir } from '../helpers/cli.ts'

const dir = await initializedDataDir(t)
await epx(dir, 'company', 'add', 'acme-bsp', '--name', 'ACME', '--cert-subject', 'O=ACME Energy,CN=acme-bsp')

t.test('cert issue writes client.crt/client.key from the client CA with the bound subject, and ca.crt', async t => {
  const out = join(t.testdir(), 'bundle')
  const r = await epx(dir, 'cert', 'issue', 'acme-bsp', '--out', out)
  t.equal(r.code, 0, r.err)
  t.match(r.out, /issued a client certificate for acme-bsp \(subject CN=acme-bsp,O=ACME Energy\)/)
  const p = pkiPaths(dir)
  const cert = new X509Certificate(readFileSync(join(out, 'client.crt')))
  t.ok(cert.verify(new X509Certificate(readFileSync(p.clientCaCert)).publicKey), 'signed by the client CA')
  const subject = Object.fromEntries(cert.subject.split('\n').map(l => l.split('=') as [string, string]))
  t.equal(canonicalSubject(subject), 'CN=acme-bsp,O=ACME Energy', 'carries the subject bound to the company')
  t.ok(cert.checkPrivateKey(createPrivateKey(readFileSync(join(out, 'client.key')))), 'client.key matches client.crt')
  t.equal(statSync(join(out, 'client.key')).mode & 0o077, 0, 'the key is readable by its owner only')
  t.equal(readFileSync(join(out, 'ca.crt'), 'utf8'), readFileSync(p.caCert, 'utf8'), 'ca.crt is the server CA')
})

t.test('cert issue for an unknown company exits 1 and writes nothing', async t => {
  const out = join(t.testdir(), 'bundle')
  const r = await epx(dir, 'cert', 'issue', 'ghost', '--out', out)
  t.equal(r.code, 1)
  t.match(r.err, /^epx: no company 'ghost'; add it first with 'epx company add ghost --name NAME'$/)
  t.notOk(existsSync(out))
})

t.test('cert issue without --out or COMPANY exits 2', async t => {
  const noOut = await epx(dir, 'cert', 'issue', 'acme-bsp')
  t.equal(noOut.code, 2)
  t.match(noOut.err, /missing --out DIR/)
  const noCompany = await epx(dir, 'cert', 'issue', '--out', t.testdir())
  t.equal(noCompany.code, 2)
  t.match(noCompany.err, /missing COMPANY/)
})

t.test('cert issue warns when the API trusts another client CA than the development one', async t => {
  const other = await initializedDataDir(t)
  await epx(other, 'company', 'add', 'acme-bsp', '--name', 'ACME')
  writeFileSync(join(other, 'epx.config.json'), JSON.stringify({ plugin: { api: { tls: { clientCaFile: '/etc/ssl/bsp-ca.crt' } } } }))
  const r = await epx(other, 'cert', 'issue', 'acme-bsp', '--out', join(other, 'b'))
  t.equal(r.code, 0)
  t.match(r.err, /warning: api\.tls\.clientCaFile is \/etc\/ssl\/bsp-ca\.crt, not the development client CA/)
})

t.test('sites list shows the reference host sites; --json prints { site_id, site_name }', async t => {
  const r = await epx(dir, 'sites', 'list')
  t.equal(r.code, 0, r.err)
  t.match(r.lines[0], /^SITE_ID\s+SITE_NAME$/)
  t.equal(r.lines.length, 6, 'host.sites is 5 after init')
  const j = JSON.parse((await epx(dir, 'sites', 'list', '--json')).out)
  t.equal(j.length, 5)
  for (const s of j) {
    t.same(Object.keys(s), ['site_id', 'site_name'])
    t.match(s.site_id, /^PRM\d{14}$/)
  }
  const settings = JSON.parse(readFileSync(join(dir, 'epx.config.json'), 'utf8'))
  settings.host.sites = 2
  writeFileSync(join(dir, 'epx.config.json'), JSON.stringify(settings))
  t.equal(JSON.parse((await epx(dir, 'sites', 'list', '--json')).out).length, 2, 'follows host.sites')
})
