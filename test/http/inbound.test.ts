import t, { type Test as Tap } from 'tap'
import { startEpx, TEST_DOOR_IN_WORKER } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId, type ProgrammeOptions } from '../helpers/programme.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { eventually } from '../helpers/eventually.ts'

// Through the front door: mTLS, a real token, LMDB, the reference host's solver.

async function setup (t: Tap, o: { now?: string; config?: Record<string, any>; perimeter?: 'all' | string[] } = {}) {
  // 40 sites: the big programmes below name sites the solver manages.
  const epx = await startEpx(t, { now: o.now, config: o.config, sites: 40 })
  const { cert } = await epx.addCompany('acme', { perimeter: o.perimeter ?? 'all' })
  const { secret, id: tokenId } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const post = (body: string | object) => epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body, headers: { 'content-type': 'application/json' } })
  const send = (o: ProgrammeOptions = {}) => post(programme(o))
  const instructions = () => openInstructions(epx.store)
  return { epx, cert, secret, tokenId, post, send, instructions }
}

/**
 * One epx per door placement for the tests whose requests are all refused (a door's start
 * is most of a test's CPU here): nothing they send is stored or queued, so each finds the
 * epx as empty as one of its own, and checks so where it matters. Its company `acme` may
 * send for every site, `solo` for site 1 only. A test that is answered 202 starts its own.
 */
const refusing = new Map<boolean, ReturnType<typeof refusingEpx>>()
async function refusingEpx (inWorker: boolean) {
  const acme = await setup(t, { config: { api: { inWorker } } })
  const { cert } = await acme.epx.addCompany('solo', { perimeter: [siteId(1)] })
  const { secret } = await acme.epx.addToken('solo', ['inbound:programme-soutirage'])
  const postSolo = (body: object) => acme.epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body, headers: { 'content-type': 'application/json' } })
  return { ...acme, postSolo }
}
const refusals = (inWorker = TEST_DOOR_IN_WORKER) => {
  if (!refusing.has(inWorker)) refusing.set(inWorker, refusingEpx(inWorker))
  return refusing.get(inWorker)!
}

const ID = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'

t.test('a valid programme is answered 202 with the contract receipt, exactly', async t => {
  const { send } = await setup(t)
  const res = await send({ sites: 2 })
  t.equal(res.status, 202, res.text)
  t.match(res.headers['content-type'], /^application\/json/)
  t.equal(res.text, JSON.stringify({
    status: 'received',
    count: 2,
    instructions: [
      { instruction_id: ID, site_id: siteId(1), periods_count: 96, status: 'queued' },
      { instruction_id: ID, site_id: siteId(2), periods_count: 96, status: 'queued' },
    ],
    message: '2 instruction(s) persisted; 2 will be applied at the next solver cycle',
  }))
})

t.test('the stored instruction keeps the sender, the token, the certificate and the received time', async t => {
  const { send, instructions, tokenId, epx } = await setup(t)
  await send()
  t.match(instructions().get(ID, siteId(1)), {
    emittedBy: 'bsp-acme', companyId: 'acme', tokenId, receivedAt: epx.clock.now().toISOString(),
    certFingerprint256: /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/,
  })
})

t.test('a programme is followed from 202 to applied: queued for the next cycle, honoured, acknowledged', async t => {
  // Today's programme, so the reference solver's current slot (12:30Z) is constrained.
  const { send, epx, instructions } = await setup(t)
  const res = await send({ targetDate: '2026-11-21', emittedAt: '2026-11-21T11:00:00Z', kwh: () => 25 })
  t.equal(res.status, 202)
  // 12:30Z: the 54 quarter-hours from 23:00Z the day before are over; kept, not fed.
  t.match(res.json(), { instructions: [{ periods_count: 96, status: 'queued', periods_over: 54 }], message: /; 54 period\(s\) already over are kept but not fed to the solver$/ })
  const id = 'ProgrammeSoutirage-2026-11-21-rev-20261121T110000Z'
  const [input] = epx.ref.pending()
  t.match(input, { instructionId: id, siteId: siteId(1), targetDate: '2026-11-21' })
  t.equal(input!.periods.length, 42, 'the periods not over yet')
  t.equal(input!.periods[0]!.startUtc, '2026-11-21T12:30:00Z')
  t.same(input!.periods.find(p => p.startUtc === '2026-11-21T12:30:00Z'), { startUtc: '2026-11-21T12:30:00Z', endUtc: '2026-11-21T12:45:00Z', minKw: 100 })
  t.equal((await eventually(() => instructions().get(id, siteId(1))!.state.status, s => s === 'queued')), 'queued')

  const cycle = epx.ref.runCycle()
  t.same(cycle.inputs, [{ instructionId: id, siteId: siteId(1) }])
  const sp = epx.ref.setpoints().get(siteId(1))!
  t.equal(sp.floorKw, 100, 'the solver sees the floor')
  t.equal(sp.kw, Math.min(Math.max(sp.plannedKw, 100), sp.availableKw), 'and honours it within the available power')
  const state = await eventually(() => instructions().get(id, siteId(1))!.state, s => s.status === 'applied')
  t.same({ status: state.status, cycle: state.cycle }, { status: 'applied', cycle: cycle.cycle })
})

