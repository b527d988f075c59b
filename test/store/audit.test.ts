import t from 'tap'
import { cliActor, openAudit } from '../../src/store/audit.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

const DAY = 86_400_000
const T0 = Date.parse('2026-11-21T12:00:00Z')

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)

  t.test('records are appended in time order and filtered by time, action (or prefix) and company', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const audit = openAudit(store)
    await audit.append({ actor: { kind: 'schedule' }, action: 'publication.run', subject: '2026-11-22', outcome: 'ok' }, T0 + 2000)
    await audit.append({ actor: { kind: 'company', companyId: 'acme', tokenId: 'tok_1' }, action: 'programme.accepted', subject: 'P1', outcome: 'ok' }, T0)
    await audit.append({ actor: cliActor(), action: 'token.revoked', subject: 'tok_1', outcome: 'ok', details: { companyId: 'acme' } }, T0 + 1000)
    await audit.append({ actor: cliActor(), action: 'company.suspended', subject: 'beta', outcome: 'ok' }, T0 + 3000)
    t.same(audit.list().map(r => r.subject), ['P1', 'tok_1', '2026-11-22', 'beta'], 'time order, not append order')
    t.same(audit.list({ action: 'token.' }).map(r => r.action), ['token.revoked'])
    t.same(audit.list({ action: 'token' }).map(r => r.action), [], 'a prefix ends with "."')
    t.same(audit.list({ companyId: 'acme' }).map(r => r.subject), ['P1', 'tok_1'], 'as actor, or named in the details')
    t.same(audit.list({ companyId: 'beta' }).map(r => r.subject), ['beta'], 'as subject')
    t.same(audit.list({ sinceMs: T0 + 1000, untilMs: T0 + 2000 }).map(r => r.subject), ['tok_1', '2026-11-22'], 'both bounds included')
    t.same(audit.list({ limit: 1 }).map(r => r.subject), ['P1'])
    t.equal(audit.list()[0]!.at, '2026-11-21T12:00:00.000Z')
  })

  t.test('each record has a key, unique even within a millisecond, that sorts as the records do', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const audit = openAudit(store)
    const other = openAudit(store)
    for (let i = 0; i < 12; i++) await (i % 2 ? other : audit).append({ actor: { kind: 'schedule' }, action: 'publication.run', subject: `d${i}`, outcome: 'ok' }, T0 + (i < 6 ? 0 : 10_000))
    const keyed = audit.keyed()
    const keys = keyed.map(k => k.key)
    t.equal(new Set(keys).size, 12, 'twelve records, two writers, two milliseconds: twelve keys')
    t.same([...keys].sort(), keys, 'the keys sort in the records\' order')
    t.same(keyed.map(k => k.record), audit.list(), 'the same records as list()')
    t.same(audit.keyed({ sinceMs: T0 + 1 }).map(k => k.record.subject).sort(), ['d10', 'd11', 'd6', 'd7', 'd8', 'd9'], 'filtered alike')
  })

  t.test('anything shaped like a token secret is masked before it is stored', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const audit = openAudit(store)
    const secret = 'epx_' + 'x'.repeat(43)
    await audit.append({ actor: cliActor(), action: 'token.created', subject: `a ${secret}`, outcome: 'ok', details: { nested: [{ text: secret }] } }, T0)
    const text = JSON.stringify(audit.list())
    t.notOk(text.includes(secret))
    t.match(text, /epx_\[redacted\]/)
  })

  t.test('retention removes records older than audit.retentionDays and keeps the rest', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const audit = openAudit(store, { retentionDays: 400 })
    await audit.append({ actor: { kind: 'host' }, action: 'publication.run', subject: 'old', outcome: 'ok' }, T0 - 401 * DAY)
    await audit.append({ actor: { kind: 'host' }, action: 'publication.run', subject: 'kept', outcome: 'ok' }, T0 - 399 * DAY)
    t.equal(await audit.prune(T0), 1)
    t.same(audit.list().map(r => r.subject), ['kept'])
  })

  t.test('a store that cannot write refuses the append (NO_STORE); record() never throws', async t => {
    const store = await openStore(t.testdir(), { faults: { unavailable: true } })
    t.teardown(() => { store.faults.unavailable = false; return store.close() })
    const audit = openAudit(store)
    await t.rejects(audit.append({ actor: { kind: 'host' }, action: 'publication.run', subject: 'x', outcome: 'ok' }, T0), { code: 'NO_STORE' })
    t.doesNotThrow(() => audit.record({ actor: { kind: 'host' }, action: 'publication.run', subject: 'x', outcome: 'ok' }, T0))
    t.throws(() => audit.list(), { code: 'NO_STORE' })
  })

  t.test('record() gathers the records of a burst into one write, and flush() writes what waits', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const audit = openAudit(store)
    let puts = 0
    const db = store.db('audit')
    const put = db.putSync.bind(db)
    db.putSync = ((...a: Parameters<typeof put>) => { puts++; return put(...a) }) as typeof db.putSync
    let writes = 0
    const writeDurable = store.writeDurable.bind(store)
    store.writeDurable = (fn => { writes++; return writeDurable(fn) }) as typeof store.writeDurable
    for (let i = 0; i < 8; i++) audit.record({ actor: { kind: 'company', companyId: 'acme' }, action: 'programme.accepted', subject: `P${i}`, outcome: 'ok' }, T0 + i)
    t.equal(audit.list().length, 0, 'not yet written: the POSTs were answered already')
    await audit.flush()
    t.equal(audit.list().length, 8)
    t.equal(writes, 1, 'one durable write for the burst')
    t.equal(puts, 8)
    await audit.flush()
    t.equal(writes, 1, 'nothing waiting: no write')
  })
})
