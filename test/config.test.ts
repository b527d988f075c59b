import t from 'tap'
import { loadConfig } from '../src/config.ts'

t.test('an empty configuration gets every documented default', async t => {
  const c = loadConfig(undefined)
  t.equal(c.api.port, 8443)
  t.equal(c.api.host, '127.0.0.1')
  t.equal(c.inbound.maxBodyBytes, 10 * 1024 * 1024, 'DECISIONS.md: 10 MiB body limit')
  t.equal(c.inbound.maxSites, 5000, 'DECISIONS.md: 5,000 sites')
  t.equal(c.inbound.requireContiguous, false, 'gaps allowed by default')
  t.equal(c.publish.dailyCron, '0 8 * * *')
  t.equal(c.publish.weekendCron, '0 8 * * 5')
  t.equal(c.publish.timezone, 'Europe/Paris')
  t.equal(c.publish.retentionDays, 90)
})

t.test('an invalid configuration is refused with every faulty field named', async t => {
  t.throws(() => loadConfig({ api: { port: 70000 }, inbound: { maxSites: 0 }, nope: 1 }), {
    code: 'EPX_CONFIG_INVALID',
    message: /\/api\/port must be <= 65535.*\/inbound\/maxSites must be >= 1|\/inbound\/maxSites.*\/api\/port/,
  })
  t.throws(() => loadConfig({ nope: 1 }), { message: /additional properties 'nope'/ })
})

t.test("the result is frozen and the host's object is not touched", async t => {
  const raw = { api: { port: 9000 } }
  const c = loadConfig(raw)
  t.same(raw, { api: { port: 9000 } }, 'no defaults written into the caller object')
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.api) && Object.isFrozen(c.api.tls))
})
