import t, { type Test as Tap } from 'tap'
import type { Store } from '../../src/store/open-store.ts'
import { ManualClock, systemClock } from '../../src/host/reference-host.ts'
import type { Clock } from '../../src/host/contract.ts'
import { openEventBell } from '../../src/store/event-bell.ts'
import { announceEvents, EVENTS_DB, openEvents, type EventType } from '../../src/store/events.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openAudit } from '../../src/store/audit.ts'
import { newWebhookId, openWebhooks } from '../../src/store/webhooks.ts'
import { newWebhookSecret } from '../../src/contract/webhook-signature.ts'
import { MAX_RETRY_MS, RETRY_FOR_MS, startDeliverer, type Deliverer } from '../../src/webhooks/deliverer.ts'
import { storesOf, twoStores } from '../helpers/store-kinds.ts'
import { startReceiver, WEBHOOK_CA } from '../helpers/webhook-receiver.ts'
import { eventually, until } from '../helpers/eventually.ts'

// DECISIONS.md "Events for BSPs": each endpoint's events, of the types it wants, POSTed one
// at a time in id order, signed (Standard Webhooks 1.0); a failure tried again after 5 s,
// doubling up to 1 h, for 24 h, then the endpoint is failing; a slow endpoint delays no other.

const T0 = Date.parse('2026-11-21T08:00:00Z')
const quiet = { debug () {}, info () {}, warn () {}, error () {}, child () { return quiet } }

interface Rig { store: Store; deliverer: Deliverer; bell: ReturnType<typeof openEventBell> }

/** A deliverer on `store`, its bell rung by the store's events (and by another instance's, as plugin.ts does). */
function deliver (t: Tap, store: Store, clock: Clock, o: { allowPrivateNetworks?: boolean; requestTimeoutMs?: number } = {}): Rig {
  const bell = openEventBell()
  announceEvents(store, { bell })
  t.teardown(store.onApplied(changes => { if (changes.has(EVENTS_DB)) bell.ring() }))
  const deliverer = startDeliverer({
    store, bell, clock, log: quiet,
    connect: { allowPrivateNetworks: o.allowPrivateNetworks ?? true, requestTimeoutMs: o.requestTimeoutMs ?? 5000, ca: WEBHOOK_CA() },
  })
  t.teardown(() => deliverer.close())
  return { store, deliverer, bell }
}

async function addCompany (store: Store, id = 'acme'): Promise<void> {
  await openCompanies(store, { now: () => T0 }).add({ id, name: id, status: 'active', certSubject: `CN=${id},O=${id}`, perimeter: 'all', createdAt: new Date(T0).toISOString() })
}

/** An endpoint of `companyId` at `url`, from the company's next event on; its id and secret. */
async function addEndpoint (store: Store, url: string, types: readonly EventType[] = ['realise.modifie'], companyId = 'acme'): Promise<{ id: string; secret: string }> {
  const id = newWebhookId()
  const secret = newWebhookSecret()
  await store.writeDurable(() => openWebhooks(store).addSync({ id, companyId, url, types, secrets: [{ secret }], createdAt: new Date(T0).toISOString() }, openEvents(store).lastSeq(companyId)))
  return { id, secret }
}

/** `n` events of `type` for the company, one write. */
function emit (store: Store, n: number, type: EventType = 'realise.modifie', companyId = 'acme', atMs = T0): Promise<void> {
  return store.writeDurable(() => openEvents(store).appendSync(Array.from({ length: n }, (_, i) => ({ companyId, type, fields: `"n":${i}` })), atMs))
}

const lmdb = storesOf(t, 'lmdb')
async function open (t: Tap, stores = lmdb, dir = t.testdir()): Promise<Store> {
  const store = await stores.openStore(dir)
  t.teardown(() => store.close())
  return store
}

