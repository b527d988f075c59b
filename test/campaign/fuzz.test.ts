// The system tier's slice of the campaign's fuzz and soak rows (test/campaign/fuzz.ts,
// soak.ts; the full run posts 100,000 bodies and soaks for three minutes; `npm run
// campaign -- --only fuzz,soak --requests N --soak-seconds N` picks other counts).
import t from 'tap'
import { buildHost, removeTempDirs } from './daemon.ts'
import { breaksARule, fuzz, wellFormedError } from './fuzz.ts'
import { soak } from './soak.ts'
import { programme } from '../helpers/programme.ts'

t.before(() => buildHost({ plugin: false }))
t.teardown(removeTempDirs)

t.test('the fuzz oracle itself: it tells a contract error from a malformed one, and a valid body from a broken one', async t => {
  const sent = '{"sites":[{"site_id":"x"}]}'
  const error = (details: object) => JSON.stringify({ error: { code: 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST', message: 'm', details } })
  t.equal(wellFormedError(error({ '/sites/0/site_id': 'bad' }), sent), undefined)
  t.equal(wellFormedError(error({ '/sites/0/energie_programmee': 'missing' }), sent), undefined, 'a missing field under an existing parent')
  t.match(wellFormedError(error({ '/sites/3/site_id': 'bad' }), sent), /does not point into the body/)
  t.match(wellFormedError(error({}), sent), /empty details/)
  t.equal(wellFormedError(error({ '': 'not JSON' }), '{"a":'), undefined, 'a body that is not JSON: the key ""')
  t.match(wellFormedError(error({ '/a': 'x' }), '{"a":'), /does not point/)
  t.match(wellFormedError(JSON.stringify({ error: { code: 'INTERNAL', message: 'm', details: {} } }), sent), /code/)
  t.equal(breaksARule('{"schema_version":"v0.3"}'), 'schema_version')
  // The sanity bound (DECISIONS.md "Inbound"): 1e306 kWh is a 400, not a promise broken; 25,000 kWh a quarter-hour is the bound itself.
  const slotKwh = (kwh: number) => JSON.stringify(programme({ slots: 2, kwh: j => j === 1 ? kwh : 2.5 }))
  t.equal(breaksARule(slotKwh(1e306)), 'energie_kwh (power above inbound.maxSiteKw)')
  t.equal(breaksARule(slotKwh(25_000.01)), 'energie_kwh (power above inbound.maxSiteKw)')
  t.equal(breaksARule(slotKwh(25_000)), undefined)
  t.equal(breaksARule(JSON.stringify(programme({ slots: 2, slotSecs: 1800, kwh: () => 50_000 }))), undefined, 'power, not energy: 50,000 kWh over a half-hour is 100,000 kW')
})

t.test('fast-check POST bodies: no 5xx, every 400 in the contract\'s format, every 202 for a body that keeps the rules', async t => {
  const r = await fuzz({ requests: 500, budgetMs: 90_000 })
  t.equal(r.requests, 500, `seed ${r.seed} (replay: npm run campaign -- --only fuzz --seed ${r.seed})`)
  t.ok((r.statuses['202'] ?? 0) > 0 && (r.statuses['400'] ?? 0) > 0, `both outcomes seen: ${JSON.stringify(r.statuses)}`)
  t.equal(r.serverErrors, 0, `no 5xx ${r.examples.join(' | ')}`)
  t.equal(r.malformedErrors, 0, 'every 400 is in the contract\'s inbound error format')
  t.equal(r.acceptedInvalid, 0, 'no 202 for a body that breaks a rule')
  t.equal(r.transportErrors, 0, 'every request got an answer')
})

t.test('a short soak of GET and POST: every request answered, heap and resident memory within the short run\'s bound', async t => {
  const r = await soak({ warmupMs: 500, durationMs: 1500, boundPct: 25 })
  t.ok(r.requests > 0)
  t.equal(r.errors, 0, 'every GET 200, every POST 202')
  // Only gross growth is judged here: the full run's three minutes carry the ±10 % promise.
  t.ok(r.end.heapUsed <= r.start.heapUsed * 1.25, `heap after GC ${r.start.heapUsed} → ${r.end.heapUsed}`)
})
