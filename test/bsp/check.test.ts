import t from 'tap'
import { checkBesoinsAgreges, checkProgramme } from '../../src/bsp/check.ts'
import { programme } from '../helpers/programme.ts'

const doc = {
  schema_version: 'v0.3', type: 'besoins_agreges', emitted_by: 'epx', emitted_at: '2026-11-21T07:00:00.123Z',
  target_date: '2026-11-22', coverage_start_utc: '2026-11-21T23:00:00Z', coverage_end_utc: '2026-11-22T23:00:00Z', slot_duration_secs: 900,
  sites: [{ site_id: 'PRM30000000000001', site_name: 'Site 1', jalons_besoin: [], puissance_disponible: [{ debut_utc: '2026-11-21T23:00:00Z', fin_utc: '2026-11-21T23:15:00Z', p_max_kw: 40 }] }],
}

t.test('a received Besoins_Agreges is checked against the published v0.3 schema', async t => {
  t.same(checkBesoinsAgreges(doc), { ok: true, value: doc })
  const bad = structuredClone(doc) as any
  bad.emitted_at = '2026-11-21T08:00:00+01:00'
  bad.sites[0].puissance_disponible[0].p_max_kw = '40'
  bad.target_date = '2026-02-30'
  bad.extra = 1
  const r = checkBesoinsAgreges(bad)
  t.notOk(r.ok)
  t.same(Object.keys(!r.ok ? r.details : {}).sort(), ['', '/emitted_at', '/sites/0/puissance_disponible/0/p_max_kw', '/target_date'])
})

t.test('a programme is checked with the server\'s validator, perimeter aside', async t => {
  t.ok(checkProgramme(programme({ sites: ['PRM99999999999999'] })).ok, 'any site: only the server knows the perimeter')
  const r = checkProgramme(programme({ sites: 3 }), { maxSites: 2 })
  t.same(!r.ok && r.details, { '/sites': 'at most 2 sites per programme; split it into several programmes; got an array of 3' })
  const gap = programme({ slots: 3 })
  gap.sites[0]!.energie_programmee.splice(1, 1)
  t.ok(checkProgramme(gap).ok, 'gaps allowed by default')
  t.notOk(checkProgramme(gap, { requireContiguous: true }).ok, 'unless the service requires contiguous slots')
})

t.test('a slot above the server\'s sanity bound is found before sending: 100,000 kW by default, or the bound the service set', async t => {
  const huge = programme({ slots: 2, kwh: j => j === 1 ? 1e306 : 2.5 })
  const r = checkProgramme(huge)
  t.same(Object.keys(!r.ok ? r.details : {}), ['/sites/0/energie_programmee/1/energie_kwh'])
  t.match(!r.ok && r.details['/sites/0/energie_programmee/1/energie_kwh'], /sanity bound of 100000 kW per site \(inbound\.maxSiteKw\)/)
  const tenKw = programme({ slots: 2 })   // 2.5 kWh a quarter-hour
  t.ok(checkProgramme(tenKw).ok)
  t.ok(checkProgramme(tenKw, { maxSiteKw: 10 }).ok, 'at the bound')
  const r5 = checkProgramme(tenKw, { maxSiteKw: 5 })
  t.match(!r5.ok && r5.details, { '/sites/0/energie_programmee/0/energie_kwh': /bound of 5 kW/, '/sites/0/energie_programmee/1/energie_kwh': /bound of 5 kW/ })
})