t.test('events go in id order, each signed with the endpoint\'s secret, the body the feed\'s own text; only the types wanted', async t => {
  const store = await open(t)
  await addCompany(store)
  let secret = ''
  const r = await startReceiver(t, { secret: () => secret })
  const hook = await addEndpoint(store, r.url, ['realise.modifie'])
  secret = hook.secret
  deliver(t, store, systemClock)
  await emit(store, 3)
  await emit(store, 2, 'perimetre.modifie')
  await emit(store, 2)
  await until('five delivered', () => r.ids().length >= 5)
  const page = openEvents(store).page('acme', 0, 100)
  const wanted = page.kind === 'page' ? page.events.filter(e => JSON.parse(e).type === 'realise.modifie') : []
  t.same(r.received.map(x => x.body), wanted, 'each event once, in id order, as the feed serves it')
  t.ok(r.received.every(x => x.verdict.ok), 'every signature verifies')
  t.same(r.ids(), wanted.map(e => JSON.parse(e).id), 'webhook-id is the event id')
  await until('cursor at the last event', () => openWebhooks(store).stateOf(hook.id).cursor === openEvents(store).lastSeq('acme'))
  t.same(openWebhooks(store).log(hook.id).map(l => l.status), [204, 204, 204, 204, 204])
})

t.test('during a rotation\'s overlap each delivery verifies with the old secret and with the new one', async t => {
  const store = await open(t)
  await addCompany(store)
  const newer = newWebhookSecret()
  let older = ''
  const byOld = await startReceiver(t, { secret: () => older })
  const byNew = await startReceiver(t, { secret: () => newer })
  const first = await addEndpoint(store, byOld.url)
  older = first.secret
  const second = await addEndpoint(store, byNew.url)
  await store.writeDurable(() => {
    openWebhooks(store).rotateSync(first.id, newer, Date.now(), 86_400_000)
    openWebhooks(store).rotateSync(second.id, newer, Date.now(), 86_400_000)
  })
  deliver(t, store, systemClock)
  await emit(store, 1)
  await until('both delivered', () => byOld.ids().length === 1 && byNew.ids().length === 1)
  t.ok(byOld.received[0]!.verdict.ok && byNew.received[0]!.verdict.ok, 'a receiver holding either secret verifies')
})

t.test('an endpoint that does not answer within webhooks.requestTimeoutMs: the attempt is cut, logged as such, and tried again 5 s later', async t => {
  const store = await open(t)
  await addCompany(store)
  const clock = new ManualClock(new Date(T0))
  let secret = ''
  const r = await startReceiver(t, { secret: () => secret, answer: () => undefined, nowSeconds: () => Math.floor(clock.now().getTime() / 1000) })
  const hook = await addEndpoint(store, r.url)
  secret = hook.secret
  const hooks = openWebhooks(store)
  const before = hooks.stateOf(hook.id).cursor
  deliver(t, store, clock, { requestTimeoutMs: 300 })
  await emit(store, 1)
  await until('the attempt cut short', () => hooks.log(hook.id).length === 1)
  const [entry] = hooks.log(hook.id)
  t.equal(entry!.error, 'no answer within 300 ms (webhooks.requestTimeoutMs)')
  t.equal(entry!.status, undefined, 'no status: nothing was answered')
  t.equal(entry!.nextTryMs, T0 + 5000)
  t.equal(hooks.stateOf(hook.id).cursor, before, 'the event is still to deliver')
})

t.test('an answer other than 2xx is tried again after 5 s, then 10 s, until it is taken', async t => {
  const store = await open(t)
  await addCompany(store)
  const clock = new ManualClock(new Date(T0))
  let secret = ''
  const r = await startReceiver(t, { secret: () => secret, answer: n => n < 2 ? 500 : 200, nowSeconds: () => Math.floor(clock.now().getTime() / 1000) })
  const hook = await addEndpoint(store, r.url)
  secret = hook.secret
  const { deliverer } = deliver(t, store, clock)
  await emit(store, 1)
  const hooks = openWebhooks(store)
  await until('first attempt', () => hooks.log(hook.id).length === 1)
  t.same(hooks.log(hook.id)[0], { atMs: T0, eventId: r.received[0]!.id, status: 500, latencyMs: hooks.log(hook.id)[0]!.latencyMs, nextTryMs: T0 + 5000 })
  clock.advance(4999)
  deliverer.wake()
  clock.advance(1)
  deliverer.wake()
  await until('second attempt', () => hooks.log(hook.id).length === 2)
  t.equal(hooks.log(hook.id)[0]!.nextTryMs, T0 + 5000 + 10_000, 'the wait doubles')
  clock.advance(10_000)
  deliverer.wake()
  await until('delivered', () => hooks.stateOf(hook.id).cursor === openEvents(store).lastSeq('acme'))
  t.same(r.received.map(x => x.id), [1, 2, 3].map(() => r.received[0]!.id), 'the same event, three times, never a later one before it')
  t.equal(hooks.stateOf(hook.id).retry, undefined)
})

