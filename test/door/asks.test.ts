import t from 'tap'
import { MessageChannel } from 'node:worker_threads'
import { answerAsk, asker } from '../../src/door/asks.ts'
import type { AnswerMessage, AskAnswers, AskMessage } from '../../src/door/protocol.ts'
import { EpxError } from '../../src/errors.ts'

// The two ends over a real MessageChannel, as between the door's worker and the solver's thread.
function pair (answers: Partial<AskAnswers>) {
  const { port1: door, port2: main } = new MessageChannel()
  const asks = asker(m => door.postMessage(m))
  door.on('message', (m: AnswerMessage) => asks.answered(m))
  main.on('message', (m: AskMessage) => answerAsk(answers as AskAnswers, m, a => main.postMessage(a)))
  t.teardown(() => { door.close(); main.close() })
  return asks
}

t.test('a question is answered by its own function on the other side, in any order', async t => {
  let release!: () => void
  const slow = new Promise<void>(resolve => { release = resolve })
  const asks = pair({
    sites: async () => { await slow; return [{ site_id: 'PRM1', site_name: 'Un' }] },
    publish: async q => ({ targetDate: q.request.targetDate, published: [], failed: [] }),
  })
  const sites = asks.ask({ ask: 'sites' })
  const report = await asks.ask({ ask: 'publish', request: { targetDate: '2026-11-22' } })
  t.same(report, { targetDate: '2026-11-22', published: [], failed: [] }, 'the later question answered first')
  release()
  t.same(await sites, [{ site_id: 'PRM1', site_name: 'Un' }])
})

t.test('a failure crosses with its code and message; a thrown one too', async t => {
  const asks = pair({
    publish: async () => { throw new EpxError('EPX_CONFIG_INVALID', ['publish.schedule', 'bad']) },
    sites: () => { throw new Error('the solver is down') },
  })
  await t.rejects(asks.ask({ ask: 'publish', request: { targetDate: '2026-11-22' } }), { code: 'EPX_CONFIG_INVALID' })
  await t.rejects(asks.ask({ ask: 'sites' }), { message: 'the solver is down' })
})

t.test('an answer that cannot cross a thread is an error, not a question left open', async t => {
  const asks = pair({ sites: async () => [{ site_id: 'PRM1', site_name: 'Un', label: () => 'x' } as never] })
  await t.rejects(asks.ask({ ask: 'sites' }), { message: /could not be cloned/ })
})

t.test('a bounded question fails saying so when the other side does not answer; failAll ends the rest', async t => {
  const asks = pair({ readiness: () => new Promise(() => {}), metrics: () => new Promise(() => {}) })
  await t.rejects(asks.ask({ ask: 'readiness' }, 50), { message: "the solver's thread did not answer within 50 ms" })
  const open = asks.ask({ ask: 'metrics' })
  asks.failAll('the api worker is closing')
  await t.rejects(open, { message: 'the api worker is closing' })
})
