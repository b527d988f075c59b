/**
 * epx's Prometheus metrics (prom-client), in epx's own registry or one the host passes
 * (`Host.metricsRegistry`). Request-path counters are prom-client children looked up
 * once per (door, route, method, status) and kept; gauges that need the store (the age of
 * tomorrow's publication, whether a programme arrived for tomorrow) are computed when
 * scraped, never on a request.
 * @module
 */
import { sampleLoopDelay } from './loop-delay.ts'
import type { Metric, Registry } from 'prom-client'
import type { PublishReport } from '../host/contract.ts'

/** Today's programme against delivery over every site, one gauge a field. */
export interface RealisationGauges {
  readonly shortfallKwh: number
  readonly curtailmentsBroken: number
  readonly sitesShort: number
  readonly shortSlotsMax: number
}

/** What scrape-time gauges read; each may throw (the store is down): the gauge is then left out. */
export interface MetricSources {
  /** Newest `emitted_at` (ms) published for tomorrow (Paris), if any. */
  tomorrowPublishedMs(): number | undefined
  /** Effective instructions stored for tomorrow (Paris). */
  tomorrowInstructions(): number
  /** Latest GET 200/304 instant (ms) per company since the start. */
  lastFetchByCompany(): ReadonlyMap<string, number>
  /** Expiry instants (ms) of the server certificate, the client CA and the CRL's nextUpdate. */
  expiries(): ReadonlyArray<{ readonly what: string; readonly atMs: number }>
  /** Today's programme against delivery over every site (the plugin wires `apply/realisation.ts`). */
  realisationToday?(): RealisationGauges
  /** Each company's bytes of programmes accepted today (Paris) and its quota (apply/quota.ts). */
  quotaToday?(): ReadonlyArray<{ readonly company: string; readonly bytes: number; readonly limit: number }>
  /** Webhook endpoints marked failing, by company (store/webhooks.ts). */
  webhooksFailing?(): ReadonlyMap<string, number>
  /** Per company with webhook endpoints, when (ms) the oldest event they still have to deliver was written; undefined: none. */
  webhooksOldestUndelivered?(): ReadonlyMap<string, number | undefined>
  /** Whether this instance leads those sharing the store (store/leadership.ts); absent: it is the only one. */
  leading?(): boolean
  nowMs(): number
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]
const RUN_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

/**
 * Loads prom-client only now: a plugin with metrics off (the default) and no host
 * registry never pays its import (~90 ms, ~12 MB of RSS measured on the 2-core machine).
 */