t.test('after 24 h of failures the endpoint is failing: audited, its cursor kept, no more attempts', async t => {
  const store = await open(t)
  await addCompany(store)
  const clock = new ManualClock(new Date(T0))
  const r = await startReceiver(t, { secret: () => [], answer: () => 503 })
  const hook = await addEndpoint(store, r.url)
  const { deliverer } = deliver(t, store, clock)
  await emit(store, 2)
  const hooks = openWebhooks(store)
  for (let attempts = 1; !hooks.get(hook.id)!.failingSince; attempts++) {
    await until(`attempt ${attempts}`, () => hooks.log(hook.id).length >= Math.min(attempts, 100) || !!hooks.get(hook.id)!.failingSince)
    const next = hooks.stateOf(hook.id).retry?.nextMs
    if (next === undefined) break
    clock.set(new Date(next))
    deliverer.wake()
  }
  const log = hooks.log(hook.id).reverse()
  const waits = log.slice(1).map((l, i) => l.atMs - log[i]!.atMs)
  t.same(waits.slice(0, 4), [5000, 10_000, 20_000, 40_000], 'from 5 s, doubling')
  t.equal(Math.max(...waits), MAX_RETRY_MS, 'up to 1 h')
  t.ok(log.at(-1)!.atMs - T0 >= RETRY_FOR_MS && log.at(-2)!.atMs - T0 < RETRY_FOR_MS, 'for 24 h')
  t.equal(log.at(-1)!.nextTryMs, undefined, 'the last attempt has no next')
  t.equal(hooks.stateOf(hook.id).cursor, openEvents(store).lastSeq('acme') - 2, 'the cursor stays before the event')
  t.same(openAudit(store).list({ action: 'webhook.failing' }).map(a => [a.subject, a.details?.companyId]), [[hook.id, 'acme']])
  const seen = r.received.length
  clock.advance(MAX_RETRY_MS)
  deliverer.wake()
  await emit(store, 1)
  await new Promise(resolve => setTimeout(resolve, 100))
  t.equal(r.received.length, seen, 'a failing endpoint is called no more')
  t.ok(new Set(r.received.map(x => x.id)).size === 1, 'only the first event was ever tried')
})

t.test('events removed by retention before their delivery are logged as such, and delivery goes on after them', async t => {
  const store = await open(t)
  await addCompany(store)
  let secret = ''
  const r = await startReceiver(t, { secret: () => secret })
  const hook = await addEndpoint(store, r.url)
  secret = hook.secret
  await emit(store, 3)
  const pruned = openEvents(store).lastSeq('acme')
  await openEvents(store, { retentionDays: 1 }).prune(T0 + 2 * 86_400_000)
  deliver(t, store, systemClock)
  await emit(store, 1, 'realise.modifie', 'acme', T0 + 2 * 86_400_000)
  await until('the next one delivered', () => r.ids().length === 1)
  t.equal(Number(r.ids()[0]), pruned + 1)
  const hooks = openWebhooks(store)
  t.match(hooks.log(hook.id).at(-1), { eventId: '', error: /events up to 0+\d+ were removed \(events\.retentionDays\) before delivery/ })
})

t.test('nothing is sent while the company is suspended; what waited goes once it resumes', async t => {
  const store = await open(t)
  await addCompany(store)
  let secret = ''
  const r = await startReceiver(t, { secret: () => secret })
  const hook = await addEndpoint(store, r.url)
  secret = hook.secret
  const companies = openCompanies(store, { now: () => T0 })
  await companies.update('acme', c => ({ ...c, status: 'suspended' }))
  const { deliverer } = deliver(t, store, systemClock)
  await emit(store, 2)
  await new Promise(resolve => setTimeout(resolve, 50))
  t.equal(r.received.length, 0)
  await companies.update('acme', c => ({ ...c, status: 'active' }))
  deliverer.wake()
  await until('what waited delivered', () => r.ids().length >= 2)
  t.equal(openWebhooks(store).stateOf(hook.id).retry, undefined)
})

t.test('an endpoint that never answers delays no other', async t => {
  const store = await open(t)
  await addCompany(store)
  const stuck = await startReceiver(t, { secret: () => [], answer: () => undefined })
  let secret = ''
  const fine = await startReceiver(t, { secret: () => secret })
  await addEndpoint(store, stuck.url)
  secret = (await addEndpoint(store, fine.url)).secret
  deliver(t, store, systemClock, { requestTimeoutMs: 60_000 })
  for (let i = 0; i < 3; i++) await emit(store, 1)
  await until('the other has every event', () => fine.ids().length === 3)
  t.equal(stuck.received.length, 1, 'the stuck one still waits on its first')
})

