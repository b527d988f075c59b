import t from 'tap'
import { R } from '../../src/door/protocol.ts'
import { batch, eventsPair as pair, records } from '../helpers/door-events.ts'
import { slotsDigest } from '../../src/apply/slots-digest.ts'

// The door's side of its events: what it sends costs the solver's thread as little as the
// protocol can make it (shapes once, receipts deduplicated, nothing unobserved, hand-overs
// packed, a busy door's in one message per flush interval).

t.test('a line\'s field names, level and message cross once; each further line of that shape is its values alone', async t => {
  const p = pair(t)
  const log = p.door.log.child({ companyId: 'acme' })
  for (let i = 0; i < 3; i++) log.info({ method: 'GET', path: `/x${i}`, status: 200, durationMs: i }, 'api request')
  p.door.flush()
  log.info({ method: 'GET', path: '/y', status: 304, durationMs: 1 }, 'api request')
  p.door.flush()
  t.same(p.lines.map(l => l.path), ['/x0', '/x1', '/x2', '/y'])
  const [first, second] = p.messages.map(records)
  t.equal(first!.filter(r => r[0] === R.SHAPE).length, 1, 'one shape for the three lines')
  t.equal(first!.filter(r => r[0] === R.LOGGER).length, 1, 'the child logger\'s bindings once')
  t.same(second, [[R.LINE, 1, 1, 'GET', '/y', 304, 1]], 'the next batch: the values alone')
  t.equal(p.messages.length, 2, 'one message per flush, not one per line')
})

t.test('lines of one message with other fields, in another order or with an error each keep their own shape', async t => {
  const p = pair(t)
  const lines: Array<Record<string, unknown>> = [
    { method: 'GET', path: '/a', status: 200, durationMs: 1 },
    { method: 'GET', path: '/b', status: 404, durationMs: 2, code: 'NOT_PUBLISHED' },
    { path: '/c', method: 'GET', status: 200, durationMs: 3 },
    { method: 'GET', path: '/d', status: 500, durationMs: 4, err: new TypeError('boom') },
  ]
  // Twice over, and then a message whose key sets outnumber what a message keeps by reference.
  for (const l of [...lines, ...lines]) p.door.log.info(l, 'api request')
  for (let i = 0; i < 12; i++) p.door.log.info({ [`k${i}`]: i }, 'many')
  p.door.flush()
  t.same(p.lines.slice(0, 8).map(l => [l.path, l.code, l.status]), [...lines, ...lines].map(l => [l.path, l.code, l.status]))
  const fields = ['path', 'method', 'status', 'durationMs']
  t.same(Object.keys(p.lines[2]!).filter(k => fields.includes(k)), fields, 'a line keeps its own field order')
  t.match(p.lines[3]!.err, { type: 'TypeError', message: 'boom' }, 'an error field is an Error again for the host\'s serializer')
  t.match(p.lines.slice(8), Array.from({ length: 12 }, (_, i) => ({ [`k${i}`]: i, msg: 'many' })))
  t.equal(records(p.messages[0]!).filter(r => r[0] === R.SHAPE).length, 16, 'one shape per level, message and field list')
})

t.test('receipts: the last of a company, site and day in a flush is the one sent (the receipts keep only it)', async t => {
  const p = pair(t)
  for (let i = 0; i < 50; i++) p.door.receipt('acme', 'PRM1', '2026-11-22', 1000, 200, i)
  p.door.receipt('acme', 'PRM2', '2026-11-22', 1000, 304, 7)
  p.door.flush()
  t.same(p.receipts, [['acme', 'PRM1', '2026-11-22', 1000, 200, 49], ['acme', 'PRM2', '2026-11-22', 1000, 304, 7]])
})

