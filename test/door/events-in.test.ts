import t from 'tap'
import { batch, eventsPair as pair } from '../helpers/door-events.ts'

// What the door's worker tells the solver's thread reaches it as it was told: every line
// through the host's logger, every metric, and a hand-over acknowledged even when it fails.

t.test('a log line reaches the host\'s logger with its child bindings, level, fields and message', async t => {
  const p = pair(t)
  const caller = p.door.log.child({ area: 'inbound' }).child({ companyId: 'acme', tokenId: 'tok_1' })
  caller.info({ method: 'GET', path: '/x', status: 200, durationMs: 0.4, aborted: undefined }, 'api request')
  caller.error({ err: Object.assign(new Error('boom'), { code: 'E_BOOM' }) }, 'api request failed')
  caller.warn({ err: new TypeError('not a function') }, 'odd')
  p.door.flush()
  t.match(p.lines[0], { level: 30, area: 'inbound', companyId: 'acme', tokenId: 'tok_1', method: 'GET', path: '/x', status: 200, durationMs: 0.4, msg: 'api request' })
  t.notOk('aborted' in p.lines[0], 'an undefined field is left out, as pino leaves it')
  t.match(p.lines[1], { level: 50, err: { type: 'Error', message: 'boom', code: 'E_BOOM', stack: /boom\n\s+at / }, msg: 'api request failed' }, 'an error as pino prints it, with its stack from the door')
  t.match(p.lines[2], { err: { type: 'TypeError', message: 'not a function' } }, 'with its type')
})

t.test('a field JSON cannot carry does not lose its line', async t => {
  const p = pair(t)
  p.door.log.warn({ big: 10n, note: 'kept' }, 'odd')
  p.door.flush()
  t.match(p.lines[0], { level: 40, note: 'kept', msg: 'odd', big: /not serializable/ })
})

t.test('past its shapes, a line still crosses whole (its keys with it)', async t => {
  const p = pair(t)
  for (let i = 0; i <= 1000; i++) p.door.log.info({ i }, `message ${i}`)
  p.door.flush()
  t.equal(p.lines.length, 1001)
  t.match(p.lines[1000], { i: 1000, msg: 'message 1000' })
})

t.test('a solver\'s thread that fails to queue a hand-over says so, and counts it settled (it is durable; the next activation queues it)', async t => {
  const p = pair(t, { handOver: () => { throw new Error('solver gone') } })
  p.door.handOver(batch('P', ['S0'], 2), [0])
  p.door.flush()
  t.match(p.lines.find(l => l.level === 50), { msg: /could not hand/, err: { message: 'solver gone' } })
  await p.main.settled()
})
