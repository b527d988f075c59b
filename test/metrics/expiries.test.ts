import t from 'tap'
import { X509Certificate } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { watchExpiries } from '../../src/metrics/expiries.ts'
import { testPki, writePki } from '../helpers/certs.ts'
import { makeCrl } from '../helpers/crl.ts'

const tls = { certFile: 'pki/server.crt', keyFile: 'pki/server.key', clientCaFile: 'pki/client-ca.crt' }

t.test('the server certificate, the client CA and the CRL nextUpdate, read from the configured files', async t => {
  const dir = t.testdir()
  writePki(dir)
  const pki = testPki()
  const nextUpdate = new Date(Date.now() + 3 * 86_400_000)
  writeFileSync(join(dir, 'pki/client.crl'), await makeCrl({ caCertPem: pki.clientCa.certPem, caKeyPem: pki.clientCa.keyPem, revokedSerials: [], nextUpdate }))
  let now = 0
  const read = watchExpiries(dir, { ...tls, crlFile: 'pki/client.crl' }, () => now)
  const first = read()
  t.same(first.map(e => e.what), ['server_certificate', 'client_ca'], 'the CRL is parsed off the first scrape')
  t.equal(first[0]!.atMs, Date.parse(new X509Certificate(pki.server.certPem).validTo))
  let second = read()
  for (let i = 0; i < 200 && second.length < 3; i++) {
    await new Promise(resolve => setTimeout(resolve, 25))
    second = read()
  }
  t.same(second.at(-1), { what: 'client_crl_next_update', atMs: Math.floor(nextUpdate.getTime() / 1000) * 1000 })
  now += 600_000
  t.equal(read().length, 3, 'read again after 10 minutes; the last CRL reading stays until the new one is parsed')
})

t.test('files that cannot be read are left out, not an error', async t => {
  const read = watchExpiries(t.testdir(), { ...tls, crlFile: 'pki/none.crl' }, () => 0)
  t.same(read(), [])
  await new Promise(resolve => setTimeout(resolve, 50))
  t.same(read(), [])
})
