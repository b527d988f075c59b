// DECISIONS.md "Rate limits and quotas", the storage quota with several instances on one
// PostgreSQL database: its count is a record of the database, charged in the transaction
// that saves each programme, so two `epx start` instances count one total, not one each.
import t from 'tap'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { epx } from '../helpers/cli.ts'
import { call, replicaEqualsDatabase, startInstance, twoInstances, type Instance } from '../helpers/instances.ts'
import { parisDateOf } from '../../src/contract/paris-day.ts'

const tomorrow = parisDateOf(new Date(Date.now() + 86_400_000))
/** The k-th programme: each its own emitted_at (whole seconds, so every body has one size). */
const body = (k: number) => JSON.stringify(programme({
  targetDate: tomorrow, sites: [siteId(1)], slots: 8, emittedAt: new Date(Math.floor(Date.now() / 1000) * 1000 - k * 1000).toISOString().replace('.000Z', 'Z'),
}))
const SIZE = Buffer.byteLength(body(1))
/** Two programmes and a half. */
const QUOTA = 2 * SIZE + Math.floor(SIZE / 2)

const { dirA, dirB, inbound, bsp } = await twoInstances(t, { plugin: { inbound: { maxBytesPerCompanyPerDay: QUOTA } } })

const post = (at: Instance, k: number) => call(bsp, new URL(INBOUND_PATH, at.api), {
  method: 'POST', headers: { authorization: `Bearer ${inbound}`, 'content-type': 'application/json' }, body: body(k),
})

t.test('a programme accepted by A and one by B fill the quota: the third is refused by either', async t => {
  const a = await startInstance(t, dirA)
  const b = await startInstance(t, dirB)
  t.equal((await post(a, 1)).status, 202)
  t.equal((await post(b, 2)).status, 202, 'B counts on from A\'s bytes')
  for (const [name, at] of [['A', a], ['B', b]] as const) {
    const refused = await post(at, 3)
    t.equal(refused.status, 429, `${name} refuses the third`)
    t.match(JSON.parse(refused.text), { error: { code: 'QUOTA_EXCEEDED', message: new RegExp(`${2 * SIZE} bytes .*of programmes accepted today`) } })
  }
  const shown = await epx(dirB, 'company', 'show', 'acme')
  t.match(shown.out, new RegExp(`storage quota:\\s+${2 * SIZE} bytes .* used on .*2 programme\\(s\\) accepted`), 'epx company show, from B\'s folder, says the one count')
  const metrics = await call(bsp, new URL('/metrics', a.metrics))
  t.match(metrics.text, `epx_quota_bytes{company="acme"} ${2 * SIZE}`, 'A\'s gauge reads the same count')
  await replicaEqualsDatabase(t, dirA, 'A')
  await replicaEqualsDatabase(t, dirB, 'B')
})
