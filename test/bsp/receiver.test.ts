import t, { type Test } from 'tap'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { Agent, request } from 'undici'
import { newWebhookSecret, webhookHeaders } from '../../src/contract/webhook-signature.ts'
import { createWebhookHandler, seenIds, webhookReceiver } from '../../src/bsp/receiver.ts'
import type { BspEvent } from '../../src/bsp/client.ts'
import { testPki } from '../helpers/certs.ts'

// An endpoint receiving the service's webhooks (DECISIONS.md "Events for BSPs"), over real TLS on loopback.

const NOW = 1_800_000_000
const event = (id: string) => JSON.stringify({ id, type: 'realise.modifie', occurred_at: '2027-01-15T08:00:00Z', site_id: 'PRM30000000000001', target_date: '2027-01-15' })

async function endpoint (t: Test, o: Partial<Parameters<typeof webhookReceiver>[0]> & { secret: string | string[] }) {
  const events: BspEvent[] = []
  const pki = testPki()
  const server = createServer({ cert: pki.server.certPem, key: pki.server.keyPem }, webhookReceiver({ onEvent: e => { events.push(e) }, nowSeconds: () => NOW, ...o }))
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const agent = new Agent({ connect: { ca: pki.serverCa.certPem } })
  t.teardown(async () => { await agent.close(); server.close() })
  const url = `https://localhost:${(server.address() as AddressInfo).port}/hooks/epx`
  const send = async (o: { method?: 'GET' | 'POST' | 'PUT'; query?: string; headers?: Record<string, string>; body?: string }) => {
    const res = await request(url + (o.query ?? ''), { method: o.method ?? 'POST', headers: o.headers, body: o.body, dispatcher: agent })
    return { status: res.statusCode, text: await res.body.text() }
  }
  /** A delivery as the service signs it. */
  const deliver = (body: string, secrets: string[] = [o.secret].flat(), at = NOW) => send({ headers: { ...webhookHeaders(secrets, JSON.parse(body).id, at, body), 'content-type': 'application/json' }, body })
  return { events, send, deliver }
}

t.test('the registration check: GET ?echo=VALUE answers VALUE; a GET without it says what it is for', async t => {
  const { send } = await endpoint(t, { secret: newWebhookSecret() })
  t.same(await send({ method: 'GET', query: '?echo=Zx8-41a' }), { status: 200, text: 'Zx8-41a' })
  t.match(await send({ method: 'GET' }), { status: 400, text: /registration check, with \?echo=VALUE/ })
  t.match(await send({ method: 'PUT', body: 'x' }), { status: 405 })
})

t.test('a delivery signed with the secret is handed over once; sent again, it is acknowledged and not handled twice', async t => {
  const secret = newWebhookSecret()
  const { events, deliver } = await endpoint(t, { secret, seen: seenIds() })
  t.same(await deliver(event('000000000000007')), { status: 200, text: '000000000000007 received' })
  t.same(await deliver(event('000000000000007')), { status: 200, text: '000000000000007 already received' })
  t.same(events.map(e => [e.id, e.type, e.site_id]), [['000000000000007', 'realise.modifie', 'PRM30000000000001']])
})

t.test('refused with 401 and the reason: a tampered body, another secret, a stale or future timestamp, no headers', async t => {
  const secret = newWebhookSecret()
  const { events, send, deliver } = await endpoint(t, { secret })
  const body = event('000000000000008')
  const headers = webhookHeaders([secret], '000000000000008', NOW, body)
  t.match(await send({ headers, body: body.replace('PRM30000000000001', 'PRM30000000000002') }), { status: 401, text: 'no v1 signature matches the secret' })
  t.match(await deliver(body, [newWebhookSecret()]), { status: 401, text: 'no v1 signature matches the secret' })
  t.match(await deliver(body, [secret], NOW - 301), { status: 401, text: 'webhook-timestamp is 301 s behind this clock, beyond the 300 s tolerated' })
  t.match(await deliver(body, [secret], NOW + 400), { status: 401, text: 'webhook-timestamp is 400 s ahead of this clock, beyond the 300 s tolerated' })
  t.match(await send({ body }), { status: 401, text: /missing webhook-id/ })
  t.same(events, [], 'nothing handed over')
  t.equal((await deliver(body, [secret], NOW - 300)).status, 200, 'at the tolerance\'s edge it is accepted')
})

t.test('during a rotation either secret verifies: the endpoint holding both, the service signing with one or both', async t => {
  const [previous, next] = [newWebhookSecret(), newWebhookSecret()]
  const { events, deliver } = await endpoint(t, { secret: [previous, next] })
  t.equal((await deliver(event('000000000000010'), [previous])).status, 200)
  t.equal((await deliver(event('000000000000011'), [next, previous])).status, 200)
  t.equal((await deliver(event('000000000000012'), [next])).status, 200)
  t.same(events.map(e => e.id), ['000000000000010', '000000000000011', '000000000000012'])
})

t.test('a handler that fails answers 500 so the service sends it again; a body too large 413; a signed body that is no event 400', async t => {
  const secret = newWebhookSecret()
  let fail = true
  const handled: string[] = []
  const { deliver, send } = await endpoint(t, {
    secret, seen: seenIds(), maxBodyBytes: 400,
    onEvent: e => { if (fail) throw new Error('database down'); handled.push(e.id) },
  })
  t.same(await deliver(event('000000000000020')), { status: 500, text: '000000000000020 not handled: database down' })
  fail = false
  t.equal((await deliver(event('000000000000020'))).status, 200, 'sent again, it is handled: a failure is not remembered as seen')
  t.same(handled, ['000000000000020'])
  t.match(await send({ headers: webhookHeaders([secret], 'x', NOW, 'y'.repeat(500)), body: 'y'.repeat(500) }), { status: 413, text: 'the body is over 400 bytes' })
  t.match(await send({ headers: webhookHeaders([secret], 'x', NOW, '[1]'), body: '[1]' }), { status: 400, text: /not an event/ })
})

t.test('the same delivery arriving while the first is being handled is answered 409, handled once', async t => {
  let release: (() => void) | undefined
  const handled: string[] = []
  const handle = createWebhookHandler({
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', seen: new Set<string>(), nowSeconds: () => NOW,
    onEvent: async e => { await new Promise<void>(resolve => { release = resolve }); handled.push(e.id) },
  })
  const body = event('000000000000030')
  const req = { method: 'POST', url: '/', headers: webhookHeaders(['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], '000000000000030', NOW, body), body }
  const first = handle(req)
  t.match(await handle(req), { status: 409, body: /being handled: send it again later/ })
  while (!release) await new Promise(resolve => setImmediate(resolve))
  release()
  t.match(await first, { status: 200, event: { id: '000000000000030' } })
  t.match(await handle(req), { status: 200, body: /already received/ })
  t.same(handled, ['000000000000030'])
})

t.test('seenIds keeps the latest ids it is given, forgetting the oldest past its size', async t => {
  const seen = seenIds(2)
  for (const id of ['a', 'b', 'c']) seen.add(id)
  t.same(['a', 'b', 'c'].map(id => seen.has(id)), [false, true, true])
})
