import t from 'tap'
import { join } from 'node:path'
import { openQuotaUses } from '../../src/store/quota.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

// The storage quota's count (DECISIONS.md "Rate limits and quotas"): bytes and programmes
// per company and Paris day, charged inside a durable write, never past the limit, kept
// across a reopen, pruned by day; with PostgreSQL, two instances on one database charge
// one count.

const DAY = '2026-11-21'

for (const kind of storeKinds) t.test(kind, async t => {
  const stores = storesOf(t, kind)

  t.test('a charge adds up to the limit, exactly on it included; one past it adds nothing; the count survives a reopen', async t => {
    const dir = join(t.testdir(), 'store')
    let store = await stores.openStore(dir)
    let uses = openQuotaUses(store)
    t.same(uses.useOf('acme', DAY), { bytes: 0, programmes: 0 }, 'nothing yet')
    const charge = (bytes: number) => store.writeDurable(() => uses.charge('acme', DAY, bytes, 1000))
    t.same(await charge(600), { before: { bytes: 0, programmes: 0 }, added: true })
    t.same(await charge(400), { before: { bytes: 600, programmes: 1 }, added: true }, 'landing exactly on the limit')
    t.same(await charge(1), { before: { bytes: 1000, programmes: 2 }, added: false }, 'one byte more: refused')
    t.same(uses.useOf('acme', DAY), { bytes: 1000, programmes: 2 })
    t.same(uses.useOf('acme', '2026-11-22'), { bytes: 0, programmes: 0 }, 'another day counts afresh')
    t.same(uses.useOf('beta', DAY), { bytes: 0, programmes: 0 }, 'another company too')

    await t.rejects(store.writeDurable(() => { uses.charge('beta', DAY, 10, 1000); throw new Error('the save failed after the charge') }))
    t.same(uses.useOf('beta', DAY), { bytes: 0, programmes: 0 }, 'a charge is all or nothing with the write it rides')

    await store.close()
    store = await stores.openStore(dir)
    t.teardown(() => store.close())
    uses = openQuotaUses(store)
    t.same(uses.useOf('acme', DAY), { bytes: 1000, programmes: 2 }, 'reopened: the same count')
  })

  t.test('every company of a day, and days pruned before a date', async t => {
    const store = await stores.openStore(join(t.testdir(), 'store'))
    t.teardown(() => store.close())
    const uses = openQuotaUses(store)
    await store.writeDurable(() => {
      uses.charge('acme', '2026-11-20', 5, 100)
      uses.charge('acme', DAY, 7, 100)
      uses.charge('beta', DAY, 9, 100)
      uses.charge('acme', '2026-11-22', 11, 100)
    })
    t.same([...uses.usesOn(DAY)], [['acme', { bytes: 7, programmes: 1 }], ['beta', { bytes: 9, programmes: 1 }]])
    t.equal(await uses.prune(DAY), 1, 'the day before')
    t.same(uses.useOf('acme', '2026-11-20'), { bytes: 0, programmes: 0 })
    t.same(uses.useOf('acme', DAY), { bytes: 7, programmes: 1 }, 'the day itself is kept')
  })

  if (kind === 'postgres') {
    t.test('two instances on one database charge one count: together never past the limit', async t => {
      const dirA = join(t.testdir(), 'a')
      const a = await stores.openStore(dirA)
      t.teardown(() => a.close())
      const database = await stores.databaseOf(dirA)
      const b = await stores.openStore(join(t.testdir(), 'b'), { postgres: { pool: { ...stores.cluster().connection(database), max: 4 } } })
      t.teardown(() => b.close())
      const ua = openQuotaUses(a)
      const ub = openQuotaUses(b)
      // Each instance charges 100 bytes 30 times, at once, against a limit of 2,000: 20 fit.
      const charges = await Promise.all(Array.from({ length: 60 }, (_, i) => {
        const [store, uses] = i % 2 ? [a, ua] : [b, ub]
        return store.writeDurable(() => uses.charge('acme', DAY, 100, 2000).added)
      }))
      t.equal(charges.filter(Boolean).length, 20, 'twenty charges added, whichever instance made them')
      await b.writeDurable(() => {})   // b's replica is caught up by a write of its own
      t.same(ub.useOf('acme', DAY), { bytes: 2000, programmes: 20 })
      await a.writeDurable(() => {})
      t.same(ua.useOf('acme', DAY), { bytes: 2000, programmes: 20 }, 'each instance reads the one count')
    })
  }
})
