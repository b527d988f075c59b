/**
 * `activate(host, config)`: the composition root. Everything started is registered in
 * a Disposer and torn down in reverse; a failed activation leaves nothing behind.
 * @module
 */
import { createRequire } from 'node:module'
import type { Activate, EpxHandle, Host, Logger } from './host/contract.ts'
import { rmSync } from 'node:fs'
import { inDataDir, loadConfig, type EpxConfig } from './config.ts'
import { folderToCreate, openConfiguredStore, type Store, type StoreFaults } from './store/open-store.ts'
import { openCompanies, perimeterOverlaps, type Companies } from './store/companies.ts'
import { openTokens, type Tokens } from './store/tokens.ts'
import { startDoor, type Door } from './door/supervisor.ts'
import { openDoor, portHere, type OpenDoor } from './door/wire.ts'
import type { AskAnswers } from './door/protocol.ts'
import { openPublication, type Publication } from './publish/open-publication.ts'
import { startSchedule } from './publish/schedule.ts'
import { addDays, parisDateOf } from './contract/paris-day.ts'
import { openInbound, type Inbound } from './apply/receive-programme.ts'
import { managedSites } from './apply/managed-sites.ts'
import { checkNodeVersion } from './host/node-version.ts'
import { openAudit, type Audit } from './store/audit.ts'
import { openDeliveries, type Deliveries } from './store/deliveries.ts'
import { openMetering, type Metering } from './store/metering.ts'
import { realisationToday } from './apply/realisation.ts'
import { openInstructionFlags, type InstructionFlags } from './store/instruction-flags.ts'
import { createOperations, type Operations } from './apply/operations.ts'
import { programmeRecords, type ProgrammeCount } from './apply/programme-records.ts'
import { storageQuota, type StorageQuota } from './apply/quota.ts'
import { createMetrics, type EpxMetrics } from './metrics/registry.ts'
import { metricSources } from './metrics/sources.ts'
import { expositionOf, readinessOf, type ReadyCheck } from './metrics/server.ts'
import { watchExpiries } from './metrics/expiries.ts'
import { eachTakeover, type Leadership } from './store/leadership.ts'
import { openEventBell, type EventBell } from './store/event-bell.ts'
import { announceEvents, EVENTS_DB, openEvents } from './store/events.ts'
import { openWebhooks, WEBHOOK_DBS } from './store/webhooks.ts'
import { startDeliveryThread, type DeliveryThread } from './webhooks/thread/start.ts'

const { version, engines } = createRequire(import.meta.url)('../package.json') as { version: string; engines: { node: string } }

/** Seams for tests; not part of the public surface. */
export interface Internals {
  readonly storeFaults?: StoreFaults
  /** Hands the opened store to a test, so it can seed companies and tokens. */
  readonly onStore?: (store: Store) => void
  /** Hands the API door's supervisor to a test (to kill its worker). */
  readonly onDoor?: (door: Door) => void
  /** The door's worker's heap limit in MB (default door/supervisor.ts's): a test reaches it. */
  readonly doorHeapMb?: number
  /** The door's first N worker starts end before they listen, telling nothing: a test reaches it. */
  readonly doorSilentStarts?: number
  /** The Node.js version checked against `engines.node` (default: this process's). */
  readonly nodeVersion?: string
  /** Hands the webhook deliverer's thread to a test (to wake it after moving the host's clock, to crash it). */
  readonly onWebhooks?: (deliveries: DeliveryThread) => void
}