t.test('a loopback endpoint is refused without webhooks.allowPrivateNetworks: nothing is sent', async t => {
  const store = await open(t)
  await addCompany(store)
  const r = await startReceiver(t, { secret: () => [] })
  const hook = await addEndpoint(store, r.url)
  deliver(t, store, systemClock, { allowPrivateNetworks: false })
  await emit(store, 1)
  const hooks = openWebhooks(store)
  await until('an attempt', () => hooks.log(hook.id).length === 1)
  t.match(hooks.log(hook.id)[0], { status: undefined, error: /localhost resolves to (127\.0\.0\.1|::1), a loopback address.*webhooks\.allowPrivateNetworks/, nextTryMs: Number })
  t.equal(r.received.length, 0)
})

/** An endpoint whose lease a killed instance left, running until T0 + 60 s; the receiver on `clock`. */
async function leftLeased (t: Tap, store: Store) {
  await addCompany(store)
  const clock = new ManualClock(new Date(T0))
  let secret = ''
  const r = await startReceiver(t, { secret: () => secret, nowSeconds: () => Math.floor(clock.now().getTime() / 1000) })
  const hook = await addEndpoint(store, r.url)
  secret = hook.secret
  const hooks = openWebhooks(store)
  await store.writeDurable(() => hooks.claimSync(hook.id, 'killed', T0, T0 + 60_000))
  return { clock, r, hook, hooks }
}

t.test('postgres: an endpoint another instance holds (one killed mid-delivery) is taken over once its lease lapses', async t => {
  const store = await open(t, storesOf(t, 'postgres'))
  const { clock, r, hook, hooks } = await leftLeased(t, store)
  const { deliverer } = deliver(t, store, clock)
  await emit(store, 2)
  clock.advance(59_999)
  deliverer.wake()
  await new Promise(resolve => setTimeout(resolve, 50))
  t.equal(r.received.length, 0, 'nothing while its lease runs')
  clock.advance(1)
  deliverer.wake()
  await until('both delivered', () => r.ids().length === 2)
  t.equal(hooks.leaseOf(hook.id)?.owner, deliverer.owner)
})

t.test('lmdb: a lease a killed predecessor left (one service per folder) is taken at once, not a lease later', async t => {
  const store = await open(t)
  const { clock, r, hook, hooks } = await leftLeased(t, store)
  await emit(store, 2)
  const { deliverer } = deliver(t, store, clock)
  await until('both delivered with the clock still', () => r.ids().length === 2)
  t.equal(hooks.leaseOf(hook.id)?.owner, deliverer.owner)
})

t.test('postgres: two instances deliver each event once, and one goes on when the other closes', async t => {
  const { a, b } = await twoStores(t, storesOf(t, 'postgres'))
  await addCompany(a)
  let secret = ''
  const r = await startReceiver(t, { secret: () => secret })
  const hook = await addEndpoint(a, r.url)
  secret = hook.secret
  const rigs = [deliver(t, a, systemClock), deliver(t, b, systemClock)]
  const n = 20
  for (let i = 0; i < n; i++) await emit(i % 2 ? b : a, 1)
  await until('every event delivered', () => r.ids().length >= n, { ms: 30_000 })
  const counts = new Map<string, number>()
  for (const x of r.received) counts.set(x.id, (counts.get(x.id) ?? 0) + 1)
  t.same([...counts.values()], Array(n).fill(1), 'each event once, whichever instance wrote it')
  t.same(r.ids(), [...r.ids()].sort(), 'in id order')
  // The instance holding the endpoint closes: the other takes it over at once (its lease released).
  const lease = await eventually(() => openWebhooks(a).leaseOf(hook.id), l => l !== undefined)
  const gone = rigs.find(x => x.deliverer.owner === lease!.owner)!
  const left = rigs.find(x => x !== gone)!
  t.ok(gone, 'one of the two holds the endpoint')
  await gone.deliverer.close()
  await emit(left.store, 3)
  await until('the three after delivered', () => r.ids().length >= n + 3, { ms: 30_000 })
  t.equal(new Set(r.ids()).size, r.ids().length, 'still once each')
  await left.deliverer.close()   // before its store, which then ends equal to its database
})