export async function createMetrics (sources: MetricSources, given?: Registry) {
  const { Counter, Gauge, Histogram, Registry } = await import('prom-client')
  const registry = given ?? new Registry()
  const registers = [registry]
  const made: Metric[] = []
  const add = <M extends Metric>(m: M): M => { made.push(m); return m }

  const requests = add(new Counter({ name: 'epx_http_requests_total', help: 'API requests answered, by door (inbound, outbound, none), route (besoins-agreges, programme-soutirage, realise, none), method and status', labelNames: ['door', 'route', 'method', 'status'], registers }))
  const latency = add(new Histogram({ name: 'epx_http_request_duration_seconds', help: 'API request duration, from the request line to the end of the answer', labelNames: ['door', 'route', 'method'], buckets: LATENCY_BUCKETS, registers }))
  const handshakes = add(new Counter({ name: 'epx_tls_handshakes_total', help: 'TLS handshakes completed on the API door', registers }))
  const handshakeFailures = add(new Counter({ name: 'epx_tls_handshake_failures_total', help: 'TLS handshakes that failed, by node error code', labelNames: ['reason'], registers }))
  const rateLimited = add(new Counter({ name: 'epx_rate_limited_total', help: 'API requests refused 429 RATE_LIMITED (over the company\'s request budget), by company and door (inbound, outbound)', labelNames: ['company', 'door'], registers }))
  const quotaExceeded = add(new Counter({ name: 'epx_quota_exceeded_total', help: 'Programmes refused 429 QUOTA_EXCEEDED (over the company\'s storage quota of the day), by company', labelNames: ['company'], registers }))
  const authRefusals = add(new Counter({ name: 'epx_auth_refusals_total', help: 'Requests refused by the authentication chain, by error code', labelNames: ['code'], registers }))
  const programmes = add(new Counter({ name: 'epx_programmes_total', help: 'Programme_Soutirage received after authentication, by outcome (accepted, rejected)', labelNames: ['status'], registers }))
  const instructions = add(new Counter({ name: 'epx_instructions_total', help: 'Instructions (one per site of a programme), by status: accepted, applied (by the solver), infeasible (over the needs)', labelNames: ['status'], registers }))
  const programmeLast = add(new Gauge({ name: 'epx_programme_last_accepted_timestamp_seconds', help: 'When the last programme was accepted, by company', labelNames: ['company'], registers }))
  const runs = add(new Counter({ name: 'epx_publication_runs_total', help: 'Besoins_Agreges publication runs, by trigger (schedule, host, cli, console) and outcome (ok, partial, failed)', labelNames: ['trigger', 'outcome'], registers }))
  const runDuration = add(new Histogram({ name: 'epx_publication_duration_seconds', help: 'Duration of publication runs', buckets: RUN_BUCKETS, registers }))
  const runSites = add(new Counter({ name: 'epx_publication_sites_total', help: 'Sites of publication runs, by result (published, failed)', labelNames: ['result'], registers }))
  const lastSuccess = add(new Gauge({ name: 'epx_publication_last_success_timestamp_seconds', help: 'End of the last publication run with no failed site', registers }))
  const workerFaults = add(new Counter({ name: 'epx_api_worker_faults_total', help: 'Faults that ended the API door\'s worker thread (restarted at once), by cause (exception, rejection, heap, exit)', labelNames: ['cause'], registers }))
  const eventsWritten = add(new Counter({ name: 'epx_events_written_total', help: 'Events written for the companies\' feeds (DECISIONS.md "Events for BSPs"), by type', labelNames: ['type'], registers }))
  const webhookDeliveries = add(new Counter({ name: 'epx_webhook_deliveries_total', help: 'Webhook delivery attempts, by company and outcome (delivered: a 2xx; failed-attempt: anything else, tried again later)', labelNames: ['company', 'outcome'], registers }))
  const storeErrors = add(new Counter({ name: 'epx_store_errors_total', help: 'Durable store writes that failed (each one a 503 NO_STORE or a lost background write)', registers }))

  const loop = sampleLoopDelay()
  add(new Gauge({
    name: 'epx_event_loop_delay_seconds', help: 'Event-loop delay the plugin observed since the previous scrape, beyond the 10 ms sampling interval (quantile 0.5, 0.99, max)', labelNames: ['quantile'], registers,
    collect () {
      const { p50, p99, max } = loop.read()
      this.set({ quantile: '0.5' }, p50)
      this.set({ quantile: '0.99' }, p99)
      this.set({ quantile: 'max' }, max)
    },
  }))
  add(new Gauge({
    name: 'epx_publication_tomorrow_age_seconds', help: "Age of the newest Besoins_Agreges revision published for tomorrow (Europe/Paris); absent when none is", registers,
    collect () {
      this.reset()
      const ms = safely(sources.tomorrowPublishedMs)
      if (ms !== undefined) this.set((sources.nowMs() - ms) / 1000)
    },
  }))
  const today = (name: string, help: string, field: keyof RealisationGauges) => add(new Gauge({
    name, help, registers,
    collect () {
      this.reset()
      const r = sources.realisationToday && safely(sources.realisationToday)
      if (r !== undefined) this.set(r[field])
    },
  }))
  today('epx_realisation_today_shortfall_kwh', 'Energy short of the floors programmed for today (Europe/Paris), over every site, from the meter values reported so far (kWh)', 'shortfallKwh')
  today('epx_realisation_today_curtailments_broken', 'Quarter-hours of today (Europe/Paris) where a site drew energy past the tolerance during a curtailment, over every site', 'curtailmentsBroken')
  today('epx_realisation_today_sites_short', 'Sites with at least one quarter-hour under its floor today (Europe/Paris)', 'sitesShort')
  today('epx_realisation_today_short_slots_max', 'The most quarter-hours under their floor of one site today (Europe/Paris): epx realise --date <today> names it', 'shortSlotsMax')
  add(new Gauge({
    name: 'epx_programme_tomorrow_instructions', help: 'Effective instructions stored for tomorrow (Europe/Paris): 0 means no programme yet', registers,
    collect () {
      this.reset()
      const n = safely(sources.tomorrowInstructions)
      if (n !== undefined) this.set(n)
    },
  }))
  add(new Gauge({
    name: 'epx_bsp_last_fetch_timestamp_seconds', help: 'Last GET besoins-agreges answered 200 or 304, by company (since the start)', labelNames: ['company'], registers,
    collect () {
      this.reset()
      for (const [company, ms] of safely(sources.lastFetchByCompany) ?? []) this.set({ company }, ms / 1000)
    },
  }))
  const quotaGauge = (name: string, help: string, field: 'bytes' | 'limit') => add(new Gauge({
    name, help, labelNames: ['company'], registers,
    collect () {
      this.reset()
      for (const q of (sources.quotaToday && safely(sources.quotaToday)) ?? []) this.set({ company: q.company }, q[field])
    },
  }))
  quotaGauge('epx_quota_bytes', 'Bytes of programmes each company has had accepted today (Europe/Paris): its use of the storage quota, counted in the store for every instance', 'bytes')
  quotaGauge('epx_quota_limit_bytes', 'Each company\'s storage quota, bytes of programmes a Paris day (its own, or inbound.maxBytesPerCompanyPerDay)', 'limit')
  add(new Gauge({
    name: 'epx_webhook_endpoints_failing', help: 'Webhook endpoints marked failing (24 h of failed deliveries; `epx webhook redeliver` resumes one), by company', labelNames: ['company'], registers,
    collect () {
      this.reset()
      for (const [company, n] of (sources.webhooksFailing && safely(sources.webhooksFailing)) ?? []) this.set({ company }, n)
    },
  }))
  add(new Gauge({
    name: 'epx_webhook_oldest_undelivered_seconds', help: 'Age of the oldest event an endpoint of the company (not failing) still has to deliver, by company with endpoints; 0 when none', labelNames: ['company'], registers,
    collect () {
      this.reset()
      const now = sources.nowMs()
      for (const [company, ms] of (sources.webhooksOldestUndelivered && safely(sources.webhooksOldestUndelivered)) ?? []) this.set({ company }, ms === undefined ? 0 : Math.max(0, (now - ms) / 1000))
    },
  }))
  add(new Gauge({
    name: 'epx_leader', help: '1 while this instance leads the instances sharing its store (it runs the publication schedule and retention), else 0; always 1 with an LMDB store', registers,
    collect () { this.set(sources.leading?.() === false ? 0 : 1) },
  }))
  add(new Gauge({
    name: 'epx_certificate_expiry_timestamp_seconds', help: 'When the server certificate, the client CA and the CRL (nextUpdate) expire', labelNames: ['what'], registers,
    collect () {
      this.reset()
      for (const e of safely(sources.expiries) ?? []) this.set({ what: e.what }, e.atMs / 1000)
    },
  }))

  // One prom-client child per label set, made on first use and kept: no label hashing per request.
  const requestChildren = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>()
  const refusalCodes = new Set(['UNAUTHORIZED', 'MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'SCOPE_DENIED'])

  return {
    registry,
    answered (door: string, route: string, method: string, status: number, code: string | undefined, seconds: number): void {
      const key = `${door} ${route} ${method} ${status}`
      let c = requestChildren.get(key)
      if (c === undefined) {
        c = { count: requests.labels(door, route, method, String(status)), time: latency.labels(door, route, method) }
        requestChildren.set(key, c)
      }
      c.count.inc()
      c.time.observe(seconds)
      if (code !== undefined && refusalCodes.has(code)) authRefusals.inc({ code })
    },
    rateLimited (company: string, door: string): void { rateLimited.inc({ company, door }) },
    quotaExceeded (company: string): void { quotaExceeded.inc({ company }) },
    handshake (): void { handshakes.inc() },
    handshakeFailed (reason: string): void { handshakeFailures.inc({ reason }) },
    programme (accepted: boolean, company: string, sites: number, atMs: number): void {
      programmes.inc({ status: accepted ? 'accepted' : 'rejected' })
      if (!accepted) return
      instructions.inc({ status: 'accepted' }, sites)
      programmeLast.set({ company }, atMs / 1000)
    },
    instructionsApplied (n: number): void { instructions.inc({ status: 'applied' }, n) },
    infeasible (n: number): void { instructions.inc({ status: 'infeasible' }, n) },
    publication (report: PublishReport, trigger: string, seconds: number, endMs: number): void {
      const failed = report.failed.length
      runs.inc({ trigger, outcome: failed === 0 ? 'ok' : report.published.length === 0 ? 'failed' : 'partial' })
      runDuration.observe(seconds)
      runSites.inc({ result: 'published' }, report.published.length)
      runSites.inc({ result: 'failed' }, failed)
      if (failed === 0) lastSuccess.set(endMs / 1000)
    },
    storeError (): void { storeErrors.inc() },
    eventsWritten (type: string, n: number): void { eventsWritten.inc({ type }, n) },
    workerFault (cause: string): void { workerFaults.inc({ cause }) },
    webhookAttempts (company: string, outcome: string, n: number): void { webhookDeliveries.inc({ company, outcome }, n) },
    /** Unregisters every epx metric (a host's registry outlives the plugin) and stops the loop monitor. */
    close (): void {
      loop.stop()
      for (const m of made) registry.removeSingleMetric((m as unknown as { name: string }).name)
    },
  }
}
export type EpxMetrics = Awaited<ReturnType<typeof createMetrics>>

function safely<T> (read: () => T): T | undefined {
  try { return read() } catch { return undefined }
}