class Disposer {
  #stack: Array<() => Promise<void> | void> = []
  add (fn: () => Promise<void> | void): void { this.#stack.push(fn) }
  async dispose (): Promise<void> {
    const errors: unknown[] = []
    while (this.#stack.length) {
      try { await this.#stack.pop()!() } catch (e) { errors.push(e) }
    }
    if (errors.length) throw new AggregateError(errors, 'epx: teardown incomplete')
  }
}

/** What every step of an activation reads: the host, the frozen config, the logger, what to tear down. */
interface Activation {
  readonly host: Host
  readonly config: Readonly<EpxConfig>
  readonly log: Logger
  readonly bin: Disposer
  readonly internals: Internals
  /**
   * Parts built by later steps and called by earlier ones (the store reports a failed
   * write to the metrics, a publication run to the operations): read when called, which
   * is once activation has built them.
   */
  readonly later: { metrics?: EpxMetrics; ops?: Operations; today?: ReturnType<typeof realisationToday> }
}

export async function createEpx (host: Host, rawConfig: unknown, internals: Internals = {}): Promise<EpxHandle> {
  // Here too, not only in loadPlugin: a host may import the entry and call activate itself.
  checkNodeVersion(engines.node, internals.nodeVersion)
  const config = loadConfig(rawConfig)
  const log = host.logger.child({ plugin: 'energy-programs-exchange' })
  const bin = new Disposer()
  const created = folderToCreate(inDataDir(host.dataDir, config.store.path))
  try {
    const a: Activation = { host, config, log, bin, internals, later: {} }
    const store = await openEpxStore(a)
    const bell = ringOnEvents(a, store)
    // Of the instances sharing the store, only the leader runs the schedule and retention.
    const leadership = store.leadership()
    const companies = openCompanies(store, { now: () => host.clock.now().getTime() })
    const tokens = openTokens(store)
    warnOverlaps(companies, log)
    const { revisions, publisher } = openPublishing(a, store, leadership)
    const { audit, flags, inbound, quota } = await openInboundPath(a, store, revisions)
    const { instructions } = inbound
    const { metering, deliveries } = openDeliveryRecords(a, store)
    const metrics = a.later.metrics = await startMetrics(a, { store, tokens, companies, quota, revisions, instructions, deliveries, metering, leadership })
    const ops = a.later.ops = startOperations(a, { store, audit, metrics, instructions, quota, deliveries, metering, leadership })
    const served = await openServingDoor(a, {
      store, companies, tokens, revisions, publisher, instructions, flags, audit, inbound, quota, metering, deliveries, metrics, ops, bell,
    })
    if (config.publish.schedule) {
      const schedule = startSchedule({ config: config.publish, publisher, revisions, solver: host.solver, clock: host.clock, log: log.child({ area: 'schedule' }), leadership })
      bin.add(() => schedule.stop())
    }
    startWebhooks(a, store, bell)
    const { consoleUrl, metricsUrl } = served
    log.info({ url: served.url.href, consoleUrl: consoleUrl?.href, version, ...(metricsUrl ? { metricsUrl: metricsUrl.href } : {}) }, 'epx activated')
    return handleOf(a, served, publisher, metering)
  } catch (err) {
    await bin.dispose().catch(() => {})   // no half-activated plugin
    // Nor a store folder it made: a new, empty store (or replica) left by a refused
    // activation would be taken for this instance's store at the next try.
    if (created) rmSync(created, { recursive: true, force: true })
    throw err
  }
}

/** The store, opened, and (PostgreSQL) its schema checked (a refused one writes nothing) and its replica caught up. */
async function openEpxStore ({ host, config, log, bin, internals, later }: Activation): Promise<Store> {
  const store = openConfiguredStore(config.store, {
    dataDir: host.dataDir,
    faults: internals.storeFaults,
    log: log.child({ area: 'store' }),
    onWriteFailed: () => later.metrics?.storeError(),
  })
  bin.add(() => store.close())
  await store.opened
  internals.onStore?.(store)
  return store
}

/** One BSP per site (DECISIONS.md): overlaps stored before the rule are said once, here. */
function warnOverlaps (companies: Companies, log: Logger): void {
  const overlaps = perimeterOverlaps(companies.list())
  if (!overlaps.length) return
  log.warn({ overlaps: overlaps.map(o => ({ companies: [o.a.id, o.b.id], shared: o.shared })) },
    `active companies share sites (${overlaps.map(o => `${o.a.id} and ${o.b.id}`).join('; ')}): the last programme either sends takes the site from the other's, whatever their emitted_at; ` +
    'narrow one perimeter (epx company perimeter ID --sites PRM,...) or suspend one')
}

function openPublishing ({ host, config, log, bin, later }: Activation, store: Store, leadership: Leadership): Publication {
  const publication = openPublication(store, config.publish, {
    solver: host.solver, clock: host.clock, log: log.child({ area: 'publish' }),
    onRun: (report, request, ms) => later.ops!.publication(report, request, ms),
    leads: leadership.isLeader,
    fenced: leadership.fenced,
  })
  bin.add(() => publication.close())
  const orphans = publication.revisions.removeOrphanSegments()
  if (orphans.length) log.warn({ segments: orphans }, 'removed revision files a crash left uncommitted')
  return publication
}

/**
 * The process's event bell (DECISIONS.md "Events for BSPs"): every event this thread's
 * store writes rings it once durable, and so do the events the change feed brings from
 * other instances; the door's feed waits on it, in whichever thread it runs.
 */
function ringOnEvents ({ bin, later }: Activation, store: Store): EventBell {
  const bell = openEventBell(undefined, () => store.latest())
  announceEvents(store, { bell, written: (type, n) => later.metrics?.eventsWritten(type, n) })
  bin.add(store.onApplied(changes => { if (changes.has(EVENTS_DB)) bell.ring() }))
  return bell
}

/**
 * Webhook delivery (webhooks/deliverer.ts), once the door is up, in a thread of its own
 * (webhooks/thread/), started once a company has an endpoint: its handshakes, requests, HMACs and store writes never take the
 * solver's event loop. What crosses: its store opened beside this one, the event bell and
 * the host's clock (shared memory), wakes to it (a change of endpoints the change feed
 * brought: its store follows no feed), log lines and counts from it.
 */
function startWebhooks ({ host, config, log, bin, internals, later }: Activation, store: Store, bell: EventBell): void {
  if (!config.webhooks.enabled) return
  const hooks = openWebhooks(store)
  const metrics = later.metrics
  const deliveries = startDeliveryThread({
    start: { config, dataDir: host.dataDir, storePath: store.path, eventBell: bell.cell, ...(store.threadShare() ? { storeShare: store.threadShare() } : {}) },
    clock: host.clock,
    log,
    hasEndpoints: () => hooks.list().length > 0,
    observer: metrics ? { storeError: () => metrics.storeError(), webhookAttempts: (company, outcome, n) => metrics.webhookAttempts(company, outcome, n) } : {},
  })
  bin.add(() => deliveries.close())
  bin.add(store.onApplied(changes => { if (WEBHOOK_DBS.some(db => changes.has(db))) deliveries.wake() }))
  internals.onWebhooks?.(deliveries)
}

/** Before the API listens, so no newer programme can be overtaken by an old one. */
async function openInboundPath ({ host, config, log, bin, later }: Activation, store: Store, revisions: Publication['revisions']) {
  const audit = openAudit(store, config.audit)
  const flags = openInstructionFlags(store)
  const inboundLog = log.child({ area: 'inbound' })
  const quota = storageQuota(store, config.inbound.maxBytesPerCompanyPerDay)
  const inbound = await openInbound({
    store, solver: host.solver, clock: host.clock, log: inboundLog, options: config.inbound, reads: !config.api.inWorker, quota,
    managed: managedSites({ read: () => host.solver.sites(), clock: host.clock, log: inboundLog }),
    records: programmeRecords({ audit, flags, feasibility: { revisions }, log: inboundLog, counted: c => later.ops!.programmeCounted(c) }),
  })
  bin.add(() => inbound.close())
  // What other instances save reaches this one's solver too, once it is in this replica.
  bin.add(store.onApplied(changes => inbound.handChanged(changes)))
  return { audit, flags, inbound, quota }
}

function openDeliveryRecords ({ host, config, bin, later }: Activation, store: Store): { metering: Metering; deliveries: Deliveries } {
  // Meter values the host reports, kept as long as the instructions (docs/http-api.md "Programme against delivery").
  const metering = openMetering(store, {
    now: () => host.clock.now().getTime(), retentionDays: config.inbound.retentionDays, onChanged: changes => later.today?.changed(changes), tellsOwed: true,
  })
  // Before the store closes: a report already called finishes its writes (docs/plugin-contract.md).
  bin.add(() => metering.close())
  const deliveries = openDeliveries(store)
  deliveries.start()
  bin.add(() => deliveries.close())
  return { metering, deliveries }
}

/** Events read past an endpoint's cursor, at most, for the age of what it still has to deliver. */
const UNDELIVERED_LOOK = 100

async function startMetrics ({ host, config, bin, later }: Activation, parts: {
  store: Store; tokens: Tokens; companies: Companies; quota: StorageQuota; revisions: Publication['revisions']; instructions: Inbound['instructions']; deliveries: Deliveries; metering: Metering; leadership: Leadership
}): Promise<EpxMetrics | undefined> {
  if (!config.metrics.enabled && !host.metricsRegistry) return undefined
  const { tokens, companies, quota, revisions, instructions, deliveries, metering, leadership } = parts
  const webhooks = openWebhooks(parts.store)
  const events = openEvents(parts.store)
  const expiries = watchExpiries(host.dataDir, config.api.tls, () => host.clock.now().getTime())
  const t = later.today = realisationToday({ instructions, metering, tolerance: config.delivery }, () => parisDateOf(host.clock.now()))
  const m = await createMetrics(metricSources({
    clock: host.clock, generation: tokens.generation, revisions, instructions, deliveries, expiries, realisationToday: () => t.read(), leading: leadership.isLeader,
    webhooksFailing: () => webhooks.failingByCompany(),
    // Cheap reads: each endpoint's state, then a few of its company's events after its cursor.
    webhooksOldestUndelivered: () => webhooks.oldestUndelivered((companyId, cursor, types) =>
      companies.get(companyId)?.status === 'active' ? events.firstDueMs(companyId, cursor, types, UNDELIVERED_LOOK) : undefined),
    quotaToday: () => {
      const now = host.clock.now()
      return companies.list().map(c => { const d = quota.dayOf(c, now); return { company: c.id, bytes: d.used.bytes, limit: d.limit } })
    },
  }), host.metricsRegistry)
  bin.add(() => m.close())
  bin.add(host.solver.onCycleApplied(report => m.instructionsApplied(report.inputs.length)))
  return m
}

function startOperations ({ host, config, log, bin }: Activation, parts: {
  store: Store; audit: Audit; metrics: EpxMetrics | undefined; instructions: Inbound['instructions']; quota: StorageQuota; deliveries: Deliveries; metering: Metering; leadership: Leadership
}): Operations {
  const { store, audit, metrics, instructions, quota, deliveries, metering, leadership } = parts
  const ops = createOperations({
    audit,
    metrics,
    instructions,
    quota: quota.uses,
    deliveries,
    metering,
    events: openEvents(store, { retentionDays: config.events.retentionDays }),
    retentionDays: { instructions: config.inbound.retentionDays, deliveries: config.publish.retentionDays },
    leads: leadership.isLeader,
    fenced: leadership.fenced,
    clock: host.clock,
    log,
  })
  bin.add(() => ops.settle())
  // On start, and on each takeover: a leader that died may have left retention undone.
  bin.add(eachTakeover(leadership, () => ops.retentionInBackground()))
  return ops
}

/**
 * The door: the API listener, the console and the metrics listener (door/wire.ts).
 * `api.inWorker`: in its own thread, so their handshakes, parsing and writes never
 * take the solver's event loop; what they tell or ask comes back here. Otherwise the
 * same code on this thread. Only the transport differs.
 */
async function openServingDoor ({ host, config, log, bin, internals }: Activation, parts: {
  store: Store; companies: Companies; tokens: Tokens; revisions: Publication['revisions']; publisher: Publication['publisher']
  instructions: Inbound['instructions']; flags: InstructionFlags; audit: Audit; inbound: Inbound; quota: StorageQuota; metering: Metering
  deliveries: Deliveries; metrics: EpxMetrics | undefined; ops: Operations; bell: EventBell
}): Promise<Door | OpenDoor> {
  const { store, companies, tokens, revisions, publisher, instructions, flags, audit, inbound, quota, metering, deliveries, metrics, ops, bell } = parts
  const observer = { ...metrics, deadToken: ops.deadToken, rateLimited: ops.rateLimited, quotaExceeded: ops.quotaExceeded }
  // What /readyz checks: state of this thread, wherever the metrics listener runs.
  let door: Door | undefined
  let apiListening = true
  const readyChecks: ReadyCheck[] = [
    { name: 'store', check: () => {
        // A shared store not ready has lost its database (or not loaded its replica yet); a
        // store of this host alone says why itself, as it refuses the read.
        if (store.shared && !store.ready()) return 'the store\'s database is unreachable, or its replica is not loaded yet'
        tokens.generation()
        return store.ready() ? undefined : 'the store does not answer'
      } },
    { name: 'api', check: () => !apiListening ? 'the API listener is closed' : door && !door.up ? 'the API worker is restarting' : undefined },
    { name: 'publication', check: ops.publicationProblem },
  ]
  const exposition = metrics && expositionOf(metrics.registry)
  // What the door asks of this thread, wherever it runs.
  const answers: AskAnswers = {
    // Plain records: a host's own site objects need not cross a thread.
    sites: async () => (await host.solver.sites()).map(s => ({ site_id: s.site_id, site_name: s.site_name })),
    publish: q => publisher.publish(q.request),
    metrics: () => exposition ? exposition() : Promise.reject(new Error('metrics are off')),
    readiness: async () => readinessOf(readyChecks),
  }
  const served = config.api.inWorker
    ? door = await startDoor({
      start: { config, dataDir: host.dataDir, storePath: store.path, eventBell: bell.cell, ...(store.threadShare() ? { storeShare: store.threadShare() } : {}) },
      clock: host.clock,
      log,
      faults: internals.storeFaults,
      ...(internals.doorHeapMb ? { heapMb: internals.doorHeapMb } : {}),
      ...(internals.doorSilentStarts ? { silentStarts: internals.doorSilentStarts } : {}),
      // What the door saved, read here once its commit is in this thread's snapshot.
      handOver: (batches, done) => { store.fresh(); inbound.handOver(batches, done) },
      onRestart: () => inbound.requeueEffective(),
      // Counted only where they are shown: the worker sends none when metrics are off.
      ...(metrics ? { programme: (count: ProgrammeCount) => ops.programmeCounted(count) } : {}),
      observer,
      receipts: deliveries,
      tokens,
      answers,
    })
    : await openDoor({
      config, dataDir: host.dataDir, store, companies, tokens, revisions, instructions, flags, audit, inbound, quota, clock: host.clock, log, metering,
      events: openEvents(store), bell,
    }, portHere({ observer, receipts: deliveries, tokens, answers }))
  bin.add(() => served.close())
  bin.add(() => { apiListening = false })
  if (door) internals.onDoor?.(door)
  return served
}

function handleOf ({ host, log, bin }: Activation, served: Door | OpenDoor, publisher: Publication['publisher'], metering: Metering): EpxHandle {
  const { consoleUrl, metricsUrl } = served
  let closing: Promise<void> | undefined
  return {
    version,
    apiUrl: served.url,
    consoleUrl,
    ...(metricsUrl ? { metricsUrl } : {}),
    // Default target: tomorrow in Paris by the host clock; default sites: all of them.
    publish: (request = {}) => publisher.publish({
      targetDate: request.targetDate ?? addDays(parisDateOf(host.clock.now()), 1),
      siteIds: request.siteIds,
      trigger: 'host',
    }),
    reportMetering: readings => metering.report(readings),
    close () {
      closing ??= bin.dispose().then(() => log.info({}, 'epx closed'))
      return closing
    },
  }
}

export const activate: Activate = (host, config) => createEpx(host, config)
