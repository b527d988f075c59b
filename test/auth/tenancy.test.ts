import t from 'tap'
import { certificateMismatch, inPerimeter, normalizeFingerprint, parseFingerprint256 } from '../../src/auth/tenancy.ts'
import type { CompanyRecord } from '../../src/store/companies.ts'

const company = (o: Partial<CompanyRecord> = {}): CompanyRecord => ({
  id: 'acme', name: 'ACME', status: 'active', certSubject: 'CN=acme,O=ACME', perimeter: 'all', createdAt: '2026-11-01T00:00:00Z', ...o,
})

t.test('the bound subject matches whatever the order of its attributes', async t => {
  t.equal(certificateMismatch(company({ certSubject: 'O=ACME, CN=acme' }), { subject: 'CN=acme,O=ACME', fingerprint256: 'AA' }), undefined)
})

t.test('another subject does not match, and the expected one is not revealed', async t => {
  const why = certificateMismatch(company(), { subject: 'CN=beta,O=BETA', fingerprint256: 'AA' })
  t.match(why, /CN=beta,O=BETA.*not the one bound to company acme/)
  t.notMatch(why!, /O=ACME/)
})

t.test('an unusable subject on either side matches nothing', async t => {
  t.ok(certificateMismatch(company(), { subject: null, fingerprint256: 'AA' }))
  t.ok(certificateMismatch(company({ certSubject: 'garbage' }), { subject: 'CN=acme,O=ACME', fingerprint256: 'AA' }))
})

t.test('a pinned fingerprint must match too, in any spelling', async t => {
  const pinned = company({ certPins: ['ab:cd:ef'] })
  t.equal(certificateMismatch(pinned, { subject: 'CN=acme,O=ACME', fingerprint256: 'AB:CD:EF' }), undefined)
  t.match(certificateMismatch(pinned, { subject: 'CN=acme,O=ACME', fingerprint256: 'AB:CD:00' }), /fingerprint/)
  t.equal(normalizeFingerprint('ab:Cd:EF'), 'ABCDEF')
})

t.test('with several pins, any one of them matches; an empty list leaves the subject alone to decide', async t => {
  const two = company({ certPins: ['AA:01', 'bb:02'] })
  const acme = (fingerprint256: string) => ({ subject: 'CN=acme,O=ACME', fingerprint256 })
  t.equal(certificateMismatch(two, acme('AA:01')), undefined)
  t.equal(certificateMismatch(two, acme('BB:02')), undefined)
  t.match(certificateMismatch(two, acme('CC:03')), /\(SHA-256 fingerprint CC:03\) is not one pinned for company acme.*epx company pin-cert/)
  t.match(certificateMismatch(two, { subject: 'CN=beta,O=BETA', fingerprint256: 'AA:01' }), /not the one bound/, 'a pin never replaces the subject')
  t.equal(certificateMismatch(company({ certPins: [] }), acme('CC:03')), undefined)
})

t.test('an operator\'s fingerprint is read in any usual spelling, written as node prints it', async t => {
  const hex = 'ab'.repeat(32)
  const node = 'AB:'.repeat(31) + 'AB'
  for (const typed of [hex, node, node.toLowerCase(), `sha256:${hex}`, ` ${node} `]) t.equal(parseFingerprint256(typed), node, typed)
  for (const bad of ['', 'AB:CD', 'zz'.repeat(32), hex + 'ab']) t.equal(parseFingerprint256(bad), undefined, bad)
})

t.test('the perimeter is every site, or the listed ones', async t => {
  t.ok(inPerimeter({ perimeter: 'all' }, 'PRM30000000000001'))
  t.ok(inPerimeter({ perimeter: ['PRM30000000000001'] }, 'PRM30000000000001'))
  t.notOk(inPerimeter({ perimeter: ['PRM30000000000001'] }, 'PRM30000000000002'))
  t.notOk(inPerimeter({ perimeter: [] }, 'PRM30000000000001'))
})
