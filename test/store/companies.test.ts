import t from 'tap'
import { openStore } from '../../src/store/open-store.ts'
import { openCompanies, pinsOf, type CompanyRecord } from '../../src/store/companies.ts'
import { openGeneration } from '../../src/store/generation.ts'

const ACME: CompanyRecord = { id: 'acme', name: 'ACME', status: 'active', certSubject: 'CN=acme,O=ACME', perimeter: 'all', createdAt: '2026-11-01T00:00:00Z' }
const A = 'AA:'.repeat(31) + 'AA'
const B = 'BB:'.repeat(31) + 'BB'

t.test('a pin change moves the store generation, so open connections re-check their certificate', async t => {
  const store = openStore(t.testdir())
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
  const store = openStore(t.testdir())
  t.teardown(() => store.close())
  const companies = openCompanies(store)
  await companies.add(ACME)
  t.same(pinsOf(companies.get('acme')!), [], 'a company added without pins has none')
  await companies.setPins('acme', () => [A, B])
  t.same(companies.get('acme')!.certPins, [A, B])
  await t.rejects(companies.setPins('ghost', () => [A]), { code: 'EPX_NOT_FOUND' })
})

