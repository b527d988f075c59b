import t, { type Test } from 'tap'
import { appendFileSync } from 'node:fs'
import { Agent, request } from 'undici'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme } from '../helpers/programme.ts'
import { testPki, type KeyPairPem } from '../helpers/certs.ts'
import { LONG, SYSTEM_ONLY, sized } from '../helpers/long.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import type { Door } from '../../src/door/supervisor.ts'
import type { DoorFault } from '../../src/door/protocol.ts'

// An operator's worst day: BSPs keep GETting and POSTing on keep-alive connections while
// the door's thread dies, again and again, by every way a thread can die. The host (this
// process) must live through every one: an abort of the process ends this test file.
// `npm test` runs one fault of three kinds (the system tier all five), one with the console and
// the metrics listener beside the door, and close() racing two kinds; EPX_LONG=1 (helpers/long.ts) three of each,
// every kind beside them and racing close(); `npm run campaign` (door-faults) runs 20 (EPX_DOOR_FAULTS, EPX_DOOR_SIDE_FAULTS with
// the console and the metrics listener).
const FAULTS = Number(process.env.EPX_DOOR_FAULTS ?? sized(1, 3))
const KINDS = (process.env.EPX_DOOR_FAULT_KINDS?.split(',') ?? ['loop', 'handler', 'rejection', 'terminate', 'heap']) as Array<DoorFault | 'terminate'>
/** The kinds run with the console and the metrics listener (they share the thread whatever kills it). */
const SIDE_KINDS = process.env.EPX_DOOR_FAULT_KINDS || process.env.EPX_DOOR_SIDE_FAULTS || LONG ? KINDS : KINDS.filter(k => k === 'loop')
/** The kinds a close() races: an exception on the loop and a thread ended from outside, or every one. */
const RACE_KINDS = LONG ? ['loop', 'handler', 'rejection', 'terminate'] as const : ['loop', 'terminate'] as const
/** Keep-alive connections, each a client sending GETs and POSTs one after the other. */
const CLIENTS = 4
/**
 * "The door back within a second" (README, "Plugin contract"): `npm run campaign` holds
 * it to that (EPX_DOOR_BACK_MS=1000), on a quiet machine. Under `npm test` the machine runs
 * other test files beside this one, and a worker's start (~0.2 s of CPU) takes what CPU is
 * left (seen: 11 s with three files and a campaign on 2 cores): there the bound is against
 * a door that stays down.
 */
const BACK_MS = Number(process.env.EPX_DOOR_BACK_MS ?? 20_000)
/** The host's thread may pause (its own collections, a starved machine), never stop. */
const HOST_PAUSE_MS = 5000
const SIDE_FAULTS = Number(process.env.EPX_DOOR_SIDE_FAULTS ?? 1)
t.setTimeout(120_000 + (FAULTS * KINDS.length + SIDE_FAULTS * SIDE_KINDS.length) * 25_000)

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))

interface Ack { readonly id: string; readonly siteId: string }

/** One BSP's client: one keep-alive connection, a GET then a POST, again, until stopped. */
function client (url: () => URL, cert: KeyPairPem, token: string, n: number, acks: Ack[], statuses: Map<number, number>) {
  const agent = new Agent({ connections: 1, pipelining: 1, connect: { ca: testPki().serverCa.certPem, cert: cert.certPem, key: cert.keyPem } })
  let running = true
  let seq = 0
  const count = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1)
  const headers = { authorization: `Bearer ${token}` }
  const loop = (async () => {
    while (running) {
      try {
        const get = await request(new URL(`${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-22`, url()), { dispatcher: agent, headers })
        await get.body.dump()
        count(get.statusCode)
        // Each client its own site and an emitted_at of its own, always later: every one effective.
        const body = programme({ sites: [`PRM3000000000000${n + 2}`], emittedAt: new Date(Date.UTC(2026, 10, 21, 0, 0, 0) + ++seq * 1000).toISOString().replace('.000Z', 'Z') })
        const post = await request(new URL(INBOUND_PATH, url()), {
          method: 'POST', dispatcher: agent, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body),
        })
        const text = await post.body.text()
        count(post.statusCode)
        if (post.statusCode === 202) {
          const i = JSON.parse(text).instructions[0]
          acks.push({ id: i.instruction_id, siteId: i.site_id })
        }
      } catch {
        count(0)   // the connection closed under it: the fault, or the door down
        await sleep(5)
      }
    }
  })()
  let stopped: Promise<void> | undefined
  return { stop: () => stopped ??= (async () => { running = false; await loop; await agent.close() })() }
}

/** Makes the door's thread die, by `kind`. */
async function fault (door: Door, kind: DoorFault | 'terminate'): Promise<void> {
  const w = door.worker!
  if (kind === 'terminate') await w.terminate()
  else w.postMessage({ type: 'crash', how: kind })
}

