import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { epx, initializedDataDir, startEpx, type RunningEpx } from '../helpers/cli.ts'
import { startReceiver } from '../helpers/webhook-receiver.ts'
import { until } from '../helpers/eventually.ts'
import { programme, siteId } from '../helpers/programme.ts'
import { INBOUND_PATH } from '../../src/http/route.ts'
import { addDays, parisDateOf } from '../../src/contract/paris-day.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openEvents } from '../../src/store/events.ts'

// DECISIONS.md "Events for BSPs": at least once, in id order per endpoint. The company's
// events are the outbox (store/webhooks.ts): `epx start` killed with SIGKILL in the middle of
// its deliveries, then started again, loses none and sends none out of order; the one it
// was sending when it died may come twice.

const READY = /epx API listening on (https:\/\/127\.0\.0\.1:\d+\/)/

t.test('epx start killed with SIGKILL during its deliveries, started again: every event delivered, in id order, at most the one in flight twice', async t => {
  const dir = await initializedDataDir(t)
  const file = join(dir, 'epx.config.json')
  const settings = JSON.parse(readFileSync(file, 'utf8'))
  settings.plugin.webhooks = { allowPrivateNetworks: true, caFile: 'pki/ca.crt' }
  writeFileSync(file, JSON.stringify(settings, null, 2))
  await epx(dir, 'company', 'add', 'acme', '--name', 'ACME')
  const bundle = join(dir, 'acme')
  await epx(dir, 'cert', 'issue', 'acme', '--out', bundle)
  const token = (await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'inbound:programme-soutirage')).lines.at(-1)!

  let secret = ''
  const r = await startReceiver(t, { secret: () => secret })
  const added = await epx(dir, 'webhook', 'add', 'acme', r.url)
  t.equal(added.code, 0, `registered after the echo check: ${added.err}`)
  secret = added.lines.at(-1)!

  const last = async (): Promise<number> => {
    const store = openStore(join(dir, 'epx.lmdb'))
    await store.opened
    try { return openEvents(store).lastSeq('acme') } finally { await store.close() }
  }
  // An endpoint gets the company's events from its next one on (its own perimeter's event came before).
  const before = await last()

  const start = async (): Promise<RunningEpx> => {
    const run = await startEpx(['--data', dir, 'start', '--port', '0', '--cycle', '1'], READY)
    t.teardown(() => { run.child.kill('SIGKILL') })
    return run
  }
  const first = await start()
  const read = (f: string) => readFileSync(join(bundle, f))
  const agent = new Agent({ connect: { ca: read('ca.crt'), cert: read('client.crt'), key: read('client.key'), servername: 'localhost' } })
  t.teardown(() => agent.close())
  // Each programme queues its 5 sites and supersedes the one before: 10 events, then the cycles' applied ones.
  const targetDate = addDays(parisDateOf(new Date()), 1)
  const base = Math.floor(Date.now() / 1000) * 1000 - 600_000
  for (let k = 0; k < 8; k++) {
    const body = programme({ targetDate, sites: [1, 2, 3, 4, 5].map(siteId), slots: 4, emittedAt: new Date(base + k * 1000).toISOString().replace('.000Z', 'Z') })
    const res = await request(new URL(INBOUND_PATH, first.match[1]!), {
      method: 'POST', dispatcher: agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    })
    await res.body.text()
    t.equal(res.statusCode, 202)
  }
  await until('deliveries under way', () => r.ids().length >= 5, { ms: 30_000, everyMs: 1 })
  first.child.kill('SIGKILL')
  await first.exited
  const atKill = r.ids().length

  await start()
  let written = 0
  await until('every event written delivered', async () => {
    written = await last()
    return new Set(r.ids()).size === written - before && r.ids().length > atKill
  }, { ms: 60_000, everyMs: 200 })

  // Those written by then (a solver cycle may add more meanwhile).
  const ids = r.ids().map(Number).filter(id => id <= written)
  t.same([...new Set(ids)].sort((a, b) => a - b), Array.from({ length: written - before }, (_, i) => before + i + 1), `none lost: events ${before + 1} to ${written}, the ${atKill} delivered before the kill and the rest after`)
  t.ok(ids.every((id, i) => i === 0 || id >= ids[i - 1]!), `in id order, a repeat only in place: ${ids.join(' ')}`)
  t.ok(ids.length - (written - before) <= 1, `at most the event in flight at the kill twice (${ids.length - (written - before)})`)
  t.ok(r.received.every(x => x.verdict.ok), 'each one signed')
})
