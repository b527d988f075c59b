import t, { type Test as Tap } from 'tap'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId, type ProgrammeOptions } from '../helpers/programme.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { eventually } from '../helpers/eventually.ts'

// DECISIONS.md "Reading outcomes": GET programme-soutirage?target_date=D[&site_id=S], an
// extension of the contract, through the front door (mTLS, a real token, LMDB).

const DAY = '2026-11-22'
const rev = (at: string) => `ProgrammeSoutirage-${DAY}-rev-${at}`

async function company (epx: TestEpx, id: string, perimeter: 'all' | string[]) {
  const { cert } = await epx.addCompany(id, { perimeter })
  const { secret } = await epx.addToken(id, ['inbound:programme-soutirage'])
  const send = (o: ProgrammeOptions = {}) => epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme(o) })
  const status = (query: Record<string, string>, headers: Record<string, string> = {}, method = 'GET') =>
    epx.request({ method, path: INBOUND_PATH, query, cert, token: secret, headers })
  return { cert, secret, send, status }
}

async function setup (t: Tap, inWorker = false) {
  const epx = await startEpx(t, { config: { api: { inWorker } } })
  return { epx, acme: await company(epx, 'acme', 'all') }
}

t.test('the status read follows a programme: queued, then applied with its cycle; 304 while nothing changed', async t => {
  for (const inWorker of [false, true]) {
    const { epx, acme } = await setup(t, inWorker)
    t.equal((await acme.send({ emittedAt: '2026-11-21T12:00:00Z', slots: 4 })).status, 202)
    const instructions = openInstructions(epx.store)
    await eventually(() => instructions.get(rev('20261121T120000Z'), siteId(1))!.state.status, s => s === 'queued')
    const first = await acme.status({ target_date: DAY })
    t.equal(first.status, 200, first.text)
    t.equal(first.headers['cache-control'], 'private, no-cache')
    t.match(first.headers.etag, /^W\/"[A-Za-z0-9_-]+"$/)
    t.same(first.json(), {
      target_date: DAY,
      count: 1,
      instructions: [{
        instruction_id: rev('20261121T120000Z'), site_id: siteId(1), emitted_at: '2026-11-21T12:00:00Z', received_at: '2026-11-21T12:30:00.000Z',
        periods_count: 4, status: 'queued', infeasible_slots: 0, in_force: [{ from: '2026-11-21T12:30:00Z' }],
      }],
    }, `queued (inWorker ${inWorker})`)

    const unchanged = await acme.status({ target_date: DAY }, { 'if-none-match': first.headers.etag! })
    t.equal(unchanged.status, 304)
    t.equal(unchanged.headers.etag, first.headers.etag)
    t.equal(unchanged.headers['cache-control'], 'private, no-cache')
    t.equal(unchanged.text, '')

    const cycle = epx.ref.runCycle()
    await eventually(() => instructions.get(rev('20261121T120000Z'), siteId(1))!.state.status, s => s === 'applied')
    const applied = await acme.status({ target_date: DAY }, { 'if-none-match': first.headers.etag! })
    t.equal(applied.status, 200, 'a status changed: the ETag no longer matches')
    t.not(applied.headers.etag, first.headers.etag)
    t.match(applied.json().instructions[0], { status: 'applied', applied_at: String, cycle: cycle.cycle, infeasible_slots: 0 })
    t.same(Object.keys(applied.json().instructions[0]), ['instruction_id', 'site_id', 'emitted_at', 'received_at', 'periods_count', 'status', 'applied_at', 'cycle', 'infeasible_slots', 'in_force'])

    const head = await acme.status({ target_date: DAY }, {}, 'HEAD')
    t.equal(head.status, 200)
    t.equal(head.headers.etag, applied.headers.etag)
    t.equal(head.text, '')
  }
})

