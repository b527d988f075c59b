import t from 'tap'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { openStore } from '../../src/store/open-store.ts'
import { inDataDir } from '../../src/config.ts'
import { openInstructions } from '../../src/store/instructions.ts'

// `close()` lets the writes it had already accepted (and their
// follow-up status writes) finish before the store closes.
// The door on the solver's thread and in its worker: a worker asked to close ends without a fault logged.
for (const inWorker of [false, true]) t.test(`close() right after an activation lets its accepted status writes land: no warn, the re-queue's \`queued\` on disk after a reopen (door ${inWorker ? 'in its worker' : 'on the solver\'s thread'})`, async t => {
  const epx = await startEpx(t, { config: { api: { inWorker } } })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const first = await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme({ sites: 2 }) })
  t.equal(first.status, 202, first.text)
  const { instruction_id: id } = first.json().instructions[0]
  // The next activation re-queues the effective instructions: their `queued` write waits
  // up to 20 ms to be shared (apply/enqueue.ts). close() comes before it is made.
  epx.clock.advance(60_000)
  await epx.restart({ solver: true })
  await epx.close()

  const complaints = epx.logs().filter(l => l.level >= 40)
  t.same(complaints.map(l => `${l.msg}: ${l.err?.message ?? ''} ${l.err?.cause?.message ?? ''}`), [], 'no warn or error line during close')
  const store = openStore(inDataDir(epx.dataDir, 'epx.lmdb'))
  t.teardown(() => store.close())
  const instructions = openInstructions(store)
  for (const site of [siteId(1), siteId(2)]) t.same(instructions.get(id, site)?.state, { status: 'queued', at: '2026-11-21T12:31:00.000Z' }, `${site}: the re-queue's status write is on disk after a reopen`)
})