t.test('receipts: each company\'s and each day\'s are their own, with or without the pair\'s kept key, and 1,000 of them make a flush', async t => {
  const p = pair(t)
  p.door.receipt('acme', 'PRM1', '2026-11-22', 1000, 200, 1, '2026-11-22PRM1')
  p.door.receipt('beta', 'PRM1', '2026-11-22', 1000, 200, 2)
  p.door.receipt('acme', 'PRM1', '2026-11-23', 2000, 200, 3)
  p.door.receipt('acme', 'PRM1', '2026-11-22', 1500, 304, 4)   // the same pair as the first, its key made here
  p.door.flush()
  t.same(p.receipts, [['acme', 'PRM1', '2026-11-22', 1500, 304, 4], ['acme', 'PRM1', '2026-11-23', 2000, 200, 3], ['beta', 'PRM1', '2026-11-22', 1000, 200, 2]])
  const sent = p.messages.length
  for (let i = 0; i < 999; i++) p.door.receipt(i % 2 ? 'acme' : 'beta', `PRM${i}`, '2026-11-22', 1000, 200, i)
  t.equal(p.messages.length, sent, '999 receipts wait for the flush')
  p.door.receipt('acme', 'PRM1', '2026-11-22', 1000, 200, 5)
  p.door.receipt('gamma', 'PRM1', '2026-11-22', 1000, 200, 6)
  t.equal(p.messages.length, sent + 1, 'the 1,000th distinct one sends them')
  t.equal(p.receipts.length, 3 + 1000)
})

t.test('metrics\' events are recorded only when the solver\'s thread has metrics', async t => {
  const on = pair(t)
  on.door.answered('outbound', 'besoins-agreges', 'GET', 200, undefined, 0.001)
  on.door.answered('outbound', 'besoins-agreges', 'GET', 200, undefined, 0.002)
  on.door.answered('inbound', 'programme-soutirage', 'POST', 400, 'INVALID', 0.003)
  on.door.handshake()
  on.door.handshake()
  on.door.event({ e: 'programme', c: { accepted: false, companyId: 'acme', atMs: 1 } })
  on.door.flush()
  t.same(on.answered, [
    ['outbound', 'besoins-agreges', 'GET', 200, undefined, 0.001],
    ['outbound', 'besoins-agreges', 'GET', 200, undefined, 0.002],
    ['inbound', 'programme-soutirage', 'POST', 400, 'INVALID', 0.003],
  ])
  t.equal(on.handshakes(), 2)
  t.equal(on.programmes.length, 1)

  const off = pair(t, { observed: { answered: false, handshakes: false, programmes: false } })
  off.door.answered('outbound', 'besoins-agreges', 'GET', 200, undefined, 0.001)
  off.door.handshake()
  off.door.event({ e: 'programme', c: { accepted: false, companyId: 'acme', atMs: 1 } })
  off.door.flush()
  t.equal(off.messages.length, 0, 'nothing to send, no message')
})

t.test('answered requests: their label sets cross once, then each request is a pair of numbers; as many as a flush\'s records make one (1,000 here)', async t => {
  const p = pair(t)
  const method = ['G', 'E', 'T'].join('')   // a text equal to 'GET' but not the same string
  for (let i = 0; i < 999; i++) p.door.answered('outbound', 'besoins-agreges', i % 3 ? 'GET' : method, i % 2 ? 200 : 304, undefined, i / 1e6)
  t.equal(p.messages.length, 0, '999 wait for the flush')
  p.door.answered('inbound', 'programme-soutirage', 'POST', 400, 'INVALID', 0.5)
  t.equal(p.messages.length, 1, 'the 1,000th sends them')
  const m = p.messages[0]!
  t.same(records(m).filter(r => r[0] === R.LABELS).map(r => r.slice(2)), [
    ['outbound', 'besoins-agreges', 'GET', 304, null],
    ['outbound', 'besoins-agreges', 'GET', 200, null],
    ['inbound', 'programme-soutirage', 'POST', 400, 'INVALID'],
  ], 'three label sets, each once')
  t.equal(records(m).length, 3, 'no record per request')
  t.equal(m.answered!.length, 2 * 1000)
  t.equal(p.answered.length, 1000)
  t.same(p.answered[997], ['outbound', 'besoins-agreges', 'GET', 200, undefined, 997 / 1e6])
  t.same(p.answered[999], ['inbound', 'programme-soutirage', 'POST', 400, 'INVALID', 0.5])
  p.door.answered('outbound', 'besoins-agreges', 'GET', 304, undefined, 0.25)
  p.door.flush()
  t.equal(records(p.messages[1]!).length, 0, 'a known label set is not sent again')
  t.same(p.answered[1000], ['outbound', 'besoins-agreges', 'GET', 304, undefined, 0.25])
})