/** A GET on a fresh connection answers `status`. */
async function answers (url: URL, status: number, agent: Agent, headers: Record<string, string> = {}): Promise<boolean> {
  try {
    const res = await request(url, { dispatcher: agent, headers: { ...headers, connection: 'close' }, headersTimeout: 1000, bodyTimeout: 1000 })
    await res.body.dump()
    return res.statusCode === status
  } catch { return false }
}

/** A page or a scrape again and again on one keep-alive connection (the console's, the metrics'). */
function reader (url: URL, agent: Agent, statuses: Map<number, number>) {
  let running = true
  const loop = (async () => {
    while (running) {
      try {
        const res = await request(url, { dispatcher: agent })
        await res.body.dump()
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      } catch {
        statuses.set(0, (statuses.get(0) ?? 0) + 1)
        await sleep(5)
      }
    }
  })()
  return { async stop () { running = false; await loop } }
}

async function worstDay (t: Test, kind: DoorFault | 'terminate', faults: number, side: boolean) {
  let door!: Door
  // The heap's kind: a door with a small heap, so its leak reaches the guard in about a second.
  const config = side
    ? { api: { inWorker: true, standbyWorker: true }, console: { enabled: true }, metrics: { enabled: true, host: '127.0.0.1', port: 0 } }
    : { api: { inWorker: true, standbyWorker: true } }
  // A site for each client (each posts for its own), besides the one they read.
  const epx = await startEpx(t, { config, sites: CLIENTS + 1, onDoor: d => { door = d }, ...(kind === 'heap' ? { doorHeapMb: 96 } : {}) })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage', 'outbound:besoins-agreges'])
  const acks: Ack[] = []
  const statuses = new Map<number, number>()
  const clients = Array.from({ length: CLIENTS }, (_, n) => client(() => epx.url, cert, secret, n, acks, statuses))
  const probe = new Agent({ connect: { ca: testPki().serverCa.certPem, cert: cert.certPem, key: cert.keyPem } })
  t.teardown(() => probe.close())
  const outbound = new URL(`${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-22`, epx.url)
  const auth = { authorization: `Bearer ${secret}` }
  // The console's login page and the metrics listener's liveness, read on keep-alive
  // connections all along (a scrape of /metrics asks the solver's thread: /healthz does not).
  const sideAgent = new Agent({ connect: { ca: testPki().serverCa.certPem } })
  t.teardown(() => sideAgent.close())
  const sideUrls = side ? [new URL('/login', epx.handle.consoleUrl), new URL('/healthz', epx.handle.metricsUrl)] : []
  const sideStatuses = new Map<number, number>()
  const readers = sideUrls.map(u => reader(u, sideAgent, sideStatuses))
  // Stopped even when an assertion throws: a client left looping keeps this process alive.
  t.teardown(() => Promise.all([...clients, ...readers].map(c => c.stop())))
  const back = async () => await answers(outbound, 404, probe, auth) && (await Promise.all(sideUrls.map(u => answers(u, 200, sideAgent)))).every(Boolean)
  const backs: number[] = []
  // The solver's thread: it keeps turning through every fault (an abort would end this file).
  let last = performance.now()
  let longestPause = 0
  const tick = setInterval(() => { const now = performance.now(); longestPause = Math.max(longestPause, now - last); last = now }, 20)
  t.teardown(() => clearInterval(tick))
  const standbyMs: number[] = []
  for (let i = 0; i < faults; i++) {
    // Each fault a new incident: the door's standby (api.standbyWorker) open, as it is a
    // few hundred ms after a takeover on a machine that is not saturated (how long it took is reported).
    const waitFrom = Date.now()
    while (!door.standing && Date.now() - waitFrom < 20_000) await sleep(20)
    standbyMs.push(Date.now() - waitFrom)
    // Traffic flowing, requests in every state of their parse, then the fault.
    const acked = acks.length
    const end = Date.now() + 5000
    while (acks.length < acked + CLIENTS && Date.now() < end) await sleep(10)
    const first = door.worker!
    let at = Date.now()
    await fault(door, kind)
    // The supervisor hears of it at once (a leak takes a while to reach the heap's guard).
    while (door.worker === first && door.up && Date.now() - at < 30_000) await sleep(5)
    if (kind === 'heap') at = Date.now()
    while (door.worker === first || !(await back())) {
      if (Date.now() - at > 30_000) break
      await sleep(10)
    }
    backs.push(Date.now() - at)
    // A worker up a second has earned a fresh backoff (door/supervisor.ts): the next fault
    // is one of a new incident, not of a crash loop.
    if (i + 1 < faults) await sleep(1000)
  }
  // After the last one, the traffic goes on through the new door until each client has one more 202.
  const acked = acks.length
  const end = Date.now() + 5000
  while (acks.length < acked + CLIENTS && Date.now() < end) await sleep(10)
  await Promise.all([...clients, ...readers].map(c => c.stop()))
  clearInterval(tick)
  t.ok(longestPause < HOST_PAUSE_MS, `the host's thread kept turning through the faults (longest pause ${Math.round(longestPause)} ms)`)
  const worst = Math.max(...backs)
  t.ok(worst < BACK_MS, `${faults} faults by ${kind}: the door${side ? ', the console and the metrics listener' : ''} answered again after ${backs.join(', ')} ms (worst ${worst})`)
  if (side) t.ok(sideStatuses.get(200)! > faults, `the console and the metrics listener had answers all along: ${JSON.stringify(Object.fromEntries(sideStatuses))}`)
  if (side) t.notOk([...sideStatuses.keys()].some(s => s >= 500), 'no 5xx from the console or the metrics listener')
  t.ok(statuses.get(202)! > faults, `the clients had answers all along: ${JSON.stringify(Object.fromEntries(statuses))}`)
  t.notOk([...statuses.keys()].some(s => s >= 500), 'no 5xx: a request in flight had its connection closed or its answer')
  const instructions = openInstructions(epx.store)
  const lost = acks.filter(a => !instructions.get(a.id, a.siteId))
  t.same(lost, [], `every one of the ${acks.length} programmes acknowledged with a 202 is in the store`)
  const errors = epx.logs().filter(l => l.level === 50)
  t.equal(errors.length, faults, `one error line a fault (${errors.length} for ${faults}${errors.length === faults ? '' : `: ${JSON.stringify(errors.map(l => [l.msg, l.err?.message]))}`})`)
  // A faulted worker ends itself; one terminated after its bound was stuck (and kept its ports a while).
  const stuck = epx.logs().filter(l => /did not end/.test(String(l.msg)))
  t.equal(stuck.length, 0, `no faulted worker had to be terminated (${stuck.length}${stuck.length ? `; loop busy / CPU ms in the bound: ${stuck.map(l => `${l.loopBusy} / ${l.cpuMs}`).join(', ')}` : ''})`)
  // `npm run campaign` reads each kind's figures (test/campaign/door-faults.ts).
  await epx.close()
  t.equal(door.threads, 0, 'every thread the door started has ended once it closed')
  const report = process.env.EPX_DOOR_FAULTS_REPORT
  if (report) appendFileSync(report, JSON.stringify({ kind, side, faults, backMs: backs, acks: acks.length, lost: lost.length, errorLines: errors.length, stuck: stuck.length, standbyMs, statuses: Object.fromEntries(statuses), sideStatuses: Object.fromEntries(sideStatuses) }) + '\n')
}

