import t from 'tap'
import { connect } from 'node:net'
import { request } from 'undici'
import { Registry } from 'prom-client'
import { startEpx, TEST_DOOR_IN_WORKER } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { join } from 'node:path'
import { createEpx } from '../../src/plugin.ts'
import { writePki } from '../helpers/certs.ts'
import { listenMetrics } from '../../src/metrics/server.ts'
import pino from 'pino'
import type { Logger } from '../../src/host/contract.ts'

const scrape = async (url: URL, path: string) => {
  const res = await request(new URL(path, url))
  return { status: res.statusCode, type: String(res.headers['content-type']), text: await res.body.text() }
}

/** Samples of a metric: `name{labels} value` lines, as a map of the labels text to the value. */
function samples (text: string, name: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line)
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]))
  }
  return out
}

const EVERY_METRIC = [
  'epx_http_requests_total', 'epx_http_request_duration_seconds_count', 'epx_tls_handshakes_total',
  'epx_tls_handshake_failures_total', 'epx_auth_refusals_total', 'epx_programmes_total', 'epx_instructions_total',
  'epx_programme_last_accepted_timestamp_seconds', 'epx_publication_runs_total', 'epx_publication_duration_seconds_count',
  'epx_publication_sites_total', 'epx_publication_last_success_timestamp_seconds', 'epx_store_errors_total',
  'epx_event_loop_delay_seconds', 'epx_publication_tomorrow_age_seconds', 'epx_programme_tomorrow_instructions',
  'epx_bsp_last_fetch_timestamp_seconds', 'epx_certificate_expiry_timestamp_seconds', 'epx_leader', 'epx_events_written_total',
]

t.test('after a day of traffic, /metrics on its own loopback listener shows every metric with a non-zero sample', async t => {
  const epx = await startEpx(t, { config: { metrics: { enabled: true, port: 0 } } })
  const metricsUrl = epx.handle.metricsUrl!
  t.equal(metricsUrl.hostname, '127.0.0.1', 'loopback by default')
  t.not(metricsUrl.port, epx.url.port, 'not the BSP door')
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges', 'inbound:programme-soutirage'])
  await epx.handle.publish({ targetDate: '2026-11-22' })
  epx.clock.advance(60_000)

  const body = programme({ sites: 1, slots: 2, kwh: j => (j === 0 ? 900 : 1) })
  t.equal((await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body })).status, 202)
  t.equal((await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: { ...body, sites: [] } })).status, 400)
  epx.ref.runCycle()   // the solver applies the queued instruction
  // The flag is written after the 202: wait for it, then for every write queued so far,
  // so the injected fault hits the next programme and nothing else.
  for (let i = 0; i < 200 && !samples((await scrape(metricsUrl, '/metrics')).text, 'epx_instructions_total').get('{status="infeasible"}'); i++) {
    await new Promise(resolve => setTimeout(resolve, 25))
  }
  // The door's events reach this thread, and the audit records they cause are written
  // (store/audit.ts batches them for 20 ms): no other write may take the injected fault.
  await epx.caughtUp()
  await new Promise(resolve => setTimeout(resolve, 200))
  await epx.store.writeDurable(() => {})
  epx.faults.failWriteAfter = 0
  t.equal((await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme({ emittedAt: '2026-11-21T12:05:00Z' }) })).status, 503)
  t.equal((await epx.request({ path: OUTBOUND_PATH, query: { site_id: siteId(1), target_date: '2026-11-22' }, cert, token: secret })).status, 200)
  t.equal((await epx.request({ path: OUTBOUND_PATH, query: { site_id: siteId(1), target_date: '2026-11-22' }, cert, token: 'epx_' + 'A'.repeat(43) })).status, 401)
  t.equal((await epx.request({ path: '/api/v0.5/energy-programs/nowhere', cert, token: secret })).status, 404)
  // A plain-text request on the TLS port: a failed handshake.
  await new Promise<void>(resolve => {
    const s = connect(Number(epx.url.port), '127.0.0.1', () => s.end('GET / HTTP/1.1\r\nhost: x\r\n\r\n'))
    s.on('close', () => resolve()).on('error', () => resolve())
    s.resume()
  })

  // The door in its worker tells its events in batches: every one of them is here first.
  await epx.caughtUp()
  const page = await scrape(metricsUrl, '/metrics')
  t.equal(page.status, 200)
  t.match(page.type, /^text\/plain; version=0\.0\.4/)
  for (const name of EVERY_METRIC) {
    const values = [...samples(page.text, name).values()]
    t.ok(values.some(v => v > 0), `${name} has a non-zero sample`)
  }
  const requests = samples(page.text, 'epx_http_requests_total')
  t.equal(requests.get('{door="outbound",route="besoins-agreges",method="GET",status="200"}'), 1)
  t.equal(requests.get('{door="inbound",route="programme-soutirage",method="POST",status="202"}'), 1)
  t.equal(requests.get('{door="inbound",route="programme-soutirage",method="POST",status="503"}'), 1)
  t.equal(requests.get('{door="none",route="none",method="GET",status="404"}'), 1, 'a path no route takes')
  t.equal(samples(page.text, 'epx_auth_refusals_total').get('{code="UNAUTHORIZED"}'), 1)
  t.same(Object.fromEntries(samples(page.text, 'epx_programmes_total')), { '{status="accepted"}': 1, '{status="rejected"}': 2 })
  t.match(Object.fromEntries(samples(page.text, 'epx_instructions_total')), { '{status="accepted"}': 1, '{status="applied"}': 1, '{status="infeasible"}': 1 })
  t.equal(samples(page.text, 'epx_store_errors_total').get(''), 1)
  // The companies' events (DECISIONS.md "Events for BSPs"): the solver's thread's and the door's alike.
  const events = samples(page.text, 'epx_events_written_total')
  t.equal(events.get('{type="besoins_agreges.publie"}'), 3, 'one a site of acme\'s perimeter (every site)')
  t.equal(events.get('{type="perimetre.modifie"}'), 1)
  t.ok((events.get('{type="instruction.statut"}') ?? 0) >= 1, 'the programme the door saved, queued')
  t.equal(samples(page.text, 'epx_publication_tomorrow_age_seconds').get(''), 60, 'published a minute ago by the injected clock')
  t.equal(samples(page.text, 'epx_programme_tomorrow_instructions').get(''), 1)
  t.ok(samples(page.text, 'epx_tls_handshake_failures_total').size >= 1)
  t.ok(samples(page.text, 'epx_certificate_expiry_timestamp_seconds').has('{what="server_certificate"}'))
})

