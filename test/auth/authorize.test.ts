import t, { type Test } from 'tap'
import { X509Certificate } from 'node:crypto'
import { startEpx, type TestEpx, type TestResponse } from '../helpers/epx.ts'
import { tlsGet } from '../helpers/tls-request.ts'
import { clientCert, selfSignedClientCert, testPki, type KeyPairPem } from '../helpers/certs.ts'
import { INBOUND_PATH, OUTBOUND_PATH } from '../../src/http/route.ts'
import { newTokenSecret } from '../../src/auth/tokens.ts'
import { SCOPES, type Scope } from '../../src/contract/scopes.ts'

// DECISIONS.md "Authentication and tenancy": both endpoints run the same five checks, in
// order; each answers in its door's format (inbound {error:{…}}, outbound problem+json).

interface Door {
  readonly name: 'inbound' | 'outbound'
  readonly scope: Scope
  readonly method: string
  readonly path: string
  readonly query?: Record<string, string>
  readonly body?: object
}

const DOORS: readonly Door[] = [
  { name: 'inbound', scope: 'inbound:programme-soutirage', method: 'POST', path: INBOUND_PATH, body: {} },
  { name: 'outbound', scope: 'outbound:besoins-agreges', method: 'GET', path: OUTBOUND_PATH, query: { site_id: 'PRM30000000000001', target_date: '2026-11-22' } },
]

const SLUGS: Record<string, string> = {
  MTLS_REQUIRED: 'mtls-required', UNAUTHORIZED: 'unauthorized', COMPANY_SUSPENDED: 'company-suspended',
  SCOPE_DENIED: 'scope-denied', NO_STORE: 'no-store',
}

// RFC 6750 §3.1: the challenge says whether a token was sent, and which scope was missing.
const NO_TOKEN = 'Bearer realm="epx"'
const INVALID_TOKEN = 'Bearer realm="epx", error="invalid_token"'
const insufficientScope = (door: Door) => `Bearer realm="epx", error="insufficient_scope", scope="${door.scope}"`

/** Asserts status, code, the door's body shape and the WWW-Authenticate challenge (none unless given). */
function isError (t: Test, res: TestResponse, door: Door, status: number, code: string, challenge?: string): void {
  t.equal(res.status, status, `${door.name}: status ${status}`)
  if (door.name === 'inbound') {
    t.match(res.headers['content-type'], /^application\/json/)
    const { error } = res.json()
    t.equal(error.code, code)
    t.type(error.message, 'string')
    t.same(error.details, {})
  } else {
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    const p = res.json()
    t.equal(p.status, status)
    t.match(p.type, new RegExp(`^https://127\\.0\\.0\\.1:\\d+/errors/${SLUGS[code]}$`))
    t.type(p.title, 'string')
    t.type(p.detail, 'string')
    t.equal(p.code, code === 'NO_STORE' ? 'STORE_UNAVAILABLE' : code, 'the problem carries its code (the store\'s by its outbound name)')
  }
  t.equal(res.headers['www-authenticate'], challenge, `${door.name}: WWW-Authenticate ${challenge ?? '(none)'}`)
}

/** What a request that passed the chain looks like, stub or real handler. */
function passes (t: Test, res: TestResponse, door: Door): void {
  t.notOk([401, 403, 503].includes(res.status), `${door.name}: passes the chain (got ${res.status})`)
}

interface World {
  epx: TestEpx
  acme: KeyPairPem
  beta: KeyPairPem
  tokens: Record<string, string>
}

async function world (t: Test): Promise<World> {
  const epx = await startEpx(t)
  const acme = (await epx.addCompany('acme')).cert
  const beta = (await epx.addCompany('beta')).cert
  await epx.addCompany('gamma', { status: 'suspended' })
  // Pinned to a certificate with the right subject that nobody presents.
  const pin = new X509Certificate(clientCert('CN=delta,O=delta', testPki().otherCa).certPem).fingerprint256
  await epx.addCompany('delta', { certPins: [pin] })
  const own = new X509Certificate(clientCert('CN=epsilon,O=epsilon').certPem).fingerprint256
  await epx.addCompany('epsilon', { certPins: [own.toLowerCase()] })
  const now = epx.clock.now().getTime()
  const tokens = {
    acme: (await epx.addToken('acme', SCOPES)).secret,
    acmeOut: (await epx.addToken('acme', ['outbound:besoins-agreges'])).secret,
    acmeIn: (await epx.addToken('acme', ['inbound:programme-soutirage'])).secret,
    acmeNone: (await epx.addToken('acme', [])).secret,
    expired: (await epx.addToken('acme', SCOPES, { expiresAt: new Date(now).toISOString() })).secret,
    expiresSoon: (await epx.addToken('acme', SCOPES, { expiresAt: new Date(now + 1).toISOString() })).secret,
    revoked: (await epx.addToken('acme', SCOPES, { revoked: true })).secret,
    beta: (await epx.addToken('beta', SCOPES)).secret,
    gamma: (await epx.addToken('gamma', SCOPES)).secret,
    gammaNone: (await epx.addToken('gamma', [])).secret,
    delta: (await epx.addToken('delta', SCOPES)).secret,
    epsilon: (await epx.addToken('epsilon', SCOPES)).secret,
  }
  return { epx, acme, beta, tokens }
}