/**
 * An exception in a request's handler and an unhandled rejection end the thread as one on its
 * loop does, as the supervisor sees it (the worker's `error` event): the system tier runs them.
 */
const SAME_AS_LOOP: readonly string[] = process.env.EPX_DOOR_FAULT_KINDS ? [] : ['handler', 'rejection']
for (const kind of KINDS) t.test(`the door's thread dies by ${kind} ${FAULTS} times under keep-alive GETs and POSTs: the host lives, the door is back within a second, every 202 is stored`, SAME_AS_LOOP.includes(kind) ? SYSTEM_ONLY : {}, t => worstDay(t, kind, FAULTS, false))
// The console and the metrics listener share the door's thread: they die with it and are back with it.
for (const kind of SIDE_KINDS) t.test(`with the console and the metrics listener in the door's thread, it dies by ${kind} ${SIDE_FAULTS} times: all three are back, the host lives, every 202 is stored`, t => worstDay(t, kind, SIDE_FAULTS, true))

t.test('close() racing a fault, under traffic: it resolves, the host lives, no worker is left, every 202 is stored', async t => {
  for (const kind of RACE_KINDS) {
    let door!: Door
    const epx = await startEpx(t, { config: { api: { inWorker: true, standbyWorker: true } }, onDoor: d => { door = d } })
    const { cert } = await epx.addCompany('acme')
    const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage', 'outbound:besoins-agreges'])
    const acks: Ack[] = []
    const statuses = new Map<number, number>()
    const clients = Array.from({ length: CLIENTS }, (_, n) => client(() => epx.url, cert, secret, n, acks, statuses))
    const end = Date.now() + 5000
    while (acks.length < CLIENTS && Date.now() < end) await sleep(10)
    const worker = door.worker!
    const gone = new Promise<void>(resolve => worker.once('exit', () => resolve()))
    void fault(door, kind)
    await epx.handle.close()
    await gone
    t.notOk(door.worker, `${kind}: no worker after close()`)
    t.equal(door.threads, 0, `${kind}: every thread the door started (its standby too) has ended once close() resolved`)
    await Promise.all(clients.map(c => c.stop()))
    await epx.restart()
    const instructions = openInstructions(epx.store)
    t.same(acks.filter(a => !instructions.get(a.id, a.siteId)), [], `${kind}: every one of the ${acks.length} 202s is in the store`)
    await epx.close()
  }
})
