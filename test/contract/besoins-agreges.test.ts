import t from 'tap'
import { serializeBesoinsAgreges, type BesoinsAgreges } from '../../src/contract/besoins-agreges.ts'
import { buildBesoins, NeedsShapeError, withEmittedAt } from '../../src/publish/build-besoins.ts'
import { coverageOf } from '../../src/contract/paris-day.ts'

const SITE = { site_id: 'PRM12345678901234', site_name: 'Dépôt Nord' }

t.test('the document bytes follow the contract field order, whatever the object order', async t => {
  // Keys deliberately given in reverse order: the serializer must not follow the object.
  const doc = {
    sites: [{
      puissance_disponible: [{ p_max_kw: 150.5, fin_utc: '2026-11-21T23:15:00Z', debut_utc: '2026-11-21T23:00:00Z' }],
      jalons_besoin: [{ 'puissance_kW': 22, valeur_kwh: 44, deadline_utc: '2026-11-22T05:00:00Z', debut_utc: '2026-11-22T03:00:00Z' }],
      site_name: 'Dépôt Nord',
      site_id: 'PRM12345678901234',
    }],
    slot_duration_secs: 900,
    coverage_end_utc: '2026-11-22T23:00:00Z',
    coverage_start_utc: '2026-11-21T23:00:00Z',
    target_date: '2026-11-22',
    emitted_at: '2026-11-21T07:00:00Z',
    emitted_by: 'epx',
    type: 'besoins_agreges',
    schema_version: 'v0.3',
  } as unknown as BesoinsAgreges
  t.equal(serializeBesoinsAgreges(doc),
    '{"schema_version":"v0.3","type":"besoins_agreges","emitted_by":"epx","emitted_at":"2026-11-21T07:00:00Z",' +
    '"target_date":"2026-11-22","coverage_start_utc":"2026-11-21T23:00:00Z","coverage_end_utc":"2026-11-22T23:00:00Z",' +
    '"slot_duration_secs":900,"sites":[{"site_id":"PRM12345678901234","site_name":"Dépôt Nord",' +
    '"jalons_besoin":[{"debut_utc":"2026-11-22T03:00:00Z","deadline_utc":"2026-11-22T05:00:00Z","valeur_kwh":44,"puissance_kW":22}],' +
    '"puissance_disponible":[{"debut_utc":"2026-11-21T23:00:00Z","fin_utc":"2026-11-21T23:15:00Z","p_max_kw":150.5}]}]}')
})

t.test('fields outside the contract never reach the wire', async t => {
  const draft = buildBesoins({ site: SITE, needs: { milestones: [], availablePowerKw: new Array(96).fill(10) }, coverage: coverageOf('2026-11-22'), emittedBy: 'epx' })
  const doc = { ...withEmittedAt(draft, '2026-11-21T07:00:00Z'), secret: 'x' } as BesoinsAgreges
  t.notMatch(serializeBesoinsAgreges(doc), /secret/)
})

t.test('a document built from host needs carries the constants, the coverage and the host values', async t => {
  const draft = buildBesoins({
    site: SITE,
    needs: {
      milestones: [{ startUtc: '2026-11-22T03:00:00.000Z', deadlineUtc: '2026-11-22T05:00:00Z', energyKwh: 44.5, powerKw: 22.25 }],
      availablePowerKw: Array.from({ length: 96 }, (_, i) => i),
    },
    coverage: coverageOf('2026-11-22'),
    emittedBy: 'solver-operator',
  })
  const doc = JSON.parse(serializeBesoinsAgreges(withEmittedAt(draft, '2026-11-21T07:00:00.250Z')))
  t.equal(doc.schema_version, 'v0.3')
  t.equal(doc.type, 'besoins_agreges')
  t.equal(doc.emitted_by, 'solver-operator')
  t.equal(doc.emitted_at, '2026-11-21T07:00:00.250Z')
  t.equal(doc.slot_duration_secs, 900)
  t.same(doc.sites[0].jalons_besoin, [{ debut_utc: '2026-11-22T03:00:00Z', deadline_utc: '2026-11-22T05:00:00Z', valeur_kwh: 44.5, puissance_kW: 22.25 }],
    'instants normalised to the canonical UTC spelling')
  t.same(doc.sites[0].puissance_disponible[95], { debut_utc: '2026-11-22T22:45:00Z', fin_utc: '2026-11-22T23:00:00Z', p_max_kw: 95 })
})

t.test('needs that do not fit the day are refused for that site', async t => {
  const cov = coverageOf('2027-03-28')
  const build = (needs: object) => () => buildBesoins({ site: SITE, needs: needs as never, coverage: cov, emittedBy: 'epx' })
  t.throws(build({ milestones: [], availablePowerKw: new Array(96).fill(1) }), NeedsShapeError, '96 slots on a 92-slot day')
  t.throws(build({ milestones: [], availablePowerKw: [...new Array(91).fill(1), Number.NaN] }), NeedsShapeError)
  t.throws(build({ milestones: [{ startUtc: '2027-03-28T03:00:00+01:00', deadlineUtc: '2027-03-28T05:00:00Z', energyKwh: 1, powerKw: 1 }], availablePowerKw: new Array(92).fill(1) }), NeedsShapeError)
})