t.test('newest first; a superseded instruction names the one in force', async t => {
  const { acme } = await setup(t)
  await acme.send({ emittedAt: '2026-11-21T12:00:00Z', sites: 2, slots: 1 })
  await acme.send({ emittedAt: '2026-11-21T11:00:00Z', slots: 1 })
  await acme.send({ emittedAt: '2026-11-21T12:10:00Z', sites: [siteId(2)], slots: 1 })
  const res = await acme.status({ target_date: DAY })
  t.same(res.json().instructions.map((i: any) => [i.instruction_id, i.site_id, i.status, i.superseded_by]), [
    [rev('20261121T121000Z'), siteId(2), 'queued', undefined],
    [rev('20261121T120000Z'), siteId(1), 'queued', undefined],
    [rev('20261121T120000Z'), siteId(2), 'superseded', rev('20261121T121000Z')],
    [rev('20261121T110000Z'), siteId(1), 'superseded', rev('20261121T120000Z')],
  ])
  t.same((await acme.status({ target_date: DAY, site_id: siteId(2) })).json().instructions.map((i: any) => i.instruction_id),
    [rev('20261121T121000Z'), rev('20261121T120000Z')], 'site_id narrows to one site')
  t.same((await acme.status({ target_date: '2026-11-23' })).json(), { target_date: '2026-11-23', count: 0, instructions: [] }, 'a day without programmes')
})

t.test('infeasible_slots counts the slots the feasibility check flagged', async t => {
  const { epx, acme } = await setup(t)
  await epx.handle.publish({ targetDate: DAY })
  await acme.send({ emittedAt: '2026-11-21T12:00:00Z', slots: 3, kwh: () => 20_000 })   // 80,000 kW: within the sanity bound, far above any simulated site's power
  const res = await acme.status({ target_date: DAY })
  t.equal(res.json().instructions[0].infeasible_slots, 3)
})

t.test('a company never sees another company\'s instructions, whatever the parameters', async t => {
  const { epx, acme } = await setup(t)
  // Perimeters that share sites: possible only with data from before one BSP per site
  // (the test helper writes companies as they are stored).
  const other = await company(epx, 'other', [siteId(1), siteId(2)])
  const narrow = await company(epx, 'narrow', [siteId(3)])
  await acme.send({ emittedAt: '2026-11-21T12:00:00Z', sites: 3, slots: 1 })
  // A minute later: the timeline orders one instant's receipts by emitted_at, as one company's are.
  epx.clock.set('2026-11-21T12:31:00Z')
  await other.send({ emittedAt: '2026-11-21T11:00:00Z', sites: 2, slots: 1 })
  await other.send({ emittedAt: '2026-11-21T12:05:00Z', slots: 1 })
  const acmeIds = [rev('20261121T120000Z')]
  const otherIds = [rev('20261121T110000Z'), rev('20261121T120500Z')]

  const queries: Array<Record<string, string>> = [{ target_date: DAY }, { target_date: '2026-11-21' }, { target_date: DAY, extra: 'x' }]
  for (const n of [1, 2, 3, 4]) queries.push({ target_date: DAY, site_id: siteId(n) })
  queries.push({ target_date: DAY, site_id: 'PRM99999999999999' })
  const viewers: Array<[string, typeof other, readonly string[], readonly string[]]> = [['other', other, otherIds, acmeIds], ['narrow', narrow, [], [...acmeIds, ...otherIds]]]
  for (const [who, c, own, foreign] of viewers) {
    for (const query of queries) {
      const res = await c.status(query)
      t.equal(res.status, 200, `${who} ${JSON.stringify(query)}`)
      for (const id of foreign) t.notOk(res.text.includes(id.slice(-16)), `${who} ${JSON.stringify(query)}: no id of another company`)
      for (const i of res.json().instructions) t.ok(own.includes(i.instruction_id), `${who}: only its own`)
    }
  }
  // DECISIONS.md "Tenure": another company's instruction never supersedes the sender's,
  // so other's 11:00 programme on site 2 is in force despite acme's later 12:00 one.
  const site2 = (await other.status({ target_date: DAY, site_id: siteId(2) })).json()
  t.same(site2.instructions, [{
    instruction_id: rev('20261121T110000Z'), site_id: siteId(2), emitted_at: '2026-11-21T11:00:00Z', received_at: '2026-11-21T12:31:00.000Z',
    periods_count: 1, status: 'queued', infeasible_slots: 0, in_force: [{ from: '2026-11-21T12:31:00Z' }],
  }], 'not superseded by another company\'s later emitted_at: in force since it was received')
  // A site outside the perimeter that the company never programmed answers as one with none.
  t.same((await other.status({ target_date: DAY, site_id: siteId(3) })).json(), { target_date: DAY, count: 0, instructions: [] })
  t.same((await narrow.status({ target_date: DAY })).json().instructions, [])
  // What `other` sees of site 1: its own only, newest first; acme sees its own three.
  t.same((await other.status({ target_date: DAY, site_id: siteId(1) })).json().instructions.map((i: any) => [i.instruction_id, i.status]),
    [[rev('20261121T120500Z'), 'queued'], [rev('20261121T110000Z'), 'superseded']])
  t.same((await acme.status({ target_date: DAY })).json().instructions.map((i: any) => [i.site_id, i.status]),
    [[siteId(1), 'superseded'], [siteId(2), 'superseded'], [siteId(3), 'queued']])
  t.notOk((await acme.status({ target_date: DAY })).text.includes('superseded_by'), 'acme\'s sites 1 and 2 are superseded by other\'s: not named')
})

