/**
 * Starts epx for a test, through the front door: real TLS with the test PKI, real LMDB
 * in `t.testdir()`, the reference host on a ManualClock, real HTTP over undici.
 *
 *   const epx = await startEpx(t, { now?, config?, sites?, dataDir? })
 *   const { cert } = await epx.addCompany('acme', { perimeter?, status?, certSubject?, certPins? })
 *   const { id, secret } = await epx.addToken('acme', ['outbound:besoins-agreges'], { expiresAt?, revoked? })
 *   const res = await epx.request({ method: 'GET', path: OUTBOUND_PATH, query: { site_id, target_date }, cert, token: secret })
 *   res.status, res.headers (lower-case names), res.text, res.json()
 *
 * - `now` defaults to 2026-11-21T12:30:00Z; `sites` to 3; `config` is merged over (`api.rateLimit`: `UNTHROTTLED`)
 *   `{ api: { host: '127.0.0.1', port: 0 }, publish: { schedule: false }, console: { host: '127.0.0.1', port: 0 } }`
 *   (the console stays off unless `config.console.enabled`; then `handle.consoleUrl` is set).
 * - `cert: null` sends no client certificate; omitted, too. `token` becomes
 *   `Authorization: Bearer <token>`; `headers.authorization` overrides it.
 * - `faults` is the store's fault switch object (`faults.unavailable = true` → NO_STORE).
 * - `logs()` returns every log line written so far (parsed pino objects), to assert
 *   "one line per request" or "no secret in logs".
 * - `restart()` closes epx and starts it again on the same data folder and reference
 *   host (`{ solver: true }` also replaces the reference host), e.g. to test re-queueing.
 * - Every answer is checked against openapi/epx.openapi.json (`openapi.ts`, `conformance`):
 *   one the description does not describe fails the request.
 * - Everything is closed by `t.teardown`; `close()` is idempotent.
 * @module
 */
import { Readable } from 'node:stream'
import type { Test } from 'tap'
import pino from 'pino'
import { Agent, request as undiciRequest, type Dispatcher } from 'undici'
import { createEpx, type Internals } from '../../src/plugin.ts'
import { createReferenceHost, ManualClock, type ReferenceHost } from '../../src/host/reference-host.ts'
import type { EpxHandle, Logger } from '../../src/host/contract.ts'
import type { Door } from '../../src/door/supervisor.ts'
import type { Store, StoreFaults } from '../../src/store/open-store.ts'
import { openCompanies, type CompanyRecord, type Companies } from '../../src/store/companies.ts'
import { openTokens, type Tokens } from '../../src/store/tokens.ts'
import { hashToken, newTokenId, newTokenSecret } from '../../src/auth/tokens.ts'
import type { Scope } from '../../src/contract/scopes.ts'
import { clientCert, testPki, writePki, type KeyPairPem } from './certs.ts'
import { conformance } from './openapi.ts'

export interface StartEpxOptions {
  readonly now?: string
  readonly config?: Record<string, any>
  readonly sites?: number
  readonly dataDir?: string
  /** Check every response against openapi/epx.openapi.json (default true; the recorder of that file turns it off). */
  readonly checkResponses?: boolean
  /** Told the API door's supervisor at every activation (to kill its worker). */
  readonly onDoor?: Internals['onDoor']
  /** The door's worker's heap limit (to reach it). */
  readonly doorHeapMb?: number
  /** The door's first N worker starts end before they listen, telling nothing. */
  readonly doorSilentStarts?: number
  /** Told the webhook deliverer's thread at every activation (to wake it, to crash it). */
  readonly onWebhooks?: Internals['onWebhooks']
}

export interface TestRequest {
  readonly method?: string
  readonly path: string
  readonly query?: Readonly<Record<string, string>>
  readonly cert?: KeyPairPem | null
  readonly token?: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Buffer | object
  /** Sends the body without a Content-Length (chunked), as a client streaming it does. */
  readonly chunked?: boolean
}

export interface TestResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
  json(): any
}

