import t from 'tap'
import { join, resolve } from 'node:path'
import { existsSync, readdirSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Agent, request, type Dispatcher } from 'undici'
import { conformance } from '../helpers/openapi.ts'
import { loadPlugin } from '../../src/host/load-plugin.ts'
import { createReferenceHost } from '../../src/host/reference-host.ts'
import { createEpx } from '../../src/plugin.ts'
import { clientCert, testPki, writePki } from '../helpers/certs.ts'
import { TEST_DOOR_IN_WORKER } from '../helpers/epx.ts'
import { SYSTEM_ONLY, sized } from '../helpers/long.ts'
import { ManualClock } from '../../src/host/reference-host.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openTokens } from '../../src/store/tokens.ts'
import { hashToken, newTokenId, newTokenSecret } from '../../src/auth/tokens.ts'

const root = resolve(import.meta.dirname, '../..')
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Handles node keeps for the process itself, by kind; a leak shows up as a new entry. */
function resources (): Record<string, number> {
  const count: Record<string, number> = {}
  // File-system requests in flight come and go with unrelated work (tap's own output).
  for (const r of process.getActiveResourcesInfo()) if (!r.startsWith('FSReq')) count[r] = (count[r] ?? 0) + 1
  return count
}

/**
 * Handles present now that were not before (more of a kind counts). Short-lived timers
 * come and go (lmdb-js renews its read transaction on a timer), and a worker thread's
 * port goes only once the thread has ended (a second or more on a loaded machine), so
 * this polls for up to 5 s before it reports anything: a leak is a handle that stays.
 */
async function leakedSince (before: Record<string, number>): Promise<Record<string, number>> {
  let extra: Record<string, number> = {}
  for (let i = 0; i < 250; i++) {
    extra = {}
    for (const [kind, n] of Object.entries(resources())) if (n > (before[kind] ?? 0)) extra[kind] = n - (before[kind] ?? 0)
    if (Object.keys(extra).length === 0) break
    await new Promise(r => setTimeout(r, 20))
  }
  return extra
}

/** Open file descriptors of this process (Linux). */
const openFds = () => readdirSync('/proc/self/fd').length

// The door where startEpx puts it (helpers/epx.ts): 28 activations (EPX_LONG) each starting a worker
// take this file from ~15 s to ~95 s; the worker's own cycles are door-worker.test.ts's.
const config = { api: { host: '127.0.0.1', port: 0, inWorker: TEST_DOOR_IN_WORKER }, publish: { schedule: true } }

t.test('close() is idempotent and the second call waits for the same teardown', async t => {
  const dataDir = t.testdir()
  writePki(dataDir)
  const ref = createReferenceHost({ dataDir })
  const { handle } = await loadPlugin(root, ref.host, config)
  const a = handle.close()
  const b = handle.close()
  t.equal(a, b, 'the same promise')
  await a
  await t.resolves(handle.close(), 'a third call after the end resolves too')
})

/** Activations after the warm-up: a leak of a handle or a descriptor shows at the first; heap growth needs more. */
const CYCLES = sized(5, 25)

