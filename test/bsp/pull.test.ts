import t from 'tap'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { testPki } from '../helpers/certs.ts'
import { siteId } from '../helpers/programme.ts'
import { createBspClient } from '../../src/bsp/client.ts'
import { documentFile, pullRound, STATE_FILE } from '../../src/bsp/pull.ts'
import type { Timing } from '../../src/bsp/timing.ts'

const DAY = '2026-11-22'

/** A BSP with its certificate and an outbound token, on a real epx. */
async function bsp (t: Parameters<typeof startEpx>[0], epx: TestEpx, scopes: Array<'outbound:besoins-agreges' | 'inbound:programme-soutirage'> = ['outbound:besoins-agreges']) {
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', scopes)
  const client = createBspClient({ url: epx.url, cert: cert.certPem, key: cert.keyPem, ca: testPki().serverCa.certPem, token: secret })
  t.teardown(() => client.close())
  return { client, cert, token: secret }
}

/** Sleeps recorded, not slept; `during` runs inside each sleep (the world changes meanwhile). */
function fakeTiming (epx: TestEpx, during: (ms: number) => void = () => {}): Timing & { slept: number[] } {
  const slept: number[] = []
  return {
    slept,
    now: () => epx.clock.now(),
    sleep: async ms => { slept.push(ms); epx.clock.advance(Math.max(ms, 0)); during(ms) },
    random: () => 0.5,
  }
}

