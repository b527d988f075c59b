import t, { type Test } from 'tap'
import { readdirSync } from 'node:fs'
import { resolve } from 'node:path'
import { Server, connect } from 'node:net'
import { isMainThread, Worker } from 'node:worker_threads'
import pino from 'pino'
import { Agent, request } from 'undici'
import { createEpx } from '../../src/plugin.ts'
import { createReferenceHost, ManualClock } from '../../src/host/reference-host.ts'
import { loadPlugin } from '../../src/host/load-plugin.ts'
import type { Logger } from '../../src/host/contract.ts'
import type { Door } from '../../src/door/supervisor.ts'
import { addUser } from '../../src/auth/accounts.ts'
import { openRevisions } from '../../src/store/revisions.ts'
import { openAudit, type AuditRecord } from '../../src/store/audit.ts'
import { startEpx } from '../helpers/epx.ts'
import { testPki, writePki } from '../helpers/certs.ts'
import { until } from '../helpers/eventually.ts'

// With `api.inWorker`, the web console and the metrics listener serve from the API door's
// worker (docs/plugin-contract.md); what belongs to the host is asked of the solver's thread.

const IN_WORKER = { api: { inWorker: true, standbyWorker: true }, console: { enabled: true }, metrics: { enabled: true, port: 0 } }
/** Threads of this process (Linux): the door's worker is one. */
const threads = () => readdirSync('/proc/self/task').length
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))

/** Ports this thread listens on (its own libuv handles: a worker's are not among them). */
function portsListeningHere (): number[] {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles()
  return handles.filter((h): h is Server => h instanceof Server && h.listening).map(s => (s.address() as { port: number }).port)
}

function consoleClient (t: Test, url: URL) {
  const agent = new Agent({ connect: { ca: testPki().serverCa.certPem } })
  t.teardown(() => agent.close())
  const call = async (path: string, o: { cookie?: string; form?: Record<string, string> } = {}) => {
    const r = await request(new URL(path, url), {
      dispatcher: agent,
      method: o.form ? 'POST' : 'GET',
      headers: { ...(o.cookie ? { cookie: o.cookie } : {}), ...(o.form ? { 'content-type': 'application/x-www-form-urlencoded', origin: url.origin } : {}) },
      body: o.form ? new URLSearchParams(o.form).toString() : undefined,
    })
    return { status: r.statusCode, headers: r.headers, text: await r.body.text() }
  }
  const session = async (username: string, password: string) => {
    const r = await call('/login', { form: { username, password } })
    const cookie = String(r.headers['set-cookie']).split(';')[0]!
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await call('/admin/publish', { cookie })).text)?.[1] ?? ''
    return { cookie, csrf }
  }
  return { call, session }
}

// One activation with the door, the console and the metrics listener in the worker serves the next two tests.
t.test('one epx with api.inWorker', async t => {
  const epx = await startEpx(t, { config: IN_WORKER })

  t.test('the console and metrics listeners are not on the solver\'s thread with api.inWorker', async t => {
    const here = portsListeningHere()
    for (const u of [epx.url, epx.handle.consoleUrl!, epx.handle.metricsUrl!]) {
      t.notOk(here.includes(Number(u.port)), `${u.href}: no listener on this thread`)
    }
    t.equal((await request(new URL('/healthz', epx.handle.metricsUrl!))).statusCode, 200, 'the metrics listener answers')
    t.equal((await consoleClient(t, epx.handle.consoleUrl!).call('/login')).status, 200, 'the console answers')
  })

  t.test('the site chooser and "Publier maintenant" are served by the worker through the solver\'s thread', async t => {
    const solver = epx.ref.host.solver as { sites: () => Promise<unknown>; needs: (...a: any[]) => Promise<unknown> }
    const calls = { sites: [] as boolean[], needs: [] as boolean[] }
    const { sites, needs } = solver
    solver.sites = () => { calls.sites.push(isMainThread); return sites() }
    solver.needs = (...a) => { calls.needs.push(isMainThread); return needs(...a) }
    const root = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
    const web = consoleClient(t, epx.handle.consoleUrl!)
    const admin = await web.session('root', root.password)

    const chooser = await web.call('/besoins-agreges', { cookie: admin.cookie })
    t.equal(chooser.status, 200, 'the Besoins agrégés page')
    for (const s of epx.ref.sites) t.match(chooser.text, s.site_id, `${s.site_id} offered`)
    t.ok(calls.sites.length >= 1 && calls.sites.every(Boolean), 'the sites were asked of the solver on its own thread')

    const posted = await web.call('/admin/publish', { cookie: admin.cookie, form: { _csrf: admin.csrf, date: '2026-11-22' } })
    t.equal(posted.status, 303, 'Publier maintenant, then its report (post/redirect/get)')
    const published = await web.call('/admin/publish', { cookie: admin.cookie })
    t.match(published.text, '3 sites publiés pour le 22/11/2026 ; aucun en échec')
    t.equal(calls.needs.length, 3, 'the needs of each site, asked by the publisher')
    t.ok(calls.needs.every(Boolean), 'on the solver\'s thread')
    // The run is audited on the solver's thread, as the admin who clicked (not as the host).
    let run: AuditRecord | undefined
    for (let i = 0; i < 100 && !run; i++) {
      run = openAudit(epx.store).list({ action: 'publication.run' }).find(r => r.actor.kind === 'console')
      if (!run) await new Promise(resolve => setTimeout(resolve, 20))
    }
    t.same(run?.actor, { kind: 'console', user: 'root' }, 'audited as root')
    const revisions = openRevisions(epx.store, { retentionDays: 90 })
    t.teardown(() => revisions.close())
    for (const s of epx.ref.sites) t.ok(revisions.latest(s.site_id, '2026-11-22'), `${s.site_id}: published in the store`)
    await until('the console\'s log line', () => epx.logs().some(l => l.msg === 'console: publish' && l.by === 'root'))
    t.pass('the console\'s log line reached the host\'s logger')
  })
})