t.test('/healthz says alive; /readyz turns not ready when the store fails, and ready again', async t => {
  const epx = await startEpx(t, { config: { metrics: { enabled: true, port: 0 } } })
  const url = epx.handle.metricsUrl!
  t.same((await scrape(url, '/healthz')).status, 200)
  const ready = await scrape(url, '/readyz')
  t.equal(ready.status, 200)
  t.match(JSON.parse(ready.text), { status: 'ready', checks: [{ name: 'store', ok: true }, { name: 'api', ok: true }, { name: 'publication', ok: true }] })
  epx.faults.unavailable = true
  const down = await scrape(url, '/readyz')
  t.equal(down.status, 503)
  t.match(JSON.parse(down.text), { status: 'not ready', checks: [{ name: 'store', ok: false, reason: /storage unavailable/ }] })
  t.equal((await scrape(url, '/healthz')).status, 200, 'alive all the same')
  epx.faults.unavailable = false
  t.equal((await scrape(url, '/readyz')).status, 200)
  t.equal((await scrape(url, '/nope')).status, 404)
  t.equal((await request(new URL('/metrics', url), { method: 'POST' })).statusCode, 405)
})

t.test('a host that passes its own registry gets the metrics there, and back out on close', async t => {
  const epx = await startEpx(t)
  const registry = new Registry()
  const dataDir = join(epx.dataDir, 'second')
  writePki(dataDir)
  const handle = await createEpx({ ...epx.ref.host, dataDir, metricsRegistry: registry }, { api: { port: 0, inWorker: TEST_DOOR_IN_WORKER }, publish: { schedule: false } })
  t.equal(handle.metricsUrl, undefined, 'no listener of its own unless metrics.enabled')
  t.match(await registry.metrics(), /epx_http_requests_total/)
  await handle.close()
  t.notMatch(await registry.metrics(), /epx_/, 'unregistered: the host may activate epx again')
})

t.test('a metrics port already taken fails activation with EPX_LISTEN_FAILED naming the setting', async t => {
  const epx = await startEpx(t, { config: { metrics: { enabled: true, port: 0 } } })
  await t.rejects(startEpx(t, { config: { metrics: { enabled: true, port: Number(epx.handle.metricsUrl!.port) } } }),
    { code: 'EPX_LISTEN_FAILED', message: /metrics\.host \/ metrics\.port/ })
})

t.test('a scrape the registry\'s thread cannot answer is a 503 that says why, not a 500 (api.inWorker: the registry is on the solver\'s thread)', async t => {
  const listener = await listenMetrics({
    host: '127.0.0.1', port: 0, log: pino({ level: 'silent' }) as unknown as Logger,
    exposition: () => Promise.reject(new Error("the solver's thread did not answer within 8000 ms")),
    readiness: async () => [{ name: 'host', ok: false, reason: "the solver's thread did not answer within 1000 ms" }],
  })
  t.teardown(() => listener.close())
  t.same(await scrape(listener.url, '/metrics'), { status: 503, type: 'text/plain; charset=utf-8', text: "metrics unavailable: the solver's thread did not answer within 8000 ms\n" })
  const ready = await scrape(listener.url, '/readyz')
  t.equal(ready.status, 503)
  t.same(JSON.parse(ready.text), { status: 'not ready', checks: [{ name: 'host', ok: false, reason: "the solver's thread did not answer within 1000 ms" }] })
})
