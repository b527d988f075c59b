import t from 'tap'
import { companyIdProblem, readCertSubject, readPerimeter } from '../../src/auth/company-rules.ts'

t.test('company ids', async t => {
  t.equal(companyIdProblem('acme-bsp'), undefined)
  for (const bad of ['A', 'ACME', '-acme', 'a_b', 'a'.repeat(64)]) t.match(companyIdProblem(bad), /invalid company id/, bad)
})

t.test('perimeter text: "all" (or nothing), or PRM ids deduplicated in order; never both', async t => {
  t.same(readPerimeter([]), { perimeter: 'all' })
  t.same(readPerimeter(['all']), { perimeter: 'all' })
  t.same(readPerimeter(['PRM00000000000002, PRM00000000000001', 'PRM00000000000002']), { perimeter: ['PRM00000000000002', 'PRM00000000000001'] })
  t.match(readPerimeter(['all,PRM00000000000001']), { problem: /either "all" or a list/ })
  t.match(readPerimeter(['  ']), { problem: /needs "all" or at least one/ })
  t.match(readPerimeter(['PRM1, x']), { problem: "invalid site id(s) 'PRM1', 'x'" })
})

t.test('certificate subject: given or CN=<id>,O=<name>, canonical; a malformed one says why', async t => {
  t.same(readCertSubject(undefined, 'acme', 'ACME'), { subject: 'CN=acme,O=ACME' })
  t.same(readCertSubject('O=ACME, CN=acme', 'acme', 'x'), readCertSubject('CN=acme,O=ACME', 'acme', 'x'), 'attribute order does not matter')
  t.match(readCertSubject('XX=1', 'acme', 'x'), { problem: /XX=1/ })
})
