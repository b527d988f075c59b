import t, { type Test as Tap } from 'tap'
import type { Store } from '../../src/store/open-store.ts'
import { LOG_KEEP, openWebhooks, secretsInForce, type WebhookEndpoint } from '../../src/store/webhooks.ts'
import { openEvents } from '../../src/store/events.ts'
import { storeKinds, storesOf, twoStores } from '../helpers/store-kinds.ts'

// DECISIONS.md "Events for BSPs": an endpoint keeps a cursor into its company's events, a
// bounded log of attempts, and a lease that lets one instance at a time deliver to it.

const T0 = Date.parse('2026-11-21T08:00:00Z')
const endpoint = (id: string, companyId = 'acme'): WebhookEndpoint => ({
  id, companyId, url: `https://hooks.example/${id}`, types: ['instruction.statut'], secrets: [{ secret: 'whsec_AAAA' }], createdAt: new Date(T0).toISOString(),
})

for (const kind of storeKinds) t.test(kind, async t => {
  const stores = storesOf(t, kind)
  async function open (t: Tap, dir = t.testdir()): Promise<Store> {
    const store = await stores.openStore(dir)
    t.teardown(() => store.close())
    return store
  }

  t.test('an endpoint starts at the cursor it is given, lists by company, and its removal leaves nothing of it', async t => {
    const store = await open(t)
    const hooks = openWebhooks(store)
    await store.writeDurable(() => { hooks.addSync(endpoint('wh_1'), 7); hooks.addSync(endpoint('wh_2', 'bolt'), 0) })
    t.equal(hooks.stateOf('wh_1').cursor, 7)
    t.same(hooks.list('acme').map(e => e.id), ['wh_1'])
    t.same(hooks.list().map(e => e.id), ['wh_1', 'wh_2'])
    await store.writeDurable(() => hooks.claimSync('wh_1', 'i1', T0, T0 + 1000))
    await store.writeDurable(() => hooks.settleSync('wh_1', 'i1', T0, { fromCursor: 7, cursor: 8, leaseUntilMs: T0 + 1000, log: { atMs: T0, eventId: '8', status: 200, latencyMs: 3 } }))
    t.equal(await store.writeDurable(() => hooks.removeSync('wh_1')), true)
    t.equal(await store.writeDurable(() => hooks.removeSync('wh_1')), false, 'a second removal finds none')
    t.equal(hooks.get('wh_1'), undefined)
    t.same([hooks.stateOf('wh_1').cursor, hooks.leaseOf('wh_1'), hooks.log('wh_1')], [0, undefined, []])
  })

  t.test('what waits (epx_webhook_oldest_undelivered_seconds): per company, the oldest event of a type wanted past a cursor, of the endpoints not failing', async t => {
    const store = await open(t)
    const hooks = openWebhooks(store)
    const events = openEvents(store)
    const due = (companyId: string, cursor: number, types: readonly string[]) => events.firstDueMs(companyId, cursor, types as never, 100)
    await store.writeDurable(() => { hooks.addSync(endpoint('wh_1'), 0); hooks.addSync(endpoint('wh_2', 'bolt'), 0) })
    t.same([...hooks.oldestUndelivered(due)], [['acme', undefined], ['bolt', undefined]], 'nothing written: nothing waits')
    await store.writeDurable(() => events.appendSync([{ companyId: 'acme', type: 'perimetre.modifie', fields: '"n":1' }], T0))
    await store.writeDurable(() => events.appendSync([{ companyId: 'acme', type: 'instruction.statut', fields: '"n":2' }], T0 + 1000))
    await store.writeDurable(() => events.appendSync([{ companyId: 'acme', type: 'instruction.statut', fields: '"n":3' }], T0 + 2000))
    t.same(hooks.oldestUndelivered(due).get('acme'), T0 + 1000, 'the first of a type it wants, past one it does not')
    t.equal(events.firstDueMs('acme', 0, ['realise.modifie'], 2), T0, 'none wanted within the events read: the first one read')
    t.equal(events.firstDueMs('acme', 3, ['instruction.statut'], 100), undefined, 'none past the last')
    await store.writeDurable(() => hooks.addSync({ ...endpoint('wh_3'), types: ['perimetre.modifie'], failingSince: new Date(T0).toISOString() }, 0))
    await store.writeDurable(() => hooks.addSync(endpoint('wh_4'), 2))
    t.equal(hooks.oldestUndelivered(due).get('acme'), T0 + 1000, 'the oldest over its endpoints; a failing one, owed an older event, is left out')
  })

  t.test('a rotation signs with the new secret and the old one until the overlap ends', async t => {
    const store = await open(t)
    const hooks = openWebhooks(store)
    await store.writeDurable(() => hooks.addSync(endpoint('wh_1'), 0))
    const e = await store.writeDurable(() => hooks.rotateSync('wh_1', 'whsec_BBBB', T0, 86_400_000))
    t.same(secretsInForce(e!, T0 + 86_399_999), ['whsec_BBBB', 'whsec_AAAA'])
    t.same(secretsInForce(e!, T0 + 86_400_000), ['whsec_BBBB'])
    const again = await store.writeDurable(() => hooks.rotateSync('wh_1', 'whsec_CCCC', T0 + 1000, 86_400_000))
    t.same(again!.secrets.map(s => s.secret), ['whsec_CCCC', 'whsec_BBBB'], 'only the one in force goes on beside the new one')
  })

  t.test('a lease is one owner\'s until it lapses; an attempt settled by an owner that lost it writes nothing', async t => {
    const store = await open(t)
    const hooks = openWebhooks(store)
    await store.writeDurable(() => hooks.addSync(endpoint('wh_1'), 0))
    t.equal(await store.writeDurable(() => hooks.claimSync('wh_1', 'a', T0, T0 + 30_000)), true)
    t.equal(await store.writeDurable(() => hooks.claimSync('wh_1', 'b', T0 + 29_999, T0 + 60_000)), false, 'b waits while a\'s lease runs')
    t.equal(await store.writeDurable(() => hooks.claimSync('wh_1', 'b', T0 + 30_000, T0 + 60_000)), true, 'and takes it once it lapses')
    const late = await store.writeDurable(() => hooks.settleSync('wh_1', 'a', T0 + 30_001, { fromCursor: 0, cursor: 1, leaseUntilMs: T0 + 90_000 }))
    t.equal(late, false)
    t.same([hooks.stateOf('wh_1').cursor, hooks.leaseOf('wh_1')], [0, { owner: 'b', untilMs: T0 + 60_000 }])
    await store.writeDurable(() => hooks.releaseSync('b'))
    t.equal(hooks.leaseOf('wh_1'), undefined, 'released on close: another goes on at once')
  })

  t.test('retries out mark the endpoint failing; a rewind drops the mark and the retry; an attempt begun before the rewind moves no cursor', async t => {
    const store = await open(t)
    const hooks = openWebhooks(store)
    await store.writeDurable(() => { hooks.addSync(endpoint('wh_1'), 4); hooks.claimSync('wh_1', 'a', T0, T0 + 1e9) })
    const retry = { seq: 5, attempts: 1, firstMs: T0, nextMs: T0 + 5000 }
    await store.writeDurable(() => hooks.settleSync('wh_1', 'a', T0, { fromCursor: 4, retry, leaseUntilMs: T0 + 1e9, log: { atMs: T0, eventId: '5', status: 500, latencyMs: 1, nextTryMs: T0 + 5000 } }))
    t.same(hooks.stateOf('wh_1').retry, retry)
    await store.writeDurable(() => hooks.settleSync('wh_1', 'a', T0 + 1, { fromCursor: 4, failingSinceMs: T0 + 1, leaseUntilMs: T0 + 1e9 }))
    t.equal(hooks.get('wh_1')!.failingSince, new Date(T0 + 1).toISOString())
    t.equal(hooks.stateOf('wh_1').retry, undefined)
    await store.writeDurable(() => hooks.rewindSync('wh_1', 2))
    t.same([hooks.get('wh_1')!.failingSince, hooks.stateOf('wh_1').cursor], [undefined, 2])
    await store.writeDurable(() => hooks.settleSync('wh_1', 'a', T0 + 2, { fromCursor: 4, cursor: 5, leaseUntilMs: T0 + 1e9, log: { atMs: T0 + 2, eventId: '5', status: 204, latencyMs: 1 } }))
    t.equal(hooks.stateOf('wh_1').cursor, 2, 'the rewound cursor stands')
    t.equal(hooks.log('wh_1')[0]!.status, 204, 'the attempt is logged all the same')
  })

  t.test(`the log keeps the last ${LOG_KEEP} attempts, newest first`, async t => {
    const store = await open(t)
    const hooks = openWebhooks(store)
    await store.writeDurable(() => { hooks.addSync(endpoint('wh_1'), 0); hooks.claimSync('wh_1', 'a', T0, T0 + 1e9) })
    const n = LOG_KEEP + 20
    await store.writeDurable(() => {
      for (let i = 1; i <= n; i++) hooks.settleSync('wh_1', 'a', T0, { fromCursor: i - 1, cursor: i, leaseUntilMs: T0 + 1e9, log: { atMs: T0 + i, eventId: String(i), status: 200, latencyMs: 1 } })
    })
    const log = hooks.log('wh_1')
    t.equal(log.length, LOG_KEEP)
    t.same([log[0]!.eventId, log.at(-1)!.eventId], [String(n), String(n - LOG_KEEP + 1)])
    t.same(hooks.log('wh_1', 3).map(e => e.eventId), [n, n - 1, n - 2].map(String))
  })

  if (kind === 'postgres') {
    t.test('two instances on one database: one lease between them, whichever claims first', async t => {
      const { a, b } = await twoStores(t, stores)
      await a.writeDurable(() => openWebhooks(a).addSync(endpoint('wh_1'), 0))
      const claims = await Promise.all([a, b, a, b].map((s, i) => s.writeDurable(() => openWebhooks(s).claimSync('wh_1', s === a ? 'a' : 'b', T0 + i, T0 + 60_000))))
      const winner = claims[0] ? 'a' : 'b'
      t.same(claims, winner === 'a' ? [true, false, true, false] : [false, true, false, true], 'the first claim holds it; the other instance is refused')
    })
  }
})
