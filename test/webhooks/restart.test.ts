import t from 'tap'
import { join } from 'node:path'
import { request } from 'undici'
import { openStore } from '../../src/store/open-store.ts'
import { openEvents } from '../../src/store/events.ts'
import { newWebhookId, openWebhooks, WEBHOOKS_DB } from '../../src/store/webhooks.ts'
import { newWebhookSecret } from '../../src/contract/webhook-signature.ts'
import { startEpx } from '../helpers/epx.ts'
import { startReceiver } from '../helpers/webhook-receiver.ts'
import { until } from '../helpers/eventually.ts'

// The company's events are the webhooks' outbox (store/webhooks.ts): what was written while
// epx was down is delivered once it is up again, after what was delivered before, none lost.

const NOW = '2026-11-21T12:30:00Z'
const config = { webhooks: { allowPrivateNetworks: true, caFile: 'pki/ca.crt' } }

t.test('epx started by the host delivers its events; closed and started again on the same folder, it delivers what it missed, each once, in order', async t => {
  const secret = newWebhookSecret()
  const r = await startReceiver(t, { secret: () => secret, nowSeconds: () => Date.parse(NOW) / 1000 })
  const first = await startEpx(t, { now: NOW, config })
  await first.addCompany('acme')
  const id = newWebhookId()
  const store = first.store
  await store.writeDurable(() => openWebhooks(store).addSync({
    id, companyId: 'acme', url: r.url, types: ['besoins_agreges.publie', 'realise.modifie'], secrets: [{ secret }], createdAt: NOW,
  }, openEvents(store).lastSeq('acme')))
  await first.handle.publish()
  await until('the publication\'s events delivered', () => r.ids().length === 3)
  // The receiver counts an event when it answers; the deliverer, once the answer reached it
  // and its cursor moved. Closed before that, the event would be sent again (at least once).
  await until('their deliveries recorded', () => openWebhooks(store).stateOf(id).cursor === openEvents(store).lastSeq('acme'))
  await first.close()

  // Written while epx is down, as another process (the CLI) writes the store.
  const down = openStore(join(first.dataDir, 'epx.lmdb'))
  await down.opened
  await down.writeDurable(() => openEvents(down).appendSync([1, 2, 3, 4].map(n => ({ companyId: 'acme', type: 'realise.modifie' as const, fields: `"n":${n}` })), Date.parse(NOW)))
  const last = openEvents(down).lastSeq('acme')
  await down.close()

  const again = await startEpx(t, { now: NOW, config: { ...config, metrics: { enabled: true, port: 0 } }, dataDir: first.dataDir })
  await until('the missed events delivered', () => r.ids().length === 7)
  const ids = r.ids()
  t.same(ids, [...new Set(ids)].sort(), 'each once, in id order')
  t.equal(Number(ids.at(-1)), last, 'up to the last one written')
  t.ok(r.received.every(x => x.verdict.ok), 'every one signed')
  await until('the cursor after the last one', () => openWebhooks(again.store).stateOf(id).cursor === last)

  // An endpoint marked failing is a gauge per company (docs/operating.md's alert).
  const endpoint = openWebhooks(again.store).get(id)!
  await again.store.writeDurable(() => again.store.db(WEBHOOKS_DB).putSync(id, { ...endpoint, failingSince: NOW }))
  const metrics = await (await request(new URL('/metrics', again.handle.metricsUrl))).body.text()
  t.match(metrics, /^epx_webhook_endpoints_failing\{company="acme"\} 1$/m)
})
