import t from 'tap'
import { join } from 'node:path'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { testPki } from '../helpers/certs.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { createBspClient } from '../../src/bsp/client.ts'
import { pushProgramme } from '../../src/bsp/push.ts'
import { checkProgramme } from '../../src/bsp/check.ts'

async function inboundBsp (t: Parameters<typeof startEpx>[0], epx: TestEpx) {
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const client = createBspClient({ url: epx.url, cert: cert.certPem, key: cert.keyPem, ca: testPki().serverCa.certPem, token: secret })
  t.teardown(() => client.close())
  return { client, cert, token: secret }
}

const noWait = { now: () => new Date(), sleep: async () => {}, random: () => 0 }

t.test('a good programme is received: 202 and one instruction id per site', async t => {
  const epx = await startEpx(t, { dataDir: join(t.testdir(), 'epx') })
  const { client } = await inboundBsp(t, epx)
  const r = await pushProgramme({ client, programme: programme({ sites: 2 }), timing: noWait })
  t.match(r, {
    kind: 'received',
    receipt: {
      status: 'received', count: 2,
      instructions: [
        { instruction_id: 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z', site_id: siteId(1), periods_count: 96, status: 'queued' },
        { instruction_id: 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z', site_id: siteId(2), periods_count: 96, status: 'queued' },
      ],
    },
  })
})

t.test('an emitted_at ahead of this machine\'s clock by more than the server\'s skew is not sent, saying why', async t => {
  const epx = await startEpx(t, { dataDir: join(t.testdir(), 'epx') })
  const { client } = await inboundBsp(t, epx)
  const now = () => new Date('2026-11-21T11:50:00Z')
  const r = await pushProgramme({ client, programme: programme(), timing: noWait, now })
  t.same(Object.keys(r.kind === 'invalid' ? r.details : {}), ['/emitted_at'])
  t.match(r, { kind: 'invalid', details: { '/emitted_at': /^is 600 s ahead of this machine's clock \(2026-11-21T11:50:00\.000Z\); at most 300 s ahead is accepted/ } })
  t.equal(epx.ref.pending().length, 0, 'nothing sent')
  t.match(await pushProgramme({ client, programme: programme(), timing: noWait, now, maxClockSkewSeconds: 900 }), { kind: 'received' }, 'within a wider skew')
  t.match(await pushProgramme({ client, programme: programme(), timing: noWait, now: () => new Date('2026-11-21T11:56:00Z') }), { kind: 'received' }, 'within 300 s')
})

t.test('a broken programme: the same details locally as the server answers, and nothing is sent', async t => {
  const epx = await startEpx(t, { dataDir: join(t.testdir(), 'epx') })
  const { cert, token } = await inboundBsp(t, epx)
  const broken = programme({ slots: 6 }) as any
  broken.sites[0].energie_programmee[1].debut_utc = '2026-11-21T23:20:00Z'
  broken.sites[0].energie_programmee[3].energie_kwh = -2
  broken.sites[0].energie_programmee[4].fin_utc = '2026-11-22T00:15:00+01:00'
  broken.target_date = '2026-11-31'
  delete broken.schema_version
  const server = await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token, body: broken })
  t.equal(server.status, 400)
  const local = checkProgramme(broken)
  t.notOk(local.ok)
  t.same(!local.ok && local.details, server.json().error.details, 'every pointer and message identical')
  t.ok(Object.keys(server.json().error.details).length >= 4)

  let posted = 0
  const counting = { ...createBspClient({ url: epx.url, cert: cert.certPem, key: cert.keyPem, ca: testPki().serverCa.certPem, token }) }
  const real = counting.postProgramme
  counting.postProgramme = b => { posted++; return real(b) }
  t.teardown(() => counting.close())
  const r = await pushProgramme({ client: counting, programme: broken, timing: noWait })
  t.same(r, { kind: 'invalid', details: server.json().error.details })
  t.equal(posted, 0, 'not sent')
})

t.test('a 503 is retried after Retry-After, the same emitted_at giving the same ids', async t => {
  const epx = await startEpx(t, { dataDir: join(t.testdir(), 'epx') })
  const { client } = await inboundBsp(t, epx)
  epx.faults.unavailable = true
  const waits: number[] = []
  const r = await pushProgramme({
    client, programme: programme(), onRetry: (_why, ms) => waits.push(ms),
    timing: { now: () => new Date(), random: () => 1, sleep: async () => { if (waits.length === 2) epx.faults.unavailable = false } },
  })
  t.match(r, { kind: 'received', receipt: { count: 1 } })
  t.same(waits, [6000, 6000], 'Retry-After: 5, plus 20 % jitter at most')

  epx.faults.unavailable = true
  const gaveUp = await pushProgramme({ client, programme: programme(), attempts: 2, timing: noWait })
  t.match(gaveUp, { kind: 'retry', status: 503 })
})

t.test('a refusal is reported with the server\'s code and not retried', async t => {
  const epx = await startEpx(t, { dataDir: join(t.testdir(), 'epx') })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const client = createBspClient({ url: epx.url, cert: cert.certPem, key: cert.keyPem, ca: testPki().serverCa.certPem, token: secret })
  t.teardown(() => client.close())
  const r = await pushProgramme({ client, programme: programme(), timing: noWait })
  t.match(r, { kind: 'refused', status: 403, code: 'SCOPE_DENIED' })
})

t.test('a 429 over the company\'s POST budget is retried after Retry-After, then received', async t => {
  const epx = await startEpx(t, { dataDir: join(t.testdir(), 'epx'), config: { api: { rateLimit: { post: { perSecond: 0.25, burst: 1 } } } } })
  const { client } = await inboundBsp(t, epx)
  const waits: number[] = []
  const timing = { now: () => epx.clock.now(), random: () => 0, sleep: async (ms: number) => { epx.clock.advance(ms) } }
  t.match(await pushProgramme({ client, programme: programme(), timing }), { kind: 'received' })
  const r = await pushProgramme({ client, programme: programme({ emittedAt: '2026-11-21T12:29:00Z' }), onRetry: (why, ms) => waits.push(ms), timing })
  t.match(r, { kind: 'received', receipt: { count: 1 } })
  t.same(waits, [4000], 'one wait, of Retry-After: 4 (a POST every 4 s), no jitter drawn here')
  const gaveUp = await pushProgramme({ client, programme: programme(), attempts: 1, timing })
  t.match(gaveUp, { kind: 'retry', status: 429, retryAfterSecs: 4 })
})

t.test('a 429 over the company\'s storage quota is not retried: the answer says to wait until the next Paris day', async t => {
  const size = Buffer.byteLength(JSON.stringify(programme()))
  const epx = await startEpx(t, { dataDir: join(t.testdir(), 'epx'), config: { inbound: { maxBytesPerCompanyPerDay: size } } })
  const { client } = await inboundBsp(t, epx)
  const waits: number[] = []
  t.match(await pushProgramme({ client, programme: programme(), timing: noWait }), { kind: 'received' }, 'the day\'s one programme')
  const r = await pushProgramme({ client, programme: programme({ emittedAt: '2026-11-21T12:29:00Z' }), onRetry: (why, ms) => waits.push(ms), timing: noWait })
  // 12:30 UTC on 21 November: the next Paris day starts at 23:00 UTC.
  t.match(r, { kind: 'retry', status: 429, code: 'QUOTA_EXCEEDED', retryAfterSecs: 37800, detail: /over its storage quota/ })
  t.same(waits, [], 'no wait, no second try')
})