export interface TestEpx {
  readonly url: URL
  readonly dataDir: string
  readonly ref: ReferenceHost
  readonly handle: EpxHandle
  readonly clock: ManualClock
  readonly faults: StoreFaults
  readonly store: Store
  readonly companies: Companies
  readonly tokens: Tokens
  addCompany(id: string, opts?: {
    perimeter?: 'all' | readonly string[]
    status?: 'active' | 'suspended'
    certSubject?: string
    certPins?: readonly string[]
    /** When it was added, and so since when it holds its perimeter (default: 30 days before the clock, so the test's days are its own). */
    since?: string
  }): Promise<{ cert: KeyPairPem; record: CompanyRecord }>
  addToken(companyId: string, scopes: readonly Scope[], opts?: { expiresAt?: string; revoked?: boolean }): Promise<{ id: string; secret: string }>
  request(req: TestRequest): Promise<TestResponse>
  logs(): any[]
  /** Waits until what the door has told so far (log lines...) has reached this thread: at once with the door on it, a flush away from its worker. */
  caughtUp(): Promise<void>
  restart(opts?: { solver?: boolean }): Promise<void>
  close(): Promise<void>
}

/**
 * Where the API door serves in tests: in its worker, as the plugin ships (`api.inWorker`
 * defaults to true), unless a test asks for the solver's thread (`api.inWorker: false`)
 * or `EPX_TEST_DOOR=main` is set (`npm run test:main`, the whole suite with the door on
 * the test's thread). A worker start costs ~0.2 s of CPU from dist/ (built-workers.mjs).
 */
export const TEST_DOOR_IN_WORKER = process.env.EPX_TEST_DOOR !== 'main'

/**
 * `api.rateLimit` of the tests that are not about request budgets: their clock stands
 * still, so a bucket would never refill and a test's 21st POST would be refused.
 * test/http/rate-limit.test.ts and the OpenAPI's recording set their own (the defaults).
 */
export const UNTHROTTLED = { get: { perSecond: 1_000_000, burst: 1_000_000 }, post: { perSecond: 1_000_000, burst: 1_000_000 } } as const