t.test('energy 0 reaches the solver as a curtailment (max_kw 0)', async t => {
  const { send, epx } = await setup(t)
  await send({ targetDate: '2026-11-21', kwh: () => 0 })
  epx.ref.runCycle()
  t.equal(epx.ref.setpoints().get(siteId(1))!.capKw, 0)
  t.equal(epx.ref.setpoints().get(siteId(1))!.kw, 0)
})

t.test('an older programme arriving after a newer one is answered 202, stored superseded, never fed', async t => {
  const { send, epx, instructions } = await setup(t)
  t.equal((await send({ emittedAt: '2026-11-21T11:00:00Z' })).status, 202)
  epx.ref.runCycle()
  t.equal((await send({ emittedAt: '2026-11-21T10:00:00Z' })).status, 202)
  t.same(epx.ref.pending(), [], 'nothing queued for the older one')
  t.equal(instructions().get('ProgrammeSoutirage-2026-11-22-rev-20261121T100000Z', siteId(1))!.state.status, 'superseded')
})

t.test('a newer programme supersedes the effective one and replaces it in the queue', async t => {
  const { send, epx, instructions } = await setup(t)
  await send({ emittedAt: '2026-11-21T10:00:00Z' })
  await send({ emittedAt: '2026-11-21T11:00:00Z' })
  t.same(epx.ref.pending().map(i => i.instructionId), [
    'ProgrammeSoutirage-2026-11-22-rev-20261121T100000Z', 'ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z',
  ], 'the latest input of a (site, day) wins in the host queue')
  t.equal(instructions().get('ProgrammeSoutirage-2026-11-22-rev-20261121T100000Z', siteId(1))!.state.status, 'superseded')
  epx.ref.runCycle()
  t.equal(epx.ref.activeInput(siteId(1), '2026-11-22')!.instructionId, 'ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z')
})

t.test('after a restart every effective instruction whose day is not over is queued again', async t => {
  const { send, epx, instructions } = await setup(t, { now: '2026-11-20T12:30:00Z' })
  t.equal((await send({ targetDate: '2026-11-20', emittedAt: '2026-11-19T12:00:00Z' })).status, 202)   // a day over by the restart
  t.equal((await send({ targetDate: '2026-11-21', emittedAt: '2026-11-20T12:00:00Z' })).status, 202)   // today by the restart
  epx.clock.set('2026-11-21T12:30:00Z')
  await send({ targetDate: '2026-11-22', emittedAt: '2026-11-21T10:00:00Z', sites: 2 })
  await send({ targetDate: '2026-11-22', emittedAt: '2026-11-21T11:00:00Z' })   // supersedes site 1
  epx.ref.runCycle()
  await eventually(() => instructions().get('ProgrammeSoutirage-2026-11-21-rev-20261120T120000Z', siteId(1))!.state.status, s => s === 'applied')

  await epx.restart({ solver: true })   // a new solver process: its queue is empty
  t.same(epx.ref.pending().map(i => [i.targetDate, i.siteId, i.instructionId]).sort(), [
    ['2026-11-21', siteId(1), 'ProgrammeSoutirage-2026-11-21-rev-20261120T120000Z'],
    ['2026-11-22', siteId(1), 'ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z'],
    ['2026-11-22', siteId(2), 'ProgrammeSoutirage-2026-11-22-rev-20261121T100000Z'],
  ])
  t.equal(epx.ref.pending().find(i => i.targetDate === '2026-11-21')!.periods.length, 42, 'with their periods not over yet (54 of 96 are)')
  t.equal(epx.ref.pending().find(i => i.targetDate === '2026-11-22')!.periods.length, 96, 'every period of tomorrow')
  const state = await eventually(() => instructions().get('ProgrammeSoutirage-2026-11-21-rev-20261120T120000Z', siteId(1))!.state, s => s.status === 'queued')
  t.equal(state.status, 'queued', 'applied by the old solver, queued for the new one')
  const cycle = epx.ref.runCycle()
  t.equal(cycle.inputs.length, 3)
})