t.test('a round fetches, the next gets 304, a republication is picked up on the round after', async t => {
  const root = t.testdir()
  const epx = await startEpx(t, { sites: 2, dataDir: join(root, 'epx') })
  const { client } = await bsp(t, epx)
  const dir = join(root, 'out')
  const sites = [siteId(1), siteId(2)]
  await epx.handle.publish({ targetDate: DAY })
  const timing = fakeTiming(epx)

  const first = await pullRound({ client, sites, targetDate: DAY, dir, timing })
  t.same(first.counts, { fetched: 2, unchanged: 0, missing: 0, failed: 0 })
  const file = documentFile(dir, siteId(1), DAY)
  const doc = JSON.parse(readFileSync(file, 'utf8'))
  t.equal(doc.sites[0].site_id, siteId(1))
  const state = JSON.parse(readFileSync(join(dir, STATE_FILE), 'utf8'))
  t.match(state[`${siteId(1)}/${DAY}`], { etag: /^W\/"/, lastModified: /GMT$/, emittedAt: doc.emitted_at }, 'validators and emitted_at kept for audit')

  const second = await pullRound({ client, sites, targetDate: DAY, dir, timing })
  t.same(second.counts, { fetched: 0, unchanged: 2, missing: 0, failed: 0 }, 'If-None-Match sent: 304 for both')

  writeFileSync(file, 'kept as is on a 304')
  epx.clock.advance(60_000)
  await epx.handle.publish({ targetDate: DAY, siteIds: [siteId(1)] })
  const third = await pullRound({ client, sites, targetDate: DAY, dir, timing })
  t.same(third.counts, { fetched: 1, unchanged: 1, missing: 0, failed: 0 })
  const next = JSON.parse(readFileSync(file, 'utf8'))
  t.ok(next.emitted_at > doc.emitted_at, 'the new revision replaced the file')
  t.same(timing.slept, [], 'no waiting when all went well')
})

t.test('nothing published is "missing" with the server\'s Retry-After; a lost file is fetched again', async t => {
  const root = t.testdir()
  const epx = await startEpx(t, { dataDir: join(root, 'epx') })
  const { client } = await bsp(t, epx)
  const dir = join(root, 'out')
  const timing = fakeTiming(epx)
  const missing = await pullRound({ client, sites: [siteId(1)], targetDate: DAY, dir, timing })
  t.same(missing.outcomes, [{ siteId: siteId(1), result: 'missing', retryAfterSecs: 300 }])
  t.notOk(existsSync(documentFile(dir, siteId(1), DAY)), 'nothing written on a 404')

  await epx.handle.publish({ targetDate: DAY })
  await pullRound({ client, sites: [siteId(1)], targetDate: DAY, dir, timing })
  const { rmSync } = await import('node:fs')
  rmSync(documentFile(dir, siteId(1), DAY))
  const again = await pullRound({ client, sites: [siteId(1)], targetDate: DAY, dir, timing })
  t.equal(again.counts.fetched, 1, 'no validators sent for a file that is gone, so no 304')
})

t.test('a 503 is retried after Retry-After with jitter; refusals are not retried', async t => {
  const root = t.testdir()
  const epx = await startEpx(t, { dataDir: join(root, 'epx') })
  const { client } = await bsp(t, epx)
  await epx.handle.publish({ targetDate: DAY })
  const dir = join(root, 'out')
  epx.faults.unavailable = true
  const timing = fakeTiming(epx, () => { if (timing.slept.length === 2) epx.faults.unavailable = false })
  const r = await pullRound({ client, sites: [siteId(1)], targetDate: DAY, dir, timing })
  t.equal(r.counts.fetched, 1, 'fetched once the store is back')
  t.equal(timing.slept.length, 2)
  t.ok(timing.slept.every(ms => ms >= 5000 && ms <= 6000), `never sooner than Retry-After: 5, jitter at most 20 % (${timing.slept})`)

  epx.faults.unavailable = true
  const down = await pullRound({ client, sites: [siteId(1)], targetDate: DAY, dir, timing: fakeTiming(epx), attempts: 2 })
  t.match(down.outcomes[0], { result: 'failed', why: /^503: .*after 2 tries/ })
  epx.faults.unavailable = false

  const { cert: other } = await epx.addCompany('other')
  const wrong = createBspClient({ url: epx.url, cert: other.certPem, key: other.keyPem, ca: testPki().serverCa.certPem, token: 'epx_' + 'B'.repeat(43) })
  t.teardown(() => wrong.close())
  const sleeps = fakeTiming(epx)
  const refused = await pullRound({ client: wrong, sites: [siteId(1)], targetDate: DAY, dir: join(root, 'out2'), timing: sleeps })
  t.match(refused.outcomes[0], { result: 'failed', why: /^401: / })
  t.same(sleeps.slept, [], 'a 401 is not retried')
})

t.test('a network error is retried with backoff, then reported', async t => {
  const root = t.testdir()
  const epx = await startEpx(t, { dataDir: join(root, 'epx') })
  const { cert, token } = await bsp(t, epx)
  const url = new URL(epx.url)
  await epx.close()
  const client = createBspClient({ url, cert: cert.certPem, key: cert.keyPem, ca: testPki().serverCa.certPem, token })
  t.teardown(() => client.close())
  const timing = fakeTiming(epx)
  const r = await pullRound({ client, sites: [siteId(1)], targetDate: DAY, dir: join(root, 'out2'), timing, attempts: 3 })
  t.match(r.outcomes[0], { result: 'failed', why: /^network: .*after 3 tries/ })
  t.same(timing.slept, [1100, 2200], 'exponential backoff with jitter')
})

t.test('a 429 over the company\'s GET budget is waited out as its Retry-After says, then fetched in the same round', async t => {
  const root = t.testdir()
  const epx = await startEpx(t, { sites: 2, dataDir: join(root, 'epx'), config: { api: { rateLimit: { get: { perSecond: 0.2, burst: 1 } } } } })
  const { client } = await bsp(t, epx)
  await epx.handle.publish({ targetDate: DAY })
  const timing = fakeTiming(epx)
  const r = await pullRound({ client, sites: [siteId(1), siteId(2)], targetDate: DAY, dir: join(root, 'out'), timing })
  t.equal(r.counts.fetched, 2, 'both sites, the second after its wait')
  t.equal(timing.slept.length, 1, 'one wait')
  t.ok(timing.slept[0]! >= 5000, `never sooner than Retry-After: 5 (one request every 5 s) (${timing.slept})`)
})