// The system tier: a run of cycles; close()'s teardown is the other tests' here, and npm run test:door-cycles runs 100.
t.test('activating and closing many times in one process leaves handles, descriptors and memory flat', SYSTEM_ONLY, async t => {
  const dataDir = t.testdir()
  writePki(dataDir)
  const ref = createReferenceHost({ dataDir, clock: new ManualClock('2026-11-21T12:30:00Z'), sites: 2 })
  // A BSP with a certificate and a token, so every cycle serves a real 200 from the store.
  const seed = openStore(join(dataDir, 'epx.lmdb'))
  await openCompanies(seed).add({ id: 'acme', name: 'ACME', status: 'active', certSubject: 'CN=acme,O=acme', perimeter: 'all', createdAt: '2026-11-21T00:00:00Z' })
  const secret = newTokenSecret()
  await openTokens(seed).add({ id: newTokenId(), hash: hashToken(secret), companyId: 'acme', scopes: ['outbound:besoins-agreges'], createdAt: '2026-11-21T00:00:00Z' })
  await seed.close()
  const cert = clientCert('CN=acme,O=acme')
  const site = ref.sites[0]!.site_id
  const cycle = async (agent: Dispatcher) => {
    const { handle } = await loadPlugin(root, ref.host, config)
    await handle.publish({ targetDate: '2026-11-22', siteIds: [site] })
    // A real connection and a real document each time: sockets, TLS state and the
    // revision files it reads are all part of what must go.
    const res = await request(new URL(`/api/v0.5/energy-programs/besoins-agreges?site_id=${site}&target_date=2026-11-22`, handle.apiUrl), {
      dispatcher: agent, headers: { authorization: `Bearer ${secret}` },
    })
    await res.body.dump()
    t.equal(res.statusCode, 200)
    await handle.close()
  }
  const agentFor = () => new Agent({ connect: { ca: testPki().serverCa.certPem, cert: cert.certPem, key: cert.keyPem } }).compose(conformance)
  const warm = agentFor()
  for (let i = 0; i < 3; i++) await cycle(warm)   // warm-up: module caches, lmdb env, TLS contexts
  await warm.close()
  await new Promise(r => setTimeout(r, 50))
  gc()
  const before = { handles: resources(), fds: openFds(), heap: process.memoryUsage().heapUsed }
  const agent = agentFor()
  for (let i = 0; i < CYCLES; i++) await cycle(agent)
  await agent.close()
  await new Promise(r => setTimeout(r, 50))
  gc()
  const leaked = await leakedSince(before.handles)
  const after = { fds: openFds(), heap: process.memoryUsage().heapUsed }
  t.same(leaked, {}, 'no listener, timer, cron job or store handle left behind')
  t.ok(after.fds <= before.fds, `open file descriptors: ${before.fds} before, ${after.fds} after ${CYCLES} activations`)
  const growthMb = (after.heap - before.heap) / 1e6
  t.ok(growthMb < 8, `heap growth after ${CYCLES} activations: ${growthMb.toFixed(1)} MB (< 8 MB)`)
})

t.test('a failed activation rolls back what it started: the port and the store are free again', async t => {
  const dataDir = t.testdir()
  writePki(dataDir)
  const ref = createReferenceHost({ dataDir })
  // No standby beside the first door: it would start a second later, a thread that is
  // not the failed activation's.
  const first = await createEpx(ref.host, { ...config, api: { ...config.api, standbyWorker: false } })
  const port = Number(first.apiUrl.port)
  const before = resources()
  // Same port: the listener fails after the store was opened; nothing may stay open.
  await t.rejects(createEpx(ref.host, { ...config, api: { host: '127.0.0.1', port } }), { code: 'EPX_LISTEN_FAILED' })
  t.same(await leakedSince(before), {}, 'no handle left by the failed activation')
  t.ok(existsSync(join(dataDir, 'epx.lmdb', 'data.mdb')), 'a store that was there before stays')
  await first.close()
  const again = await createEpx(ref.host, { ...config, api: { host: '127.0.0.1', port } })
  t.equal(Number(again.apiUrl.port), port, 'the port is usable once the first plugin closed')
  await again.close()
})

t.test('missing TLS files stop activation with a message that says to run epx init, leaving no store folder', async t => {
  const dataDir = t.testdir()
  const ref = createReferenceHost({ dataDir })
  await t.rejects(createEpx(ref.host, config), { code: 'EPX_TLS_FILES', message: /epx init/ })
  t.same(readdirSync(dataDir), [], 'the store folder the activation made is gone with it')
  await t.rejects(createEpx(ref.host, { ...config, store: { path: 'stores/a/epx.lmdb' } }), { code: 'EPX_TLS_FILES' })
  t.same(readdirSync(dataDir), [], 'and the folders it made to hold it')
})

t.test('an invalid configuration stops activation naming the field', async t => {
  const ref = createReferenceHost({ dataDir: t.testdir() })
  await t.rejects(createEpx(ref.host, { api: { port: -1 } }), { code: 'EPX_CONFIG_INVALID', message: /\/api\/port/ })
  const password = createEpx(ref.host, { store: { kind: 'postgres', postgres: { host: 'db.example', password: 'hunter2' } } })
  await t.rejects(password, { code: 'EPX_CONFIG_INVALID', message: /a password is never written in the configuration; put it in a file readable by epx only \(store\.postgres\.passwordFile\) or in an environment variable \(store\.postgres\.passwordEnv\)/ },
    'a password key: where to put it instead, not the schema\'s generic refusal')
  await password.catch((err: Error) => t.notMatch(err.message, /hunter2|additional properties/))
})