t.test('a store failure in the middle of a programme is 503 NO_STORE with Retry-After, nothing stored or queued', async t => {
  const { send, epx, instructions } = await setup(t)
  epx.faults.failWriteAfter = 5
  const res = await send({ sites: 3 })
  t.equal(res.status, 503)
  t.equal(res.headers['retry-after'], '5')
  t.equal(res.json().error.code, 'NO_STORE')
  t.same(instructions().list(), [])
  t.same(epx.ref.pending(), [])
  t.equal((await send({ sites: 3 })).status, 202, 'the next attempt succeeds')
})

t.test('validation failures through the door: 400 with the pointer to the faulty field', async t => {
  const { postSolo, epx } = await refusals()
  const b = programme({ sites: 2, slots: 4 })
  b.sites[0]!.energie_programmee[2]!.debut_utc = '2026-11-21T23:31:00Z'
  const res = await postSolo(b)
  t.equal(res.status, 400)
  const { error } = res.json()
  t.equal(error.code, 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST')
  t.match(error.message, /^request validation failed: 2 problem\(s\)/)
  t.same(Object.keys(error.details), ['/sites/0/energie_programmee/2/debut_utc', '/sites/1/site_id'])
  t.match(error.details['/sites/1/site_id'], /outside your company's perimeter/)
  t.same(epx.ref.pending(), [])
})

t.test('a big programme is parsed off the request thread and stored like a small one', async t => {
  const { send, post, instructions } = await setup(t)
  const res = await send({ sites: 40 })   // ~360 KB: over the inline threshold
  t.equal(res.status, 202)
  t.equal(res.json().count, 40)
  t.equal(instructions().list().length, 40)
  t.same(instructions().get(ID, siteId(40))!.slots.length, 96)
  const bad = programme({ sites: 40 })
  bad.sites[39]!.energie_programmee[95]!.energie_kwh = -1
  const refused = await post(bad)
  t.equal(refused.status, 400)
  t.same(Object.keys(refused.json().error.details), ['/sites/39/energie_programmee/95/energie_kwh'])
})

t.test('a token without the inbound scope is refused by the door before the body is read', async t => {
  const { epx, cert } = await refusals()
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const res = await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme() })
  t.equal(res.status, 403)
  t.equal(res.json().error.code, 'SCOPE_DENIED')
})

t.test('an empty energie_programmee is answered 202 with 0 periods and clears the earlier constraint of that site and day', async t => {
  const { send, epx } = await setup(t)
  t.equal((await send({ targetDate: '2026-11-21', emittedAt: '2026-11-21T11:00:00Z', kwh: () => 25 })).status, 202)
  epx.ref.runCycle()
  t.equal(epx.ref.setpoints().get(siteId(1))!.floorKw, 100, 'the first programme sets a 100 kW floor')
  const res = await send({ targetDate: '2026-11-21', emittedAt: '2026-11-21T12:00:00Z', slots: 0 })
  t.equal(res.status, 202, res.text)
  t.same(res.json().instructions, [{ instruction_id: 'ProgrammeSoutirage-2026-11-21-rev-20261121T120000Z', site_id: siteId(1), periods_count: 0, status: 'queued' }])
  epx.ref.runCycle()
  t.equal(epx.ref.activeInput(siteId(1), '2026-11-21')!.instructionId, 'ProgrammeSoutirage-2026-11-21-rev-20261121T120000Z')
  t.equal(epx.ref.activeInput(siteId(1), '2026-11-21')!.periods.length, 0)
  t.equal(epx.ref.setpoints().get(siteId(1))!.floorKw, undefined, 'no floor any more')
  t.equal(epx.ref.setpoints().get(siteId(1))!.capKw, undefined, 'and no cap')
})

