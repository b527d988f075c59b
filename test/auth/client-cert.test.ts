import t from 'tap'
import { clientCertVerdict, computeVerdict, type PeerSocket } from '../../src/auth/client-cert.ts'

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
