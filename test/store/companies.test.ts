import t from 'tap'
import { openCompanies, perimeterOverlaps, pinsOf, type CompanyRecord } from '../../src/store/companies.ts'
import { startEpx } from '../helpers/epx.ts'
import { openGeneration } from '../../src/store/generation.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

const ACME: CompanyRecord = { id: 'acme', name: 'ACME', status: 'active', certSubject: 'CN=acme,O=ACME', perimeter: 'all', createdAt: '2026-11-01T00:00:00Z' }
const A = 'AA:'.repeat(31) + 'AA'
const B = 'BB:'.repeat(31) + 'BB'

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)

  t.test('a pin change moves the store generation, so open connections re-check their certificate', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const companies = openCompanies(store)
    const generation = openGeneration(store)
    await companies.add(ACME)
    const before = generation.read()
    await companies.setPins('acme', pins => [...pins, A])
    t.ok(generation.read() > before, 'pinning bumps it')
    const pinned = generation.read()
    await companies.setPins('acme', pins => pins.filter(p => p !== A))
    t.ok(generation.read() > pinned, 'unpinning bumps it')
  })

  t.test('several pins are kept in order; a record without pins has none', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const companies = openCompanies(store)
    await companies.add(ACME)
    t.same(pinsOf(companies.get('acme')!), [], 'a company added without pins has none')
    await companies.setPins('acme', () => [A, B])
    t.same(companies.get('acme')!.certPins, [A, B])
    await t.rejects(companies.setPins('ghost', () => [A]), { code: 'EPX_NOT_FOUND' })
  })

  // DECISIONS.md "Authentication and tenancy": one BSP per site.
  const company = (id: string, perimeter: CompanyRecord['perimeter'], status: CompanyRecord['status'] = 'active'): CompanyRecord =>
    ({ id, name: id, status, certSubject: `CN=${id},O=${id}`, perimeter, createdAt: '2026-11-01T00:00:00Z' })
  const P1 = 'PRM00000000000001'
  const P2 = 'PRM00000000000002'

  t.test('one BSP per site: an active perimeter may not share a site with another active one ("all" shares every site)', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const companies = openCompanies(store)
    await companies.add(company('a', [P1]))
    await t.rejects(companies.add(company('b', [P2, P1])), { code: 'EPX_CONFLICT', details: { company: 'a', shared: P1 }, message: /company b would share site\(s\) PRM00000000000001 with active company a's/ })
    await t.rejects(companies.add(company('c', 'all')), { code: 'EPX_CONFLICT', details: { company: 'a', shared: 'all' } })
    await companies.add(company('d', [P2]))
    await companies.add(company('e', 'all', 'suspended'))
    t.same(companies.list().map(c => c.id), ['a', 'd', 'e'], 'a suspended company may hold any perimeter')
    await t.rejects(companies.update('e', c => ({ ...c, status: 'active' })), { code: 'EPX_CONFLICT' }, 'its resume is checked')
    await t.rejects(companies.update('d', c => ({ ...c, perimeter: [P1, P2] })), { code: 'EPX_CONFLICT', details: { company: 'a' } }, 'a perimeter change is checked')
    t.same(companies.get('d')!.perimeter, [P2], 'and changes nothing when refused')
    await companies.update('a', c => ({ ...c, status: 'suspended' }))
    await companies.update('d', c => ({ ...c, perimeter: [P1, P2] }))
    t.same(companies.get('d')!.perimeter, [P1, P2], 'a suspended company\'s sites are free')
  })

  t.test('one BSP per site holds against two writers at once: one of two overlapping adds lands', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const companies = openCompanies(store)
    const results = await Promise.allSettled([companies.add(company('x', [P1])), companies.add(company('y', [P1]))])
    t.same(results.map(r => r.status).sort(), ['fulfilled', 'rejected'])
    t.equal(companies.list().length, 1)
  })

  t.test('overlaps stored before the rule: listed, reported once at activation, and a suspension or a pin still works', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const asStored = openCompanies(store, { onePerSite: false })
    await asStored.add(company('a', 'all'))
    await asStored.add(company('b', [P1]))
    await asStored.add(company('c', [P2]))
    t.same(perimeterOverlaps(asStored.list()).map(o => [o.a.id, o.b.id, o.shared]), [['a', 'b', 'all'], ['a', 'c', 'all']])
    const companies = openCompanies(store)
    await companies.setPins('b', () => [A])
    await companies.update('a', c => ({ ...c, status: 'suspended' }))
    t.same(perimeterOverlaps(companies.list()), [])
  })
})

t.test('at activation, overlaps already stored are one warn line', async t => {
  const epx = await startEpx(t)
  await epx.addCompany('acme')
  await epx.addCompany('beta')
  await epx.restart()
  const warns = epx.logs().filter(l => l.level === 40 && /active companies share sites/.test(l.msg))
  t.equal(warns.length, 1)
  t.match(warns[0], { msg: /\(acme and beta\): the last programme either sends takes the site from the other's, whatever their emitted_at; narrow one perimeter/, overlaps: [{ companies: ['acme', 'beta'], shared: 'all' }] })
})
