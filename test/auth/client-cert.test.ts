import t from 'tap'
import { adoptIdentity, clientCertVerdict, computeVerdict, provenIdentity, type PeerSocket } from '../../src/auth/client-cert.ts'

const FP = 'AB:CD:EF'
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
  const a = clientCertVerdict(s)
  t.equal(clientCertVerdict(s), a)
  t.equal(clientCertVerdict(s), a)
  t.equal(s.reads, 1, 'getPeerCertificate read once')
})

t.test('with a revocation list, a connection is checked again only when the list\'s generation moves', async t => {
  const s = fake(true, { subject: { CN: 'acme' }, issuer: { O: 'pki', CN: 'client ca' }, serialNumber: '01AB', fingerprint256: FP })
  let listed = false
  const asked: Array<[string, string]> = []
  const list = { generation: 0, revoked (issuer: string, serial: string) { asked.push([issuer, serial]); return listed } }
  t.match(clientCertVerdict(s, list), { ok: true })
  t.match(clientCertVerdict(s, list), { ok: true })
  t.same(asked, [['CN=client ca,O=pki', '01AB']], 'asked once, with the canonical issuer and the serial')
  listed = true
  t.match(clientCertVerdict(s, list), { ok: true }, 'same generation: the cached verdict (one number comparison)')
  list.generation++
  t.match(clientCertVerdict(s, list), { ok: false, reason: /revoked by its CA.*new certificate/ }, 'a new list: checked again')
  t.equal(asked.length, 2)
  t.equal(s.reads, 1, 'the certificate itself is still read once per connection')
})

t.test('a certificate that does not chain keeps its own reason; the list is not consulted', async t => {
  const s = fake(false, { subject: { CN: 'acme' }, issuer: { CN: 'x' }, serialNumber: '01', fingerprint256: FP }, 'SELF_SIGNED_CERT_IN_CHAIN')
  const list = { generation: 0, revoked: () => true }
  t.match(clientCertVerdict(s, list), { ok: false, reason: /does not chain/ })
})

t.test('a resumed connection adopts the identity its full handshake proved, not what its own socket says', async t => {
  const full = fake(true, { subject: { CN: 'acme' }, issuer: { CN: 'ca' }, serialNumber: '02', fingerprint256: FP })
  const proven = provenIdentity(full)
  t.equal(clientCertVerdict(full), proven.chained, 'the full handshake\'s own verdict is the one it proved')
  t.equal(full.reads, 1, 'read once for both')
  // What a resumed socket may report (an empty certificate, authorized) is never read.
  const resumed = fake(true, {})
  adoptIdentity(resumed, proven)
  t.match(clientCertVerdict(resumed), { ok: true, subject: 'CN=acme', fingerprint256: FP })
  t.equal(resumed.reads, 0)
  const list = { generation: 3, revoked: (issuer: string, serial: string) => issuer === 'CN=ca' && serial === '02' }
  t.match(clientCertVerdict(resumed, list), { ok: false, reason: /revoked/ }, 'checked against the list in force at its first request')
})