t.test('the console and metrics listeners are on the solver\'s thread with api.inWorker off', async t => {
  const onMain = await startEpx(t, { config: { ...IN_WORKER, api: { inWorker: false } } })
  const main = portsListeningHere()
  for (const u of [onMain.url, onMain.handle.consoleUrl!, onMain.handle.metricsUrl!]) {
    t.ok(main.includes(Number(u.port)), `${u.href}: on this thread when api.inWorker is off`)
  }
})

/**
 * A client in its own thread (this one is about to block): GET /login on the console,
 * /healthz and /readyz, then /metrics; each status is written to shared memory as it
 * arrives, so the blocked thread can read them without turning its loop.
 */
const CLIENT = `
const { workerData: w, parentPort } = require('node:worker_threads')
const https = require('node:https'), http = require('node:http')
const cells = new Int32Array(w.cells)
const get = (mod, url, opts) => new Promise(resolve => {
  mod.get(url, opts, res => { let text = ''; res.setEncoding('utf8'); res.on('data', d => { text += d }); res.on('end', () => resolve({ status: res.statusCode, text })) })
    .on('error', err => resolve({ status: -1, text: err.message }))
})
parentPort.once('message', async () => {
  const answers = {}
  const plain = [['healthz', w.metrics + 'healthz'], ['readyz', w.metrics + 'readyz']]
  answers.login = await get(https, w.console + 'login', { ca: w.ca, agent: false })
  Atomics.store(cells, 0, answers.login.status)
  for (const [name, url] of plain) answers[name] = await get(http, url, { agent: false })
  Atomics.store(cells, 1, answers.healthz.status)
  Atomics.store(cells, 2, answers.readyz.status)
  Atomics.store(cells, 3, 1)
  Atomics.notify(cells, 3)
  answers.metrics = await get(http, w.metrics + 'metrics', { agent: false })
  parentPort.postMessage(answers)
})
`

