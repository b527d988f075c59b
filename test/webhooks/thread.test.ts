import t, { type Test as Tap } from 'tap'
import { Worker } from 'node:worker_threads'
import pino from 'pino'
import { createEpx } from '../../src/plugin.ts'
import { createReferenceHost, systemClock } from '../../src/host/reference-host.ts'
import type { Logger } from '../../src/host/contract.ts'
import type { Store } from '../../src/store/open-store.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openEvents } from '../../src/store/events.ts'
import { newWebhookId, openWebhooks } from '../../src/store/webhooks.ts'
import { newWebhookSecret, verifyWebhook } from '../../src/contract/webhook-signature.ts'
import type { DeliveryThread } from '../../src/webhooks/thread/start.ts'
import { startEpx, TEST_DOOR_IN_WORKER, UNTHROTTLED } from '../helpers/epx.ts'
import { startReceiver } from '../helpers/webhook-receiver.ts'
import { testPki, writePki } from '../helpers/certs.ts'
import { until } from '../helpers/eventually.ts'
import { migratedDatabase, storeKinds, storesOf } from '../helpers/store-kinds.ts'

// The webhook deliverer runs in a thread of its own (webhooks/thread/): its deliveries cost
// the solver's event loop nothing, and a thread that dies is started again and goes on
// where the store says it stopped (DECISIONS.md "Events for BSPs": at least once, in order).

const NOW = '2026-11-21T12:30:00Z'
const webhooks = { allowPrivateNetworks: true, caFile: 'pki/ca.crt' }

async function addEndpoint (store: Store, url: string, secret: string): Promise<string> {
  const id = newWebhookId()
  await store.writeDurable(() => openWebhooks(store).addSync({
    id, companyId: 'acme', url, types: ['realise.modifie'], secrets: [{ secret }], createdAt: new Date().toISOString(),
  }, openEvents(store).lastSeq('acme')))
  return id
}

function emit (store: Store, from: number, n: number, atMs: number): Promise<void> {
  return store.writeDurable(() => openEvents(store).appendSync(Array.from({ length: n }, (_, i) => ({ companyId: 'acme', type: 'realise.modifie' as const, fields: `"n":${from + i}` })), atMs))
}

/**
 * An endpoint in a thread of its own (the test's thread is to be blocked): each POST
 * answered 204, kept, counted in shared memory.
 */
async function receiverThread (t: Tap): Promise<{ url: string; count: Int32Array; received: () => Promise<Array<{ headers: Record<string, string>; body: string }>> }> {
  const count = new Int32Array(new SharedArrayBuffer(4))
  const { server } = testPki()
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads')
    const { createServer } = require('node:https')
    const count = new Int32Array(workerData.count)
    const received = []
    const server = createServer({ cert: workerData.cert, key: workerData.key }, (req, res) => {
      const chunks = []
      req.on('data', c => chunks.push(c))
      req.on('end', () => {
        res.writeHead(req.method === 'GET' ? 200 : 204).end()
        if (req.method !== 'POST') return
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
        Atomics.add(count, 0, 1)
        Atomics.notify(count, 0)
      })
    })
    server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
    parentPort.on('message', () => parentPort.postMessage(received))
  `, { eval: true, workerData: { count: count.buffer, cert: server.certPem, key: server.keyPem } })
  t.teardown(() => worker.terminate())
  const port = await new Promise<number>(resolve => worker.once('message', resolve))
  return {
    url: `https://localhost:${port}/hook`,
    count,
    received: () => new Promise(resolve => { worker.once('message', resolve); worker.postMessage('received') }),
  }
}

t.test('deliveries go on while the solver\'s thread is blocked: they run in a thread of their own', async t => {
  const dataDir = t.testdir()
  writePki(dataDir)
  const logger = pino({ level: 'silent' }) as unknown as Logger
  // The system's clock: the deliverer's thread reads it itself, asking the blocked thread nothing.
  const ref = createReferenceHost({ dataDir, clock: systemClock, logger, sites: 1, cycleSeconds: 0 })
  t.teardown(() => ref.close())
  let store!: Store
  let deliveries!: DeliveryThread
  const handle = await createEpx(ref.host, {
    api: { host: '127.0.0.1', port: 0, inWorker: TEST_DOOR_IN_WORKER, standbyWorker: false, rateLimit: UNTHROTTLED },
    publish: { schedule: false }, webhooks,
  }, { onStore: s => { store = s }, onWebhooks: d => { deliveries = d } })
  t.teardown(() => handle.close())
  await openCompanies(store).add({ id: 'acme', name: 'acme', status: 'active', certSubject: 'CN=acme,O=acme', perimeter: 'all', createdAt: new Date().toISOString() })
  const r = await receiverThread(t)
  const secret = newWebhookSecret()
  await addEndpoint(store, r.url, secret)
  await deliveries.running()
  t.ok(deliveries.owner, 'a deliverer runs, with its name in the leases')

  const n = 5
  await emit(store, 0, n, Date.now())
  deliveries.wake()
  // This thread, the solver's, now holds its loop: no callback of its own runs until the
  // receiver has every event (or the bound passes, and then the deliveries needed it).
  const bound = Date.now() + 60_000
  for (let seen = Atomics.load(r.count, 0); seen < n && Date.now() < bound; seen = Atomics.load(r.count, 0)) {
    Atomics.wait(r.count, 0, seen, bound - Date.now())
  }
  t.equal(Atomics.load(r.count, 0), n, 'every event delivered while the solver\'s thread never ran')

  const received = await r.received()
  const ids = received.map(x => x.headers['webhook-id'])
  t.same(ids, [...ids].sort(), 'in id order')
  t.ok(received.every(x => verifyWebhook({ secret, headers: x.headers, body: x.body }).ok), 'each one signed')
})

