import t from 'tap'
import { ownCompany, visibleSites } from '../../src/console/perimeter.ts'
import { simulatedSites } from '../../src/host/simulated-sites.ts'
import { seedStore } from '../helpers/seed.ts'
import { admin, member } from '../helpers/console-app.ts'

const sites = simulatedSites(4)
const ids = (list: readonly { site_id: string }[]) => list.map(s => s.site_id)

t.test('an admin sees every site the solver manages; a member its perimeter only', async t => {
  const s = seedStore(t)
  await s.addCompany('acme', [sites[1]!.site_id, sites[3]!.site_id, 'PRM99999999999999'])
  await s.addCompany('all-co', 'all')
  await s.addCompany('gone', 'all', 'suspended')
  const deps = { companies: s.companies, sites: async () => sites }
  t.same(ids(await visibleSites(admin, deps)), ids(sites))
  t.same(ids(await visibleSites(member('acme'), deps)), [sites[1]!.site_id, sites[3]!.site_id], 'a perimeter site the solver does not manage is not offered')
  t.same(ids(await visibleSites(member('all-co'), deps)), ids(sites))
  t.same(await visibleSites(member('gone'), deps), [], 'a suspended company sees nothing')
  t.same(await visibleSites(member('nobody'), deps), [], 'an unknown company sees nothing')
  t.same(await visibleSites({ ...member('x'), companyId: null }, deps), [])
})

t.test('a member is limited to its company; an admin to none', async t => {
  t.equal(ownCompany(member('acme')), 'acme')
  t.equal(ownCompany(admin), undefined)
  t.not(ownCompany({ ...member('x'), companyId: null }), undefined, 'a member without a company matches no company')
})