t.test('the console and /healthz answer while the solver\'s thread is blocked; /readyz says the solver\'s thread is not answering; /metrics answers once it is free', async t => {
  // The system clock: the door reads it itself (a manual clock would be asked of the blocked thread).
  const dataDir = t.testdir()
  writePki(dataDir)
  const logger = pino({ level: 'silent' }) as unknown as Logger
  const ref = createReferenceHost({ dataDir, logger, sites: 2 })
  const epx = await createEpx(ref.host, { ...IN_WORKER, api: { host: '127.0.0.1', port: 0, inWorker: true }, console: { enabled: true, host: '127.0.0.1', port: 0 }, publish: { schedule: false } })
  t.teardown(async () => { await epx.close(); await ref.close() })
  const web = consoleClient(t, epx.consoleUrl!)
  t.equal((await web.call('/login')).status, 200, 'warm')

  const cells = new SharedArrayBuffer(16)
  const flags = new Int32Array(cells)
  const client = new Worker(CLIENT, { eval: true, workerData: { cells, ca: testPki().serverCa.certPem, console: epx.consoleUrl!.href, metrics: epx.metricsUrl!.href } })
  t.teardown(() => client.terminate())
  const online = new Promise(resolve => client.once('online', resolve))
  await online
  const answers = new Promise<Record<string, { status: number; text: string }>>(resolve => client.once('message', resolve))
  client.postMessage('go')
  // This thread now blocks (no event-loop turn) until the client has its three answers, 20 s at most.
  const blockedAt = Date.now()
  Atomics.wait(flags, 3, 0, 20_000)
  const blockedMs = Date.now() - blockedAt
  t.equal(Atomics.load(flags, 3), 1, `the client had its answers while this thread was blocked (${blockedMs} ms)`)
  t.equal(Atomics.load(flags, 0), 200, 'console /login answered by the worker')
  t.equal(Atomics.load(flags, 1), 200, '/healthz answered by the worker')
  t.equal(Atomics.load(flags, 2), 503, '/readyz: not ready while the solver\'s thread cannot answer')
  const got = await answers
  t.match(JSON.parse(got.readyz!.text), { status: 'not ready', checks: [{ name: 'host', ok: false, reason: "the solver's thread did not answer within 1000 ms" }] }, 'and says why')
  t.equal(got.metrics!.status, 200, '/metrics, asked while blocked, answered once this thread was free')
  t.match(got.metrics!.text, /^# TYPE epx_http_requests_total counter$/m, 'the registry of the solver\'s thread')
  t.equal((await request(new URL('/readyz', epx.metricsUrl!))).statusCode, 200, 'ready again')
})

t.test('a killed worker brings the console and the metrics listener back on the same ports, sessions kept; close() leaves no port open', async t => {
  let door!: Door
  const before = threads()
  const epx = await startEpx(t, { config: IN_WORKER, onDoor: d => { door = d } })
  const consoleUrl = epx.handle.consoleUrl!
  const metricsUrl = epx.handle.metricsUrl!
  const root = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
  const web = consoleClient(t, consoleUrl)
  const admin = await web.session('root', root.password)

  const first = door.worker!
  await first.terminate()
  await until('the worker back', () => door.up && door.worker !== first)
  t.equal(door.consoleUrl?.href, consoleUrl.href, 'the console\'s URL unchanged')
  t.equal(door.metricsUrl?.href, metricsUrl.href, 'the metrics listener\'s URL unchanged')
  t.equal((await web.call('/admin/publish', { cookie: admin.cookie })).status, 200, 'the console answers on the same URL, the session still valid')
  const metrics = await request(new URL('/metrics', metricsUrl))
  t.equal(metrics.statusCode, 200, '/metrics on the same URL')
  t.match(await metrics.body.text(), /epx_http_requests_total/, 'the registry\'s text')
  t.equal((await request(new URL('/readyz', metricsUrl))).statusCode, 200, 'ready')

  await epx.close()
  for (const u of [consoleUrl, metricsUrl]) {
    const refused = await new Promise<boolean>(resolve => {
      const s = connect(Number(u.port), '127.0.0.1')
      s.once('connect', () => { s.destroy(); resolve(false) }).once('error', () => resolve(true))
    })
    t.ok(refused, `${u.href}: closed`)
  }
  t.notOk(door.worker, 'no worker left')
  await sleep(300)
  t.ok(threads() <= before, `no thread left (${threads()} now, ${before} before)`)
})

t.test('activate/close cycles with the console and metrics in the worker leave no thread, descriptor or port behind (the built plugin)', async t => {
  const dataDir = t.testdir()
  writePki(dataDir)
  const ref = createReferenceHost({ dataDir, clock: new ManualClock('2026-11-21T12:30:00Z'), sites: 1 })
  t.teardown(() => ref.close())
  const agent = new Agent({ connect: { ca: testPki().serverCa.certPem } })
  const config = { ...IN_WORKER, api: { host: '127.0.0.1', port: 0, inWorker: true }, console: { enabled: true, host: '127.0.0.1', port: 0 }, publish: { schedule: false } }
  const statuses: number[] = []
  const cycle = async () => {
    // Through the manifest, as a solver loads it: dist/, the door's worker built beside it.
    const { handle } = await loadPlugin(resolve(import.meta.dirname, '../..'), ref.host, config)
    for (const url of [new URL('/login', handle.consoleUrl), new URL('/metrics', handle.metricsUrl)]) {
      const res = await request(url, { dispatcher: agent, reset: true })
      await res.body.dump()
      statuses.push(res.statusCode)
    }
    await handle.close()
  }
  await cycle()   // warm-up: libuv's and lmdb-js's own threads start once
  const resources = () => process.getActiveResourcesInfo().filter(r => !r.startsWith('FSReq') && r !== 'Timeout').sort()
  const now = () => ({ threads: threads(), fds: readdirSync('/proc/self/fd').length, resources: resources() })
  const before = now()
  for (let i = 0; i < 2; i++) await cycle()   // the door's own 100 cycles: npm run test:door-cycles
  await agent.close()
  let after = now()
  for (let i = 0; i < 100 && (after.threads > before.threads || after.fds > before.fds); i++) {
    await sleep(20)
    after = now()
  }
  t.same([...new Set(statuses)], [200], 'every cycle served the console and /metrics')
  t.ok(after.threads <= before.threads, `threads: ${before.threads} before, ${after.threads} after`)
  t.ok(after.fds <= before.fds, `descriptors: ${before.fds} before, ${after.fds} after`)
  t.same(after.resources.filter(r => r === 'MessagePort' || r === 'Worker' || r === 'TCPServerWrap'), [], 'no worker, message port or listener left')
})
