import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { adoptIdentity, clientCertVerdict, computeVerdict, provenIdentity, type PeerSocket } from '../../src/auth/client-cert.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { SCOPES } from '../../src/contract/scopes.ts'
import { shortLivedClientCert } from '../helpers/certs.ts'
import { startEpx } from '../helpers/epx.ts'
import { keepAliveConnection } from '../helpers/keep-alive.ts'

const FP = 'AB:CD:EF'
const NOW = Date.parse('2026-11-29T12:00:00Z')
const fake = (authorized: boolean, cert: object, authorizationError?: string) => {
  const s = { authorized, authorizationError, reads: 0, getPeerCertificate () { s.reads++; return cert } }
  return s as unknown as PeerSocket & { reads: number }
}

t.test('a certificate that chains to the client CA yields its canonical subject and fingerprint', async t => {
  t.same(computeVerdict(fake(true, { subject: { O: 'acme', CN: 'acme' }, fingerprint256: FP })),
    { ok: true, subject: 'CN=acme,O=acme', fingerprint256: FP })
})

t.test('authorized with an empty peer certificate (a resumed TLS 1.3 session) is refused', async t => {
  const v = computeVerdict(fake(true, {}))
  t.equal(v.ok, false)
  t.match(v, { reason: /none was presented/ })
})

t.test('no certificate is refused, whatever authorized says', async t => {
  t.match(computeVerdict(fake(false, {}, 'UNABLE_TO_GET_ISSUER_CERT')), { ok: false, reason: /none was presented/ })
})

t.test('a certificate that does not chain is refused, naming why', async t => {
  t.match(computeVerdict(fake(false, { subject: { CN: 'acme' }, fingerprint256: FP }, 'SELF_SIGNED_CERT_IN_CHAIN')),
    { ok: false, reason: /does not chain to the client CA.*SELF_SIGNED_CERT_IN_CHAIN/ })
})

t.test('a subject value holding a DN separator binds to nothing', async t => {
  for (const CN of ['acme,O=acme', 'a=b', 'a+b']) {
    t.match(computeVerdict(fake(true, { subject: { CN }, fingerprint256: FP })), { ok: true, subject: null }, CN)
  }
})

t.test('the verdict is computed once per connection', async t => {
  const s = fake(true, { subject: { CN: 'acme' }, fingerprint256: FP })
  const a = clientCertVerdict(s, undefined, NOW)
  t.equal(clientCertVerdict(s, undefined, NOW), a)
  t.equal(clientCertVerdict(s, undefined, NOW), a)
  t.equal(s.reads, 1, 'getPeerCertificate read once')
})

t.test('with a revocation list, a connection is checked again only when the list\'s generation moves', async t => {
  const s = fake(true, { subject: { CN: 'acme' }, issuer: { O: 'pki', CN: 'client ca' }, serialNumber: '01AB', fingerprint256: FP })
  let listed = false
  const asked: Array<[string, string]> = []
  const list = { generation: 0, revoked (issuer: string, serial: string) { asked.push([issuer, serial]); return listed } }
  t.match(clientCertVerdict(s, list, NOW), { ok: true })
  t.match(clientCertVerdict(s, list, NOW), { ok: true })
  t.same(asked, [['CN=client ca,O=pki', '01AB']], 'asked once, with the canonical issuer and the serial')
  listed = true
  t.match(clientCertVerdict(s, list, NOW), { ok: true }, 'same generation: the cached verdict (one number comparison)')
  list.generation++
  t.match(clientCertVerdict(s, list, NOW), { ok: false, reason: /revoked by its CA.*new certificate/ }, 'a new list: checked again')
  t.equal(asked.length, 2)
  t.equal(s.reads, 1, 'the certificate itself is still read once per connection')
})