// DECISIONS.md "Tenure: who holds a site, and when".
t.test('a site that left the perimeter: the company still reads its instructions there, withdrawn, from when and why, nothing of the new holder', async t => {
  const epx = await startEpx(t)
  const acme = await company(epx, 'acme', [siteId(1), siteId(2)])
  t.equal((await acme.send({ emittedAt: '2026-11-21T12:00:00Z', sites: 2, slots: 2 })).status, 202)
  epx.clock.set('2026-11-21T12:40:00Z')
  const at = epx.clock.now().toISOString()
  await openCompanies(epx.store, { now: () => epx.clock.now().getTime() }).update('acme', c => ({ ...c, perimeter: [siteId(1)] }), { actor: { kind: 'cli', user: 'op' } })
  const beta = await company(epx, 'beta', [siteId(2)])
  t.equal((await beta.send({ emittedAt: '2026-11-21T11:00:00Z', sites: [siteId(2)], slots: 2 })).status, 202)
  const res = await acme.status({ target_date: DAY, site_id: siteId(2) })
  t.equal(res.status, 200, res.text)
  t.same(res.json().instructions, [{
    instruction_id: rev('20261121T120000Z'), site_id: siteId(2), emitted_at: '2026-11-21T12:00:00Z', received_at: '2026-11-21T12:30:00.000Z',
    periods_count: 2, status: 'withdrawn', withdrawn_at: at, infeasible_slots: 0,
    in_force: [{ from: '2026-11-21T12:30:00Z', until: '2026-11-21T12:40:00Z' }], not_in_force_reason: 'site-left-perimeter',
  }], 'the documented fields, in their order')
  t.same(Object.keys(res.json().instructions[0]), ['instruction_id', 'site_id', 'emitted_at', 'received_at', 'periods_count', 'status', 'withdrawn_at', 'infeasible_slots', 'in_force', 'not_in_force_reason'],
    'in the order of the published schema')
  t.notOk(res.text.includes('20261121T110000Z'), 'beta\'s instruction is never named')
  t.same((await acme.status({ target_date: DAY })).json().instructions.map((i: any) => [i.site_id, i.status]), [[siteId(1), 'queued'], [siteId(2), 'withdrawn']])
  t.same((await beta.status({ target_date: DAY })).json().instructions.map((i: any) => [i.site_id, i.status]), [[siteId(2), 'queued']], 'the new holder\'s programme is in force')
})

