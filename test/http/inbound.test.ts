import t from 'tap'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'

t.test('a valid programme is answered 202 with the contract receipt', async t => {
  const epx = await startEpx(t)
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const res = await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme({ sites: 2 }) })
  t.equal(res.status, 202, res.text)
  t.equal(res.text, JSON.stringify({
    status: 'received',
    count: 2,
    instructions: [
      { instruction_id: 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z', site_id: siteId(1), periods_count: 96 },
      { instruction_id: 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z', site_id: siteId(2), periods_count: 96 },
    ],
    message: '2 instruction(s) persisted; they will be applied at the next solver cycle',
  }))
  t.equal(epx.ref.pending().length, 2)
})