t.test('emitted_at with milliseconds: the id carries .sss, the stored instant keeps them', async t => {
  const { send, instructions } = await setup(t)
  const res = await send({ slots: 1, emittedAt: '2026-11-21T12:30:00.25Z' })
  t.equal(res.status, 202, res.text)
  const id = 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.250Z'
  t.equal(res.json().instructions[0].instruction_id, id)
  t.equal(instructions().get(id, siteId(1))!.emittedAt, '2026-11-21T12:30:00.250Z')
})

t.test('unknown extra fields are accepted with 202 and never stored', async t => {
  const { post, instructions } = await setup(t)
  const b: any = programme({ slots: 2 })
  b.future_field = { x: 1 }
  b.sites[0].zone = 'north'
  b.sites[0].energie_programmee[0].comment = 'peak'
  const res = await post(b)
  t.equal(res.status, 202, res.text)
  const stored = JSON.stringify(instructions().get(ID, siteId(1)))
  t.match(stored, /PRM30000000000001/, 'the instruction is there')
  for (const extra of ['future_field', 'zone', 'north', 'comment', 'peak']) t.notOk(stored.includes(extra), extra)
})

t.test('two programmes 1 µs apart are two instructions: the later one is effective, the earlier superseded, not replaced', async t => {
  const { send, instructions, epx } = await setup(t)
  const first = await send({ emittedAt: '2026-11-21T10:00:00.123456Z' })
  const second = await send({ emittedAt: '2026-11-21T10:00:00.123457Z' })
  t.equal(first.status, 202, first.text)
  t.equal(second.status, 202, second.text)
  const ids = [first.json().instructions[0].instruction_id, second.json().instructions[0].instruction_id]
  t.same(ids, ['ProgrammeSoutirage-2026-11-22-rev-20261121T100000.123456Z', 'ProgrammeSoutirage-2026-11-22-rev-20261121T100000.123457Z'])
  t.same(instructions().list().map(i => [i.instructionId, i.emittedAt, i.state.status]), [
    [ids[0], '2026-11-21T10:00:00.123456Z', 'superseded'],
    [ids[1], '2026-11-21T10:00:00.123457Z', await eventually(() => instructions().get(ids[1]!, siteId(1))!.state.status, s => s === 'queued')],
  ])
  epx.ref.runCycle()
  t.equal(epx.ref.activeInput(siteId(1), '2026-11-22')!.instructionId, ids[1], 'the solver runs the later one')
  t.equal((await send({ emittedAt: '2026-11-21T10:00:00.1234565Z' })).status, 202, 'one between them, arriving last')
  t.equal(instructions().get('ProgrammeSoutirage-2026-11-22-rev-20261121T100000.123456500Z', siteId(1))!.state.status, 'superseded')
})

t.test('two spellings of one emitted_at (.5 and .500) through the door are one instruction', async t => {
  const { send, instructions } = await setup(t)
  t.equal((await send({ emittedAt: '2026-11-21T10:00:00.5Z', kwh: () => 1 })).status, 202)
  t.equal((await send({ emittedAt: '2026-11-21T10:00:00.500Z', kwh: () => 2 })).status, 202)
  t.same(instructions().list().map(i => [i.instructionId, i.slots[0]![1]]), [['ProgrammeSoutirage-2026-11-22-rev-20261121T100000.500Z', 2]])
})

t.test('an emitted_at in years 0000 to 0099 is accepted through the door and names the instruction in that year', async t => {
  const { send } = await setup(t)
  const res = await send({ emittedAt: '0050-06-15T12:00:00Z', slots: 1 })
  t.equal(res.status, 202, res.text)
  t.equal(res.json().instructions[0].instruction_id, 'ProgrammeSoutirage-2026-11-22-rev-00500615T120000Z')
})

t.test('a target_date in year 0050 is refused at /target_date, saying Paris time then has no quarter-hour grid', async t => {
  const { post } = await refusals()
  const b = programme({ slots: 1, emittedAt: '0050-06-14T12:00:00Z' })
  b.target_date = '0050-06-15'
  b.sites[0]!.energie_programmee = [{ debut_utc: '0050-06-15T00:00:00Z', fin_utc: '0050-06-15T00:15:00Z', energie_kwh: 1 }]
  const res = await post(b)
  t.equal(res.status, 400)
  t.same(Object.keys(res.json().error.details), ['/target_date'], 'the instants themselves are valid')
  t.match(res.json().error.details['/target_date'], /^the Europe\/Paris day 0050-06-15 covers \[0050-06-14T23:50:39Z, 0050-06-15T23:50:39Z\), which does not start and end on UTC quarter-hours: .*send a target_date from 1911-03-12 on$/)
})