const send = (w: World, door: Door, opts: { cert?: KeyPairPem | null; token?: string; authorization?: string }) =>
  w.epx.request({
    method: door.method, path: door.path, query: door.query, body: door.body, cert: opts.cert, token: opts.token,
    ...(opts.authorization !== undefined ? { headers: { authorization: opts.authorization } } : {}),
  })

t.test('the authentication chain, on both endpoints', async t => {
  const w = await world(t)
  const { tokens } = w
  const otherCa = clientCert('CN=acme,O=acme', testPki().otherCa)
  const selfSigned = selfSignedClientCert('CN=acme,O=acme')

  for (const door of DOORS) {
    t.test(`${door.name}: a valid certificate and token of an active company with the scope pass`, async t => {
      passes(t, await send(w, door, { cert: w.acme, token: tokens.acme }), door)
      passes(t, await send(w, door, { cert: w.acme, token: door.name === 'inbound' ? tokens.acmeIn : tokens.acmeOut }), door)
    })

    t.test(`${door.name}: 1. no client certificate is 403 MTLS_REQUIRED`, async t => {
      isError(t, await send(w, door, { cert: null, token: tokens.acme }), door, 403, 'MTLS_REQUIRED')
    })
    t.test(`${door.name}: 1. a certificate from another CA, right subject, is 403 MTLS_REQUIRED`, async t => {
      isError(t, await send(w, door, { cert: otherCa, token: tokens.acme }), door, 403, 'MTLS_REQUIRED')
    })
    t.test(`${door.name}: 1. a self-signed certificate carrying the right subject is 403 MTLS_REQUIRED`, async t => {
      isError(t, await send(w, door, { cert: selfSigned, token: tokens.acme }), door, 403, 'MTLS_REQUIRED')
    })

    t.test(`${door.name}: 2. no Authorization header is 401`, async t => {
      isError(t, await send(w, door, { cert: w.acme }), door, 401, 'UNAUTHORIZED', NO_TOKEN)
    })
    t.test(`${door.name}: 2. a malformed Authorization header is 401, and the answer never echoes it`, async t => {
      const secret = tokens.acme
      for (const authorization of [`Basic ${secret}`, 'Bearer', `Bearer ${secret}x`, `Bearer ${secret} extra`, `Token ${secret}`]) {
        const res = await send(w, door, { cert: w.acme, authorization })
        isError(t, res, door, 401, 'UNAUTHORIZED', INVALID_TOKEN)
        t.notOk(res.text.includes(secret.slice(4)), 'no secret in the body')
      }
    })
    t.test(`${door.name}: 2. an unknown token is 401`, async t => {
      isError(t, await send(w, door, { cert: w.acme, token: newTokenSecret() }), door, 401, 'UNAUTHORIZED', INVALID_TOKEN)
    })
    t.test(`${door.name}: 2. a token whose expiry is now is 401; one a millisecond later passes`, async t => {
      isError(t, await send(w, door, { cert: w.acme, token: tokens.expired }), door, 401, 'UNAUTHORIZED', INVALID_TOKEN)
      passes(t, await send(w, door, { cert: w.acme, token: tokens.expiresSoon }), door)
    })
    t.test(`${door.name}: 2. a revoked token is 401`, async t => {
      isError(t, await send(w, door, { cert: w.acme, token: tokens.revoked }), door, 401, 'UNAUTHORIZED', INVALID_TOKEN)
    })

    t.test(`${door.name}: 3. the certificate of company B with the token of company A is 403 MTLS_REQUIRED`, async t => {
      isError(t, await send(w, door, { cert: w.beta, token: tokens.acme }), door, 403, 'MTLS_REQUIRED')
      passes(t, await send(w, door, { cert: w.beta, token: tokens.beta }), door)
    })
    t.test(`${door.name}: 3. a pinned fingerprint that differs is 403 MTLS_REQUIRED, whatever the subject`, async t => {
      isError(t, await send(w, door, { cert: clientCert('CN=delta,O=delta'), token: tokens.delta }), door, 403, 'MTLS_REQUIRED')
      passes(t, await send(w, door, { cert: clientCert('CN=epsilon,O=epsilon'), token: tokens.epsilon }), door)
    })

    t.test(`${door.name}: 4. a suspended company is 403 COMPANY_SUSPENDED`, async t => {
      isError(t, await send(w, door, { cert: clientCert('CN=gamma,O=gamma'), token: tokens.gamma }), door, 403, 'COMPANY_SUSPENDED')
    })

    t.test(`${door.name}: 5. a token without the endpoint's scope is 403 SCOPE_DENIED`, async t => {
      const other = door.name === 'inbound' ? tokens.acmeOut : tokens.acmeIn
      isError(t, await send(w, door, { cert: w.acme, token: other }), door, 403, 'SCOPE_DENIED', insufficientScope(door))
      isError(t, await send(w, door, { cert: w.acme, token: tokens.acmeNone }), door, 403, 'SCOPE_DENIED', insufficientScope(door))
    })

    t.test(`${door.name}: the checks run in order; the first failing one answers`, async t => {
      isError(t, await send(w, door, { cert: null }), door, 403, 'MTLS_REQUIRED')                    // 1 before 2
      isError(t, await send(w, door, { cert: w.beta, token: tokens.revoked }), door, 401, 'UNAUTHORIZED', INVALID_TOKEN) // 2 before 3
      isError(t, await send(w, door, { cert: w.acme, token: tokens.gamma }), door, 403, 'MTLS_REQUIRED')  // 3 before 4
      isError(t, await send(w, door, { cert: clientCert('CN=gamma,O=gamma'), token: tokens.gammaNone }), door, 403, 'COMPANY_SUSPENDED') // 4 before 5
    })

    t.test(`${door.name}: a store that cannot answer is 503 NO_STORE with Retry-After, never 401`, async t => {
      w.epx.faults.unavailable = true
      try {
        for (const token of [tokens.acme, tokens.revoked, newTokenSecret()]) {
          const res = await send(w, door, { cert: w.acme, token })
          isError(t, res, door, 503, 'NO_STORE')
          t.equal(res.headers['retry-after'], '5')
        }
      } finally {
        w.epx.faults.unavailable = false
      }
      passes(t, await send(w, door, { cert: w.acme, token: tokens.acme }), door)
    })
  }

  t.test('no secret reaches the log', async t => {
    const text = JSON.stringify(w.epx.logs())
    for (const secret of Object.values(tokens)) t.notOk(text.includes(secret.slice(4)), 'secret absent from logs')
    t.notOk(/authorization/i.test(text), 'no Authorization header in logs')
  })
})