t.test('events written for the feeds: one count per type a flush, the sum of its writes', async t => {
  const p = pair(t)
  for (let i = 0; i < 40; i++) p.door.eventsWritten('instruction.statut', 1)
  p.door.eventsWritten('besoins_agreges.publie', 3)
  p.door.eventsWritten('besoins_agreges.publie', 2)
  p.door.flush()
  t.same(p.eventsWritten, [['instruction.statut', 40], ['besoins_agreges.publie', 5]])
  t.equal(records(p.messages[0]!).length, 2, 'two records in the message, not 42')
  p.door.eventsWritten('instruction.statut', 1)
  p.door.flush()
  t.same(p.eventsWritten.at(-1), ['instruction.statut', 1], 'the next flush counts from zero')
  await new Promise(r => setImmediate(r))
  t.equal(p.messages.length, 2)
})

t.test('webhook attempts (the deliverer\'s thread uses the same events): one count per company and outcome a flush', async t => {
  const p = pair(t)
  for (let i = 0; i < 30; i++) p.door.webhookAttempt('acme', 'delivered')
  p.door.webhookAttempt('acme', 'failed-attempt')
  p.door.webhookAttempt('bravo', 'delivered')
  p.door.flush()
  t.same(p.webhookAttempts, [['acme', 'delivered', 30], ['acme', 'failed-attempt', 1], ['bravo', 'delivered', 1]])
  t.equal(records(p.messages[0]!).length, 3, 'three records in the message, not 32')
  p.door.webhookAttempt('acme', 'delivered')
  p.door.flush()
  t.same(p.webhookAttempts.at(-1), ['acme', 'delivered', 1], 'the next flush counts from zero')
})

t.test('a saved programme\'s hand-over: the chosen sites and their slots alone, sent at once from a quiet door', async t => {
  const p = pair(t)
  const b = batch('P1', ['S0', 'S1', 'S2'], 4)
  p.door.handOver(b, [0, 2])
  t.equal(p.handed.length, 0, 'not within the save\'s own turn')
  await new Promise(r => setImmediate(r))
  t.equal(p.handed.length, 1, 'on the next turn: a quiet door does not hold it for the flush interval')
  const [h] = p.handed[0]!
  t.same(h!.siteIds, ['S0', 'S2'])
  t.same(Array.from(h!.slotEnds), [4, 8])
  t.same([...h!.starts], [...b.starts.subarray(0, 4), ...b.starts.subarray(8, 12)])
  t.same([...h!.kwh], [...b.kwh.subarray(0, 4), ...b.kwh.subarray(8, 12)])
})

t.test('a hand-over carries each site\'s digest of its slots, made by the door: the one the solver\'s side would make of them', async t => {
  const p = pair(t)
  const b = batch('P1', ['S0', 'S1', 'S2'], 96)
  b.kwh[100] = 7.25   // S1's slots alone differ from S0's and S2's pattern
  p.door.handOver(b, [0, 1, 2])
  p.door.flush()
  const [h] = p.handed[0]!
  const digests = Array.from(h!.digests!)
  t.same(digests, [0, 1, 2].map(i => slotsDigest(h!.starts, h!.kwh, i * 96, (i + 1) * 96, 900)), 'each the digest of that site\'s slots, as received')
  t.same(digests, [0, 1, 2].map(i => slotsDigest(b.starts, b.kwh, i * 96, (i + 1) * 96, 900)), '… and as saved')
  t.equal(new Set(digests).size, 3, 'sites with other slots, other digests')
  t.ok(digests.every(d => Number.isSafeInteger(d) && d >= 0), 'whole numbers JSON carries exactly, never the cleared mark (negative)')
})

t.test('a busy door\'s hand-overs share one message per flush interval, in the order they were saved', async t => {
  const p = pair(t, { flushMs: 40 })
  p.door.handOver(batch('A', ['S0'], 2), [0])
  await new Promise(r => setImmediate(r))
  t.equal(p.messages.length, 1, 'the first leaves at once')
  p.door.handOver(batch('B', ['S0'], 2), [0])
  await new Promise(r => setImmediate(r))
  p.door.handOver(batch('C', ['S0'], 2), [0])
  t.equal(p.messages.length, 1, 'the next ones wait for the interval')
  await new Promise(r => setTimeout(r, 60))
  t.equal(p.messages.length, 2, 'then leave together')
  t.same(p.handed.map(hs => hs.map(h => h.instructionId)), [['A'], ['B', 'C']])
  await p.main.settled()
})