t.test('an instant refusal says what is wrong in error.details under the field pointer', async t => {
  const { post } = await refusals()
  const b = programme({ slots: 2, emittedAt: '2026-11-21T13:00:00+01:00' })
  b.sites[0]!.energie_programmee[1]!.debut_utc = '2026-11-21T23:15:00.000001Z'
  const res = await post(b)
  t.equal(res.status, 400)
  const { details } = res.json().error
  t.same(Object.keys(details), ['/emitted_at', '/sites/0/energie_programmee/1/debut_utc'])
  t.equal(details['/emitted_at'], 'must end in Z (UTC); got an offset +01:00: write 2026-11-21T12:00:00Z instead; got "2026-11-21T13:00:00+01:00"')
  t.match(details['/sites/0/energie_programmee/1/debut_utc'], /^must be aligned to a 900 s boundary .*no fraction of a second\); got "2026-11-21T23:15:00.000001Z"$/)
})

t.test('a big programme (parsed in the worker) keeps emitted_at to the nanosecond too', async t => {
  const { send, instructions } = await setup(t)
  t.equal((await send({ sites: 40, emittedAt: '2026-11-21T10:00:00.000000002Z' })).status, 202)
  t.equal((await send({ sites: 40, emittedAt: '2026-11-21T10:00:00.000000001Z' })).status, 202)
  const newer = 'ProgrammeSoutirage-2026-11-22-rev-20261121T100000.000000002Z'
  t.equal(instructions().effectiveId('2026-11-22', siteId(40)), newer, 'the later one stays effective')
  t.equal(instructions().get('ProgrammeSoutirage-2026-11-22-rev-20261121T100000.000000001Z', siteId(40))!.state.status, 'superseded')
})