t.test('a passing request records when the token was last used', async t => {
  const w = await world(t)
  const { id, secret } = await w.epx.addToken('acme', SCOPES)
  passes(t, await send(w, DOORS[1]!, { cert: w.acme, token: secret }), DOORS[1]!)
  await w.epx.store.writeDurable(() => {})
  for (let i = 0; i < 50 && !w.epx.tokens.get(id)?.lastUsedAt; i++) await new Promise(r => setImmediate(r))
  t.equal(w.epx.tokens.get(id)?.lastUsedAt, w.epx.clock.now().toISOString())
})

t.test('a session made without a certificate is never resumed and stays 403 MTLS_REQUIRED (resumption: test/http/resumption.test.ts)', async t => {
  const w = await world(t)
  const path = `${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-22`
  for (const maxVersion of ['TLSv1.3', 'TLSv1.2'] as const) {
    const first = await tlsGet(w.epx.url, { maxVersion }, path, w.tokens.acme)
    t.equal(first.status, 403, `${maxVersion}: the first connection, without a certificate, is refused`)
    t.ok(first.session, `${maxVersion}: the client got a session to offer`)
    const again = await tlsGet(w.epx.url, { maxVersion, session: first.session }, path, w.tokens.acme)
    t.equal(again.reused, false, `${maxVersion}: the server does not resume the session`)
    t.equal(again.status, 403, `${maxVersion}: no certificate on the new handshake → 403`)
    t.equal(JSON.parse(again.body).code, 'MTLS_REQUIRED')
  }
})