t.test('the deliverer\'s thread dies of an exception: logged, started again, and the rest is delivered in order, none lost', async t => {
  const secret = newWebhookSecret()
  const r = await startReceiver(t, { secret: () => secret, nowSeconds: () => Date.parse(NOW) / 1000 })
  let deliveries!: DeliveryThread
  const epx = await startEpx(t, { now: NOW, config: { webhooks }, onWebhooks: d => { deliveries = d } })
  await epx.addCompany('acme')
  await addEndpoint(epx.store, r.url, secret)
  await deliveries.running()
  const first = deliveries.owner

  await emit(epx.store, 0, 6, Date.parse(NOW))
  await until('deliveries under way', () => r.ids().length >= 2)
  deliveries.crash()
  await until('a new deliverer runs', () => deliveries.owner !== undefined && deliveries.owner !== first)
  await emit(epx.store, 6, 4, Date.parse(NOW))
  const last = openEvents(epx.store).lastSeq('acme')
  await until('every event delivered', () => new Set(r.ids()).size === 10)

  const ids = r.ids().map(Number)
  t.same([...new Set(ids)], Array.from({ length: 10 }, (_, i) => last - 9 + i), 'each event, none lost')
  t.ok(ids.every((id, i) => i === 0 || id >= ids[i - 1]!), `in id order, a repeat only in place: ${ids.join(' ')}`)
  t.ok(ids.length - 10 <= 1, 'at most the event under way at the crash twice')
  t.ok(r.received.every(x => x.verdict.ok), 'each one signed')
  await epx.caughtUp()
  await until('the fault logged', () => epx.logs().some(l => l.level === 50 && l.area === 'webhooks' && l.msg === 'the webhook deliverer\'s thread failed; restarting it'))
  t.match(epx.logs().find(l => l.msg === 'the webhook deliverer\'s thread failed; restarting it'), { err: { message: 'webhook deliverer crash requested by a test' } })
})

t.test('with no endpoint, no thread is started; the first one registered starts it', async t => {
  const secret = newWebhookSecret()
  const r = await startReceiver(t, { secret: () => secret, nowSeconds: () => Date.parse(NOW) / 1000 })
  let deliveries!: DeliveryThread
  const epx = await startEpx(t, { now: NOW, config: { webhooks }, onWebhooks: d => { deliveries = d } })
  await epx.addCompany('acme')
  t.equal(deliveries.owner, undefined, 'none runs')
  await addEndpoint(epx.store, r.url, secret)
  await until('a deliverer runs', () => deliveries.owner !== undefined)
  await emit(epx.store, 0, 1, Date.parse(NOW))
  await until('the event delivered', () => r.ids().length === 1)
  await epx.close()
  t.equal(deliveries.owner, undefined, 'closed with the plugin')
})

t.test('on PostgreSQL: the thread\'s store beside the plugin\'s delivers, in order, and records each cursor in the database', { skip: !storeKinds.includes('postgres') && 'EPX_STORE_KINDS leaves PostgreSQL out' }, async t => {
  const cluster = storesOf(t, 'postgres').cluster()
  const database = await migratedDatabase(cluster)
  const secret = newWebhookSecret()
  const r = await startReceiver(t, { secret: () => secret, nowSeconds: () => Date.parse(NOW) / 1000 })
  let deliveries!: DeliveryThread
  const epx = await startEpx(t, {
    now: NOW, config: { webhooks, store: { kind: 'postgres', postgres: { connectionString: cluster.url(database) } } }, onWebhooks: d => { deliveries = d },
  })
  await epx.addCompany('acme')
  const id = await addEndpoint(epx.store, r.url, secret)
  await deliveries.running()
  await emit(epx.store, 0, 3, Date.parse(NOW))
  const last = openEvents(epx.store).lastSeq('acme')
  await until('three delivered', () => r.ids().length === 3)
  t.same(r.ids().map(Number), [last - 2, last - 1, last], 'each once, in id order')
  t.ok(r.received.every(x => x.verdict.ok), 'each one signed')
  await until('the cursor after the last one', () => openWebhooks(epx.store).stateOf(id).cursor === last)
  await epx.close()
  t.equal(cluster.psql(`SELECT count(*) FROM epx_record WHERE db = 'webhook-leases' AND value IS NOT NULL`, database).trim(), '0', 'its lease released at close')
})
