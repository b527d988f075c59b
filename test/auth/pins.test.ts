import t, { type Test } from 'tap'
import { X509Certificate } from 'node:crypto'
import { issueCert } from '../../src/auth/pki.ts'
import { INBOUND_PATH, OUTBOUND_PATH } from '../../src/http/route.ts'
import { SCOPES } from '../../src/contract/scopes.ts'
import { clientCert, testPki, type KeyPairPem } from '../helpers/certs.ts'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { keepAliveConnection } from '../helpers/keep-alive.ts'

// DECISIONS.md "Authentication and tenancy", check 3: with fingerprints pinned, the
// certificate must carry the bound subject AND one of the pins; several pins at once
// make a renewal gapless; with none, the subject alone decides.

const GET_PATH = `${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-22`
const fingerprint = (c: KeyPairPem) => new X509Certificate(c.certPem).fingerprint256

// Three certificates of the same subject from the trusted CA: the current one, its
// renewal, and a leaked or rogue one.
const current = () => clientCert('CN=acme,O=acme')
let others: { renewed: KeyPairPem; rogue: KeyPairPem } | undefined
const renewed = () => (others ??= mint()).renewed
const rogue = () => (others ??= mint()).rogue
function mint () {
  return {
    renewed: issueCert(testPki().clientCa, { subject: 'CN=acme,O=acme', days: 30 }),
    rogue: issueCert(testPki().clientCa, { subject: 'CN=acme,O=acme', days: 30 }),
  }
}

async function world (t: Test, pins?: readonly KeyPairPem[]): Promise<{ epx: TestEpx; token: string; status: (c: KeyPairPem) => Promise<number> }> {
  const epx = await startEpx(t)
  await epx.addCompany('acme')
  if (pins) await epx.companies.setPins('acme', () => pins.map(fingerprint))
  const token = (await epx.addToken('acme', SCOPES)).secret
  const status = async (cert: KeyPairPem) => (await epx.request({ path: GET_PATH, cert, token })).status
  return { epx, token, status }
}

const passed = (status: number) => ![401, 403, 503].includes(status)

t.test('with no pin, any certificate of the trusted CA with the bound subject passes', async t => {
  const { status } = await world(t)
  for (const c of [current(), renewed(), rogue()]) t.ok(passed(await status(c)))
})

t.test('with a pin, a certificate of the right subject but another fingerprint is 403 MTLS_REQUIRED saying so, on both doors', async t => {
  const { epx, token, status } = await world(t, [current()])
  t.ok(passed(await status(current())), 'the pinned certificate passes')
  const get = await epx.request({ path: GET_PATH, cert: rogue(), token })
  t.equal(get.status, 403)
  t.equal(get.json().code, 'MTLS_REQUIRED')
  t.match(get.json().detail, `(SHA-256 fingerprint ${fingerprint(rogue())}) is not one pinned for company acme`)
  const post = await epx.request({ method: 'POST', path: INBOUND_PATH, body: {}, cert: rogue(), token })
  t.equal(post.status, 403)
  t.match(post.json().error, { code: 'MTLS_REQUIRED', message: /is not one pinned for company acme/ })
})

t.test('two pins at once: a rotation without a gap', async t => {
  const { epx, status } = await world(t, [current()])
  t.equal(await status(renewed()), 403, 'the renewal before it is pinned')
  await epx.companies.setPins('acme', pins => [...pins, fingerprint(renewed())])
  t.ok(passed(await status(current())), 'both pinned: the old one passes')
  t.ok(passed(await status(renewed())), 'both pinned: the new one passes')
  t.equal(await status(rogue()), 403, 'an unpinned one is still refused')
  await epx.companies.setPins('acme', pins => pins.filter(p => p !== fingerprint(current())))
  t.equal(await status(current()), 403, 'the old one once unpinned')
  t.ok(passed(await status(renewed())))
  await epx.companies.setPins('acme', () => [])
  t.ok(passed(await status(rogue())), 'no pin left: the subject alone decides again')
})

t.test('a pin change reaches a connection opened before it, on its next request', async t => {
  const { epx, token } = await world(t)
  const conn = await keepAliveConnection(epx.url, current())
  t.teardown(() => conn.close())
  t.ok(passed((await conn.get(GET_PATH, token)).status), 'no pin: passes')
  await epx.companies.setPins('acme', () => [fingerprint(renewed())])
  const refused = await conn.get(GET_PATH, token)
  t.equal(refused.status, 403, 'pinned to another certificate: the very next request is refused')
  t.match(JSON.parse(refused.body).detail, /not one pinned/)
  await epx.companies.setPins('acme', pins => [...pins, fingerprint(current())])
  t.ok(passed((await conn.get(GET_PATH, token)).status), 'pinned: passes again')
  // Each change made by the host's thread right after the door's last answer, inside
  // lmdb-js's snapshot window of the door's thread (store/environment.ts): seen all the same.
  const seen: string[] = []
  for (let i = 0; i < 20; i++) {
    await epx.companies.setPins('acme', () => [fingerprint(renewed())])
    if ((await conn.get(GET_PATH, token)).status !== 403) seen.push(`unpinned ${i}: passed`)
    await epx.companies.setPins('acme', () => [fingerprint(renewed()), fingerprint(current())])
    if (!passed((await conn.get(GET_PATH, token)).status)) seen.push(`pinned ${i}: refused`)
  }
  t.same(seen, [], '20 changes back and forth, each seen by the very next request')
  t.notOk(conn.closed, 'all on the one connection')
})
