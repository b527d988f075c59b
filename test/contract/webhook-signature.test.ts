import t from 'tap'
import { newWebhookSecret, signWebhook, verifyWebhook, webhookHeaders } from '../../src/contract/webhook-signature.ts'

// Standard Webhooks 1.0, as DECISIONS.md "Events for BSPs" has it.

// The specification's published test vector: what its reference libraries sign.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
}

t.test('the signature of the specification\'s test vector, from a string and from the body\'s bytes', async t => {
  t.equal(signWebhook(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body), VECTOR.signature)
  t.equal(signWebhook(VECTOR.secret, VECTOR.id, VECTOR.timestamp, Buffer.from(VECTOR.body)), VECTOR.signature)
  t.equal(signWebhook(VECTOR.secret.slice('whsec_'.length), VECTOR.id, VECTOR.timestamp, VECTOR.body), VECTOR.signature, 'a secret without its prefix reads the same')
})

t.test('a receiver accepts the vector at its instant, and refuses what is changed, late or unsigned', async t => {
  const headers = { 'webhook-id': VECTOR.id, 'webhook-timestamp': String(VECTOR.timestamp), 'webhook-signature': `v1,bm9wZQ== ${VECTOR.signature}` }
  const at = (o: Partial<Parameters<typeof verifyWebhook>[0]>) => verifyWebhook({ secret: VECTOR.secret, headers, body: VECTOR.body, nowSeconds: VECTOR.timestamp, ...o })
  t.same(at({}), { ok: true, id: VECTOR.id, timestampSeconds: VECTOR.timestamp }, 'one of the listed signatures matches')
  t.match(at({ body: '{"test": 2432232315}' }), { ok: false, reason: /no v1 signature matches/ }, 'a changed body')
  t.match(at({ headers: { ...headers, 'webhook-id': 'msg_other' } }), { ok: false }, 'another id')
  t.match(at({ secret: newWebhookSecret() }), { ok: false }, 'another secret')
  t.match(at({ nowSeconds: VECTOR.timestamp + 301 }), { ok: false, reason: /301 s behind this clock, beyond the 300 s tolerated/ }, 'a replay after the tolerance')
  t.match(at({ nowSeconds: VECTOR.timestamp - 301 }), { ok: false }, 'a timestamp from the future')
  t.same(at({ nowSeconds: VECTOR.timestamp + 600, toleranceSeconds: 600 }).ok, true, 'a wider tolerance')
  t.match(at({ headers: { ...headers, 'webhook-signature': undefined } }), { ok: false, reason: /missing/ })
  t.match(at({ headers: { ...headers, 'webhook-timestamp': '1614265330.5' } }), { ok: false, reason: /Unix seconds/ })
  t.match(at({ headers: { ...headers, 'webhook-signature': VECTOR.signature.replace('v1,', 'v2,') } }), { ok: false }, 'only v1 signatures count')
})

t.test('during a rotation every secret in force signs, and a receiver holding either verifies', async t => {
  const older = newWebhookSecret()
  const newer = newWebhookSecret()
  t.match(newer, /^whsec_[A-Za-z0-9+/]{43}=$/, '32 random key bytes')
  const body = '{"id":"000000000000001","type":"instruction.statut"}'
  const headers = webhookHeaders([newer, older], '000000000000001', 1_800_000_000, body)
  t.equal(headers['webhook-signature'].split(' ').length, 2)
  for (const secret of [older, newer, [newWebhookSecret(), older]]) {
    t.equal(verifyWebhook({ secret, headers, body, nowSeconds: 1_800_000_000 }).ok, true)
  }
  t.equal(verifyWebhook({ secret: newWebhookSecret(), headers, body, nowSeconds: 1_800_000_000 }).ok, false)
})