t.test('a bad query is 400 INVALID_QUERY in the inbound format, naming each parameter', async t => {
  const { acme } = await setup(t)
  const cases: Array<[Record<string, string>, Record<string, string>]> = [
    [{}, { target_date: 'required' }],
    [{ target_date: '2026-02-30' }, { target_date: 'must be a calendar date YYYY-MM-DD' }],
    [{ target_date: DAY, site_id: 'PRM1' }, { site_id: 'must be PRM followed by 14 digits' }],
  ]
  for (const [query, details] of cases) {
    const res = await acme.status(query)
    t.equal(res.status, 400)
    t.same(res.json().error.details, details)
    t.equal(res.json().error.code, 'INVALID_QUERY')
  }
})

t.test('the status read needs the inbound scope, a certificate and a token, as POST does', async t => {
  const { epx, acme } = await setup(t)
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const denied = await epx.request({ path: INBOUND_PATH, query: { target_date: DAY }, cert: acme.cert, token: secret })
  t.equal(denied.status, 403)
  t.equal(denied.json().error.code, 'SCOPE_DENIED')
  t.equal((await epx.request({ path: INBOUND_PATH, query: { target_date: DAY }, cert: null, token: acme.secret })).json().error.code, 'MTLS_REQUIRED')
  t.equal((await epx.request({ path: INBOUND_PATH, query: { target_date: DAY }, cert: acme.cert })).status, 401)
  epx.faults.unavailable = true
  const down = await acme.status({ target_date: DAY })
  t.equal(down.status, 503)
  t.equal(down.json().error.code, 'NO_STORE')
})

t.test('in_force: when each instruction was in force (UTC), and why not when it is not, never naming another company', async t => {
  const { epx, acme } = await setup(t)
  const other = await company(epx, 'other', [siteId(3)])
  await acme.send({ emittedAt: '2026-11-21T12:00:00Z', sites: 3, slots: 4 })
  epx.clock.set('2026-11-21T13:00:00Z')
  await acme.send({ emittedAt: '2026-11-21T13:00:00Z', slots: 4 })
  await other.send({ emittedAt: '2026-11-21T13:00:00Z', sites: [siteId(3)], slots: 4 })   // shared sites: data from before one BSP per site
  // 23:50 in Paris on the day itself: every period of it has begun.
  epx.clock.set('2026-11-22T22:50:00Z')
  await acme.send({ emittedAt: '2026-11-22T22:50:00Z', slots: 4 })
  // The site leaving the perimeter, as the tenure records it (DECISIONS.md "Tenure").
  const instructions = openInstructions(epx.store)
  await epx.store.writeDurable(() => instructions.inForce.recordWithdrawn(DAY, siteId(2), Date.parse('2026-11-22T08:00:00Z'),
    [{ instructionId: rev('20261121T120000Z'), companyId: 'acme' }], 'site-left-perimeter'))

  const entries = (await acme.status({ target_date: DAY })).json().instructions
  t.same(entries.map((i: any) => [i.instruction_id, i.site_id, i.in_force, i.not_in_force_reason]), [
    // Late: never in force (DECISIONS.md "In force, quarter-hour by quarter-hour"), so the one before stays.
    [rev('20261122T225000Z'), siteId(1), [], 'late'],
    [rev('20261121T130000Z'), siteId(1), [{ from: '2026-11-21T13:00:00Z' }], undefined],
    [rev('20261121T120000Z'), siteId(1), [{ from: '2026-11-21T12:30:00Z', until: '2026-11-21T13:00:00Z' }], 'superseded'],
    [rev('20261121T120000Z'), siteId(2), [{ from: '2026-11-21T12:30:00Z', until: '2026-11-22T08:00:00Z' }], 'site-left-perimeter'],
    [rev('20261121T120000Z'), siteId(3), [{ from: '2026-11-21T12:30:00Z', until: '2026-11-21T13:00:00Z' }], 'superseded'],
  ])
  const site3 = (await acme.status({ target_date: DAY, site_id: siteId(3) })).text
  t.notOk(site3.includes('superseded_by') || site3.includes('20261121T130000Z'), 'superseded by another company\'s: its id untold')
})