t.test('a certificate that does not chain keeps its own reason; the list is not consulted', async t => {
  const s = fake(false, { subject: { CN: 'acme' }, issuer: { CN: 'x' }, serialNumber: '01', fingerprint256: FP }, 'SELF_SIGNED_CERT_IN_CHAIN')
  const list = { generation: 0, revoked: () => true }
  t.match(clientCertVerdict(s, list, NOW), { ok: false, reason: /does not chain/ })
})

t.test('a resumed connection adopts the identity its full handshake proved, not what its own socket says', async t => {
  const full = fake(true, { subject: { CN: 'acme' }, issuer: { CN: 'ca' }, serialNumber: '02', fingerprint256: FP })
  const proven = provenIdentity(full)
  t.equal(clientCertVerdict(full, undefined, NOW), proven.chained, 'the full handshake\'s own verdict is the one it proved')
  t.equal(full.reads, 1, 'read once for both')
  // What a resumed socket may report (an empty certificate, authorized) is never read.
  const resumed = fake(true, {})
  adoptIdentity(resumed, proven)
  t.match(clientCertVerdict(resumed, undefined, NOW), { ok: true, subject: 'CN=acme', fingerprint256: FP })
  t.equal(resumed.reads, 0)
  const list = { generation: 3, revoked: (issuer: string, serial: string) => issuer === 'CN=ca' && serial === '02' }
  t.match(clientCertVerdict(resumed, list, NOW), { ok: false, reason: /revoked/ }, 'checked against the list in force at its first request')
})

t.test('a certificate that expires while its connection is open is refused from the next request, saying when and what to do', async t => {
  const s = fake(true, { subject: { CN: 'acme' }, issuer: { CN: 'ca' }, serialNumber: '03', fingerprint256: FP, valid_to: 'Nov 29 12:00:05 2026 GMT' })
  t.match(clientCertVerdict(s, undefined, NOW), { ok: true }, 'valid for five more seconds')
  t.match(clientCertVerdict(s, undefined, NOW + 4_999), { ok: true })
  t.match(clientCertVerdict(s, undefined, NOW + 5_000),
    { ok: false, reason: /expired at 2026-11-29T12:00:05\.000Z, after this connection was opened; connect again with a current certificate/ })
  t.match(clientCertVerdict(s, { generation: 1, revoked: () => true }, NOW + 5_000), { ok: false, reason: /revoked/ }, 'a revoked one says it was revoked')
  t.equal(s.reads, 1, 'the certificate is still read once per connection')
  const resumed = fake(true, {})
  adoptIdentity(resumed, provenIdentity(s))
  t.match(clientCertVerdict(resumed, undefined, NOW + 5_000), { ok: false, reason: /expired/ }, 'a resumed connection keeps the expiry its handshake proved')
})

t.test('a certificate without a readable notAfter is judged by its handshake alone', async t => {
  const s = fake(true, { subject: { CN: 'acme' }, fingerprint256: FP, valid_to: 'not a date' })
  t.match(clientCertVerdict(s, undefined, NOW + 1e12), { ok: true })
})

t.test('over real TLS: a keep-alive connection whose certificate expires gets 403 MTLS_REQUIRED at its next request, on the same connection', async t => {
  const epx = await startEpx(t)
  await epx.addCompany('acme')
  const token = (await epx.addToken('acme', SCOPES)).secret
  const cert = shortLivedClientCert('CN=acme,O=acme', 3_000)
  const conn = await keepAliveConnection(epx.url, cert)
  t.teardown(() => conn.close())
  const path = `${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-22`
  t.not((await conn.get(path, token)).status, 403, 'served while the certificate is valid')
  await sleep(Math.max(0, cert.notAfter.getTime() - Date.now()) + 50)
  const refused = await conn.get(path, token)
  t.equal(refused.status, 403)
  t.match(JSON.parse(refused.body), { code: 'MTLS_REQUIRED', detail: /expired at .*connect again with a current certificate/ })
  t.notOk(conn.closed, 'refused on the connection opened while it was valid')
})
