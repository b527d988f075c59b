import t from 'tap'
import { request } from 'undici'
import { openEvents } from '../../src/store/events.ts'
import { newWebhookId, openWebhooks } from '../../src/store/webhooks.ts'
import { newWebhookSecret } from '../../src/contract/webhook-signature.ts'
import type { DeliveryThread } from '../../src/webhooks/thread/start.ts'
import { startEpx } from '../helpers/epx.ts'
import { startReceiver } from '../helpers/webhook-receiver.ts'
import { until } from '../helpers/eventually.ts'

// docs/operating.md's webhook metrics, over a real scrape: each attempt counted by company
// and outcome (from the deliverer's thread), and the age of the oldest event an endpoint
// still has to deliver (read from the store when scraped).

const NOW = '2026-11-21T12:30:00Z'

t.test('epx_webhook_deliveries_total counts attempts by outcome; epx_webhook_oldest_undelivered_seconds is the age of what waits, 0 once delivered', async t => {
  const secret = newWebhookSecret()
  // The first POST fails (500), the others are delivered.
  const r = await startReceiver(t, { secret: () => secret, nowSeconds: () => Date.parse(NOW) / 1000, answer: n => n === 0 ? 500 : 204 })
  let deliveries!: DeliveryThread
  const epx = await startEpx(t, { now: NOW, config: { webhooks: { allowPrivateNetworks: true, caFile: 'pki/ca.crt' }, metrics: { enabled: true, port: 0 } }, onWebhooks: d => { deliveries = d } })
  await epx.addCompany('acme')
  await epx.addCompany('bravo')
  const scrape = async (): Promise<string> => (await request(new URL('/metrics', epx.handle.metricsUrl))).body.text()
  const sample = (text: string, series: string): number | undefined => {
    const line = text.split('\n').find(l => l.startsWith(series + ' '))
    return line === undefined ? undefined : Number(line.slice(series.length + 1))
  }
  const age = (company: string) => `epx_webhook_oldest_undelivered_seconds{company="${company}"}`
  const attempts = (outcome: string) => `epx_webhook_deliveries_total{company="acme",outcome="${outcome}"}`

  t.equal(sample(await scrape(), age('acme')), undefined, 'no series for a company without endpoints')
  const store = epx.store
  const id = newWebhookId()
  await store.writeDurable(() => openWebhooks(store).addSync({ id, companyId: 'acme', url: r.url, types: ['realise.modifie'], secrets: [{ secret }], createdAt: NOW }, openEvents(store).lastSeq('acme')))
  t.equal(sample(await scrape(), age('acme')), 0, 'an endpoint with nothing to deliver: 0')

  // An event it does not want, then one it wants: the age is the wanted one's.
  const written = Date.parse(NOW)
  await store.writeDurable(() => openEvents(store).appendSync([{ companyId: 'acme', type: 'perimetre.modifie', fields: '"n":0' }], written - 60_000))
  await store.writeDurable(() => openEvents(store).appendSync([{ companyId: 'acme', type: 'realise.modifie', fields: '"n":1' }], written))
  await until('the failed attempt recorded', () => openWebhooks(store).stateOf(id).retry !== undefined)
  const { nextMs } = openWebhooks(store).stateOf(id).retry!
  // To a second before the retry: the endpoint is not tried again meanwhile.
  epx.clock.set(new Date(nextMs - 1000))
  const waited = (nextMs - 1000 - written) / 1000
  let text = ''
  await until('the failed attempt counted', async () => sample(text = await scrape(), attempts('failed-attempt')) === 1)
  t.equal(sample(text, attempts('delivered')), undefined, 'none delivered yet')
  t.equal(sample(text, age('acme')), waited, `the event waits since ${waited} s on the host's clock (the skipped one before it is not counted)`)
  t.equal(sample(text, age('bravo')), undefined, 'nor a series for the company without endpoints')

  // Its retry is due (5 s): woken after the host's clock moved, it delivers.
  epx.clock.set(new Date(nextMs))
  deliveries.wake()
  await until('delivered', () => r.ids().length === 1)
  await until('the delivery counted', async () => sample(text = await scrape(), attempts('delivered')) === 1)
  t.equal(sample(text, attempts('failed-attempt')), 1, 'the failure still counted once')
  await until('nothing left to deliver', async () => sample(text = await scrape(), age('acme')) === 0)
  t.match(text, /^# TYPE epx_webhook_deliveries_total counter$/m)
  t.match(text, /^# TYPE epx_webhook_oldest_undelivered_seconds gauge$/m)
})