t.test('a slot above the sanity bound (inbound.maxSiteKw) is 400 at its energie_kwh, in the thread and in the door\'s worker: 1e306 kWh never becomes an infinite floor', async t => {
  for (const inWorker of [false, true]) {
    const { post, epx, instructions } = await refusals(inWorker)
    const b = programme({ targetDate: '2026-11-21', slots: 96 })
    b.sites[0]!.energie_programmee[60]!.energie_kwh = 1e306
    const res = await post(b)
    t.equal(res.status, 400, `inWorker ${inWorker}`)
    const { error } = res.json()
    t.equal(error.code, 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST')
    t.same(Object.keys(error.details), ['/sites/0/energie_programmee/60/energie_kwh'])
    t.match(error.details['/sites/0/energie_programmee/60/energie_kwh'], /^1e\+306 kWh over a 900 s slot .*sanity bound of 100000 kW per site \(inbound\.maxSiteKw\)/)
    t.same(epx.ref.pending(), [], 'nothing queued')
    t.same(instructions().list(), [], 'nothing stored')
  }
  // The operator's bound, read by the door and by the off-thread parser alike.
  const { post } = await setup(t, { config: { inbound: { maxSiteKw: 5 } } })
  const res = await post(programme({ slots: 2 }))   // 2.5 kWh a quarter-hour: 10 kW
  t.equal(res.status, 400)
  t.match(res.json().error.details['/sites/0/energie_programmee/0/energie_kwh'], /sanity bound of 5 kW per site/)
})

// After every other test on the refusing epx: its last request is accepted.
t.test('what cannot be honoured is refused with 400 at its pointer, in the thread and in the door\'s worker', async t => {
  for (const inWorker of [false, true]) {
    const { post, epx } = await refusals(inWorker)
    const refuse = async (b: object, pointer: string, message: RegExp) => {
      const res = await post(b)
      t.equal(res.status, 400, `${pointer} (inWorker ${inWorker})`)
      t.equal(res.json().error.code, 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST')
      t.same(Object.keys(res.json().error.details), [pointer])
      t.match(res.json().error.details[pointer], message)
    }
    await refuse(programme({ emittedAt: '2062-11-21T12:00:00Z', slots: 1 }), '/emitted_at', /ahead of this server's clock \(2026-11-21T12:30:00\.000Z\)/)
    await refuse(programme({ targetDate: '2020-01-01', slots: 1 }), '/target_date', /^the day is over: 2020-01-01 is before today \(2026-11-21/)
    await refuse(programme({ targetDate: '2026-12-01', slots: 1 }), '/target_date', /too far ahead: the latest target_date accepted today \(2026-11-21, Europe\/Paris\) is 2026-11-28/)
    await refuse(programme({ sites: [siteId(1), 'PRM99999999999999'], slots: 1 }), '/sites/1/site_id', /^site PRM99999999999999 is not managed by this service's solver/)
    t.same(epx.ref.pending(), [], 'nothing queued')
    t.equal((await post(programme({ emittedAt: '2026-11-21T12:34:00Z', slots: 1 }))).status, 202, 'within the skew')
  }
})

t.test('a programme for today whose every period had begun is answered 202 late: stored, never fed, never said to be applied', async t => {
  const { post, epx, instructions } = await setup(t)
  // 12:30Z: the first eight quarter-hours of 2026-11-21 (from 23:00Z the day before) are long over.
  const res = await post(programme({ targetDate: '2026-11-21', emittedAt: '2026-11-21T12:00:00Z', slots: 8, sites: 2 }))
  t.equal(res.status, 202, res.text)
  const id = 'ProgrammeSoutirage-2026-11-21-rev-20261121T120000Z'
  t.same(res.json(), {
    status: 'received',
    count: 2,
    instructions: [
      { instruction_id: id, site_id: siteId(1), periods_count: 8, status: 'late' },
      { instruction_id: id, site_id: siteId(2), periods_count: 8, status: 'late' },
    ],
    message: '2 instruction(s) persisted; none will be applied; 2 are late: every period had begun before they were received (kept, never applied)',
  })
  t.same(epx.ref.pending(), [], 'nothing handed to the solver')
  t.same(instructions().list().map(i => [i.siteId, i.slots.length, i.state.status]), [[siteId(1), 8, 'received'], [siteId(2), 8, 'received']], 'kept, not said to be queued')
})

t.test('on the 100-quarter-hour day (clock at 2026-10-25T12:05Z): a whole day is queued with its 56 periods over, one ending with the running quarter-hour is late', async t => {
  const { send, epx } = await setup(t, { now: '2026-10-25T12:05:00Z' })
  // 2026-10-25 covers [2026-10-24T22:00Z, 2026-10-25T23:00Z); its 57th quarter-hour began at 12:00Z.
  const whole = await send({ targetDate: '2026-10-25', emittedAt: '2026-10-25T12:00:00Z' })
  t.equal(whole.status, 202, whole.text)
  t.match(whole.json(), { instructions: [{ periods_count: 100, status: 'queued', periods_over: 56 }], message: /^1 instruction\(s\) persisted; 1 will be applied at the next solver cycle; 56 period\(s\) already over/ })
  const [input] = epx.ref.pending()
  t.equal(input!.periods.length, 44, 'the running quarter-hour and the 43 after it')
  const late = await send({ targetDate: '2026-10-25', emittedAt: '2026-10-25T12:01:00Z', slots: 57, sites: [siteId(2)] })
  t.match(late.json(), { instructions: [{ periods_count: 57, status: 'late' }], message: /none will be applied; 1 is late: every period had begun before it was received/ })
  t.same(epx.ref.pending().map(i => i.siteId), [siteId(1)], 'the late one never handed')
})

t.test('a programme re-sent with an older emitted_at is answered 202 superseded, naming the one in force', async t => {
  const { send } = await setup(t)
  t.equal((await send({ emittedAt: '2026-11-21T12:00:00Z' })).status, 202)
  const res = await send({ emittedAt: '2026-11-21T11:00:00Z', sites: 2 })
  t.equal(res.status, 202)
  t.same(res.json(), {
    status: 'received',
    count: 2,
    instructions: [
      { instruction_id: 'ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z', site_id: siteId(1), periods_count: 96, status: 'superseded', superseded_by: ID },
      { instruction_id: 'ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z', site_id: siteId(2), periods_count: 96, status: 'queued' },
    ],
    message: '2 instruction(s) persisted; 1 will be applied at the next solver cycle; 1 is superseded by a later programme',
  })
})
