import t, { type Test } from 'tap'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { SCOPES } from '../../src/contract/scopes.ts'
import type { KeyPairPem } from '../helpers/certs.ts'

// A keep-alive connection keeps its caller between requests, yet every
// rule of DECISIONS.md "Authentication and tenancy" and "Robustness" still holds on the
// very next request of that connection (the test agent reuses one connection per certificate).

const QUERY = { site_id: 'PRM30000000000001', target_date: '2026-11-22' }

async function world (t: Test): Promise<{ epx: TestEpx; cert: KeyPairPem; get: (token: string) => Promise<number> }> {
  const epx = await startEpx(t)
  const { cert } = await epx.addCompany('acme')
  const get = async (token: string) => (await epx.request({ path: OUTBOUND_PATH, query: QUERY, cert, token })).status
  return { epx, cert, get }
}

const passed = (status: number) => ![401, 403, 503].includes(status)

t.test('a caller known on a connection is refused once its token expires by the clock', async t => {
  const { epx, get } = await world(t)
  const { secret } = await epx.addToken('acme', SCOPES, { expiresAt: new Date(epx.clock.now().getTime() + 1000).toISOString() })
  t.ok(passed(await get(secret)), 'passes before expiry')
  t.ok(passed(await get(secret)), 'passes again on the same connection')
  epx.clock.advance(1000)
  t.equal(await get(secret), 401, 'refused at expiresAt')
})

t.test('a store that becomes unavailable answers 503 to a caller already known on the connection', async t => {
  const { epx, get } = await world(t)
  const { secret } = await epx.addToken('acme', SCOPES)
  t.ok(passed(await get(secret)))
  epx.faults.unavailable = true
  try {
    t.equal(await get(secret), 503)
  } finally {
    epx.faults.unavailable = false
  }
  t.ok(passed(await get(secret)), 'passes again once the store answers')
})

t.test('a revocation, a suspension and a new binding apply to the next request of a known connection', async t => {
  const { epx, get } = await world(t)
  const a = await epx.addToken('acme', SCOPES)
  const b = await epx.addToken('acme', SCOPES)
  t.ok(passed(await get(a.secret)))
  await epx.tokens.revoke(a.id, epx.clock.now().toISOString())
  t.equal(await get(a.secret), 401, 'revoked')

  t.ok(passed(await get(b.secret)))
  await epx.companies.update('acme', c => ({ ...c, status: 'suspended' }))
  t.equal(await get(b.secret), 403, 'suspended')
  await epx.companies.update('acme', c => ({ ...c, status: 'active' }))
  t.ok(passed(await get(b.secret)), 'resumed')
  await epx.companies.update('acme', c => ({ ...c, certSubject: 'CN=someone-else,O=acme' }))
  t.equal(await get(b.secret), 403, 'the binding moved to another certificate')
})

t.test('switching tokens on one connection authenticates the new token', async t => {
  const { epx, get } = await world(t)
  const out = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const none = await epx.addToken('acme', [])
  t.ok(passed(await get(out.secret)))
  t.equal(await get(none.secret), 403, 'the second token lacks the scope')
  t.ok(passed(await get(out.secret)))
})

t.test('a known caller still records its last use, at most once a minute', async t => {
  const { epx, get } = await world(t)
  const { id, secret } = await epx.addToken('acme', SCOPES)
  const lastUsed = async () => {
    await epx.store.writeDurable(() => {})   // after the touch's own commit
    return epx.tokens.get(id)?.lastUsedAt
  }
  await get(secret)
  const first = epx.clock.now().toISOString()
  t.equal(await lastUsed(), first)
  epx.clock.advance(30_000)
  await get(secret)
  t.equal(await lastUsed(), first, 'not rewritten within the minute')
  epx.clock.advance(31_000)
  await get(secret)
  t.equal(await lastUsed(), epx.clock.now().toISOString(), 'rewritten after a minute')
})