export async function startEpx (t: Test, opts: StartEpxOptions = {}): Promise<TestEpx> {
  const dataDir = opts.dataDir ?? t.testdir()
  writePki(dataDir)
  const clock = new ManualClock(opts.now ?? '2026-11-21T12:30:00Z')
  const lines: string[] = []
  const logger = pino({ level: 'debug' }, { write: (line: string) => { lines.push(line) } }) as unknown as Logger
  const faults: StoreFaults = {}
  const { api = {}, publish = {}, console: web = {}, ...rest } = opts.config ?? {}
  // The door's standby (`api.standbyWorker`, on in the plugin) only where a test asks for it
  // (the door's own tests and the faults'): it is a second door thread, started a second
  // after the first, ~0.2 s of CPU more (the console's app too when it is on) in every test
  // that lives that long, for a fault the test never makes.
  const config = {
    ...rest, api: { host: '127.0.0.1', port: 0, inWorker: TEST_DOOR_IN_WORKER, standbyWorker: false, rateLimit: UNTHROTTLED, ...api }, publish: { schedule: false, ...publish }, console: { host: '127.0.0.1', port: 0, ...web },
  }
  const newRef = () => createReferenceHost({ dataDir, clock, logger, sites: opts.sites ?? 3, cycleSeconds: 0 })

  let ref = newRef()
  let store!: Store
  let companies!: Companies
  let tokens!: Tokens
  let door: Door | undefined
  const open = async () => createEpx(ref.host, config, {
    storeFaults: faults,
    ...(opts.doorHeapMb ? { doorHeapMb: opts.doorHeapMb } : {}),
    ...(opts.doorSilentStarts ? { doorSilentStarts: opts.doorSilentStarts } : {}),
    onDoor: d => { door = d; opts.onDoor?.(d) },
    ...(opts.onWebhooks ? { onWebhooks: opts.onWebhooks } : {}),
    // Records written as stored, overlapping perimeters included (two "all sites" companies
    // are common in tests); test/store/companies.test.ts and the CLI and console tests hold one BSP per site.
    onStore: s => { store = s; companies = openCompanies(s, { onePerSite: false, now: () => clock.now().getTime() }); tokens = openTokens(s) },
  })
  let handle = await open()

  const agents = new Map<string, Dispatcher>()
  const agentFor = (cert: KeyPairPem | null | undefined): Dispatcher => {
    const key = cert ? cert.certPem : 'none'
    let a = agents.get(key)
    if (!a) {
      const agent = new Agent({ connect: { ca: testPki().serverCa.certPem, ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}) } })
      a = opts.checkResponses === false ? agent : agent.compose(conformance)
      agents.set(key, a)
    }
    return a
  }

  let closing: Promise<void> | undefined
  const close = () => {
    closing ??= (async () => {
      await Promise.allSettled([...agents.values()].map(a => a.close()))
      await handle.close()
      await ref.close()
    })()
    return closing
  }
  t.teardown(close)

  return {
    get url () { return handle.apiUrl },
    dataDir,
    get ref () { return ref },
    get handle () { return handle },
    clock,
    faults,
    get store () { return store },
    get companies () { return companies },
    get tokens () { return tokens },

    async addCompany (id, o = {}) {
      const certSubject = o.certSubject ?? `CN=${id},O=${id}`
      const record: CompanyRecord = {
        id, name: id, status: o.status ?? 'active', certSubject,
        ...(o.certPins ? { certPins: o.certPins } : {}),
        perimeter: o.perimeter ?? 'all',
        createdAt: o.since ?? new Date(clock.now().getTime() - 30 * 86_400_000).toISOString(),
      }
      // Its perimeter history starts at its creation (DECISIONS.md "Tenure"): a company is not made the holder of days it never saw.
      await openCompanies(store, { onePerSite: false, now: () => Date.parse(record.createdAt) }).add(record)
      return { cert: clientCert(certSubject), record }
    },

    async addToken (companyId, scopes, o = {}) {
      const secret = newTokenSecret()
      const id = newTokenId()
      const now = clock.now().toISOString()
      await tokens.add({
        id, hash: hashToken(secret), companyId, scopes: [...scopes], createdAt: now,
        ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}),
        ...(o.revoked ? { revokedAt: now } : {}),
      })
      return { id, secret }
    },

    async request (r) {
      const url = new URL(r.path, handle.apiUrl)
      for (const [k, v] of Object.entries(r.query ?? {})) url.searchParams.set(k, v)
      const headers: Record<string, string> = {}
      if (r.token !== undefined) headers.authorization = `Bearer ${r.token}`
      let body: string | Buffer | undefined
      if (r.body !== undefined) {
        body = typeof r.body === 'string' || Buffer.isBuffer(r.body) ? r.body : JSON.stringify(r.body)
        if (typeof r.body === 'object' && !Buffer.isBuffer(r.body)) headers['content-type'] = 'application/json'
      }
      Object.assign(headers, r.headers)
      const sent = r.chunked && body !== undefined ? Readable.from([Buffer.from(body)]) : body
      const res = await undiciRequest(url, { method: (r.method ?? 'GET') as 'GET', headers, body: sent, dispatcher: agentFor(r.cert) })
      const text = await res.body.text()
      // The door's worker tells the solver's thread of a request (its log line, a token's
      // use, a saved programme to queue) after answering it, within its flush interval:
      // a test reads those once they are there.
      await door?.caughtUp()
      const flat: Record<string, string> = {}
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v
      return { status: res.statusCode, headers: flat, text, json: () => JSON.parse(text) }
    },

    logs: () => lines.map(l => JSON.parse(l)),
    caughtUp: async () => { await door?.caughtUp() },

    async restart (o = {}) {
      await Promise.allSettled([...agents.values()].map(a => a.close()))
      agents.clear()
      await handle.close()
      if (o.solver) {
        await ref.close()
        ref = newRef()
      }
      handle = await open()
    },

    close,
  }
}
