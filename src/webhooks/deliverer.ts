/**
 * Webhook delivery (DECISIONS.md "Events for BSPs"): each endpoint's events after its
 * cursor, of the types it wants, one at a time in id order, at least once.
 *
 * - A 2xx advances the cursor in a durable write (store/webhooks.ts): the company's events
 *   are the outbox, so a restart resumes after the last event delivered, losing none.
 * - Anything else, a network error or a timeout, is tried again after 5 s, doubling up to
 *   1 h, for 24 h from the event's first failure; then the endpoint is marked failing (an
 *   audit record), keeps its cursor and is called no more until `epx webhook redeliver`.
 * - Each endpoint has its own runner and its own undici pool: a slow or dead endpoint
 *   holds only its own.
 * - With several instances on one database, an endpoint's runner delivers only while its
 *   instance holds the endpoint's lease, claimed and renewed in the database with each
 *   write; a runner that finds another instance's lease running waits for it to lapse.
 * - Woken by the event bell (events this process wrote, or the change feed brought), by
 *   a change of the endpoints another writer made, by the next retry or lease lapse due,
 *   and every RESCAN_MS for what the CLI changed in an LMDB store (it rings no bell). No
 *   loop runs while nothing is due.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { Pool } from 'undici'
import type { Clock, Logger } from '../host/contract.ts'
import type { Store } from '../store/open-store.ts'
import type { EventBell } from '../store/event-bell.ts'
import { eventId, openEvents } from '../store/events.ts'
import { openCompanies } from '../store/companies.ts'
import { openAudit } from '../store/audit.ts'
import { openWebhooks, secretsInForce, WEBHOOK_DBS, type DeliveryState, type Settlement, type WebhookEndpoint } from '../store/webhooks.ts'
import { checkEndpointUrl } from './endpoint-address.ts'
import { endpointPool, errorText, postEvent, type ConnectOptions, type Exchange } from './post-event.ts'

/** DECISIONS.md: exponential backoff from 5 s up to 1 h, for 24 h. */
export const FIRST_RETRY_MS = 5_000
export const MAX_RETRY_MS = 3_600_000
export const RETRY_FOR_MS = 86_400_000
/** How long a claim holds an endpoint: well over a delivery (requestTimeoutMs) and its write. */
const LEASE_MS = 60_000
/** What the CLI changed in an LMDB store is seen within this (another process rings no bell). */
const RESCAN_MS = 30_000
/** How long close() lets an attempt under way finish before it cuts it short. */
const CLOSE_GRACE_MS = 1_000
/** After a store fault, a runner tries again this much later. */
const FAULT_PAUSE_MS = 5_000
/** Events read at most while looking for the next one an endpoint wants (each decoded only when reached). */
const PAGE = 100
/**
 * How long a company found active is taken as such by a runner: its record holds its
 * perimeter (10,000 sites: a decode dearer than the delivery's own reads), so it is not read
 * again for every event of a burst. A suspension stops the deliveries within this.
 */
const COMPANY_READ_MS = 1_000

/** The wait before the attempt that follows `failures` failed attempts. */
export function retryDelayMs (failures: number): number {
  return Math.min(FIRST_RETRY_MS * 2 ** Math.min(failures - 1, 30), MAX_RETRY_MS)
}

export interface DelivererOptions {
  readonly store: Store
  readonly bell: EventBell
  readonly clock: Clock
  readonly log: Logger
  readonly connect: ConnectOptions
  /** How long a claim holds an endpoint (default 60 s). */
  readonly leaseMs?: number
  /** Told of each attempt that brought an answer or an error (the metric `epx_webhook_deliveries_total`). */
  readonly counted?: (companyId: string, outcome: 'delivered' | 'failed-attempt') => void
}

export interface Deliverer {
  /** This instance's name in the endpoints' leases. */
  readonly owner: string
  /** Look at every endpoint now (a test that moved its clock; a change made elsewhere). */
  wake(): void
  /** Stops: an attempt under way has a second to finish (then it is cut short, and its event goes again later); leases released. */
  close(): Promise<void>
}

type Next =
  | { readonly kind: 'none' }
  | { readonly kind: 'skip'; readonly cursor: number }
  | { readonly kind: 'expired'; readonly cursor: number }
  | { readonly kind: 'event'; readonly seq: number; readonly id: string; readonly body: string }

export function startDeliverer (o: DelivererOptions): Deliverer {
  const { store, bell, clock, log } = o
  const hooks = openWebhooks(store)
  const events = openEvents(store)
  const companies = openCompanies(store)
  const audit = openAudit(store)
  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`
  const leaseMs = o.leaseMs ?? LEASE_MS
  const now = (): number => clock.now().getTime()
  const aborts = new AbortController()
  const runners = new Map<string, Runner>()
  let closed = false
  let release: () => void = () => {}
  /** A wake during a scan: scan again at once. */
  let woken = false
  // Told by another thread (a change the feed brought): read what it wrote, not this turn's snapshot.
  const wake = (): void => { store.latest(); woken = true; release() }

  /** The first event after `cursor` the endpoint wants, or how far to skip. */
  function nextFor (e: WebhookEndpoint, cursor: number): Next {
    const n = events.nextOf(e.companyId, cursor, e.types, PAGE)
    switch (n.kind) {
      case 'event': return { kind: 'event', seq: n.seq, id: eventId(n.seq), body: n.json }
      case 'skip': return { kind: 'skip', cursor: n.seq }
      case 'expired': return { kind: 'expired', cursor: n.resume }
      default: return n
    }
  }

  class Runner {
    running: Promise<void> | undefined
    again = false
    /** The look due later (a retry, another instance's lease lapsing), on the host's clock. */
    timer: NodeJS.Timeout | undefined
    pool: Pool | undefined
    poolUrl = ''
    /** Until when (host's clock ms) its company is known active. */
    activeUntilMs = 0
    constructor (readonly id: string) {}

    kick (): void {
      if (this.running) { this.again = true; return }
      this.running = this.run().finally(() => { this.running = undefined })
    }

    /** Looks again at `dueMs` (clock ms); an earlier kick (the bell, `wake`) comes first. */
    lookAt (dueMs: number): void {
      clearTimeout(this.timer)
      this.timer = setTimeout(() => this.kick(), Math.max(0, dueMs - now()))
      this.timer.unref()
    }

    async run (): Promise<void> {
      clearTimeout(this.timer)
      do {
        this.again = false
        try {
          await this.steps()
        } catch (err) {
          // A store that cannot answer now: look again shortly; the cursor is where it was.
          log.warn({ endpoint: this.id, err: errorText(err) }, 'webhook delivery paused by a store fault')
          this.lookAt(now() + FAULT_PAUSE_MS)
        }
      } while (this.again && !closed)
    }

    async poolFor (url: URL): Promise<Pool> {
      if (!this.pool || this.poolUrl !== url.origin) {
        void this.pool?.close().catch(() => {})
        this.pool = await endpointPool(url, o.connect)
        this.poolUrl = url.origin
      }
      return this.pool
    }

    async steps (): Promise<void> {
      this.activeUntilMs = 0
      while (!closed) {
        const e = hooks.get(this.id)
        if (!e || e.failingSince) return
        const at = now()
        if (at >= this.activeUntilMs) {
          if (companies.get(e.companyId)?.status !== 'active') return
          this.activeUntilMs = at + COMPANY_READ_MS
        }
        const state = hooks.stateOf(this.id)
        if (state.retry && state.retry.nextMs > at) return this.lookAt(state.retry.nextMs)
        const lease = hooks.leaseOf(this.id)
        if (lease && lease.owner !== owner && lease.untilMs > at) return this.lookAt(lease.untilMs)
        const next = nextFor(e, state.cursor)
        if (next.kind === 'none') return
        // Renewed with every write; claimed anew only when it may lapse within an attempt.
        if (!(lease?.owner === owner && lease.untilMs - at > leaseMs / 2)) {
          if (!await store.writeDurable(() => hooks.claimSync(this.id, owner, at, at + leaseMs))) continue
          // Taken from another instance: its last deliveries are read again, now that the claim's
          // write has caught this replica up with them (a cursor read before could be behind,
          // and the event it points past would be sent twice).
          if (lease !== undefined && lease.owner !== owner) continue
        }
        if (closed) return
        if (next.kind !== 'event') {
          // Skipped (not a type it wants), or gone with retention: nothing to send, the cursor moves on.
          const gone = next.kind === 'expired'
            ? { atMs: at, eventId: '', error: `events up to ${eventId(next.cursor)} were removed (events.retentionDays) before delivery: the state reads recover what they said`, latencyMs: 0 }
            : undefined
          await this.settle(at, { fromCursor: state.cursor, cursor: next.cursor, leaseUntilMs: at + leaseMs, ...(gone ? { log: gone } : {}) })
          continue
        }
        await this.attempt(e, state, next)
      }
    }

    async attempt (e: WebhookEndpoint, state: DeliveryState, next: Extract<Next, { kind: 'event' }>): Promise<void> {
      const startMs = now()
      let exchange: Exchange
      try {
        const url = checkEndpointUrl(e.url, o.connect.allowPrivateNetworks)
        exchange = await postEvent(await this.poolFor(url), url, {
          eventId: next.id, body: next.body, secrets: secretsInForce(e, startMs), timestampSeconds: Math.floor(startMs / 1000),
          timeoutMs: o.connect.requestTimeoutMs, signal: aborts.signal,
        })
      } catch (err) {
        exchange = { error: errorText(err), latencyMs: 0 }
      }
      // Cut short by close(): the event goes again after the restart. An answer that came is written down.
      if (closed && exchange.status === undefined) return
      const at = now()
      const entry = { atMs: startMs, eventId: next.id, ...exchange }
      const ok = exchange.status !== undefined && exchange.status >= 200 && exchange.status < 300
      o.counted?.(e.companyId, ok ? 'delivered' : 'failed-attempt')
      if (ok) {
        await this.settle(at, { fromCursor: state.cursor, cursor: next.seq, log: entry, leaseUntilMs: at + leaseMs })
        return
      }
      const same = state.retry?.seq === next.seq
      const failures = (same ? state.retry!.attempts : 0) + 1
      const firstMs = same ? state.retry!.firstMs : startMs
      if (at - firstMs >= RETRY_FOR_MS) {
        const failed = await this.settle(at, { fromCursor: state.cursor, failingSinceMs: at, log: entry, leaseUntilMs: at + leaseMs }, () => {
          audit.appendSync({
            actor: { kind: 'host' }, action: 'webhook.failing', subject: e.id, outcome: `failing: ${exchange.status ?? exchange.error}`,
            details: { companyId: e.companyId, url: e.url, eventId: next.id, attempts: failures, since: new Date(firstMs).toISOString() },
          }, at)
        })
        if (failed) log.warn({ endpoint: e.id, company: e.companyId, eventId: next.id, attempts: failures }, 'webhook endpoint marked failing: 24 h of failed deliveries; `epx webhook redeliver` resumes it')
        return
      }
      const nextMs = at + retryDelayMs(failures)
      await this.settle(at, {
        fromCursor: state.cursor, retry: { seq: next.seq, attempts: failures, firstMs, nextMs }, log: { ...entry, nextTryMs: nextMs }, leaseUntilMs: at + leaseMs,
      })
    }

    /** Writes an outcome while this instance holds the endpoint; false when another took it over. */
    settle (at: number, s: Settlement, alongside?: () => void): Promise<boolean> {
      return store.writeDurable(() => {
        const held = hooks.settleSync(this.id, owner, at, s)
        if (held) alongside?.()
        return held
      })
    }

    async close (): Promise<void> {
      clearTimeout(this.timer)
      await this.running
      await this.pool?.destroy().catch(() => {})
    }
  }

  /** Every endpoint looked at; the ones gone forgotten. */
  function scan (): void {
    const ids = new Set<string>()
    for (const e of hooks.list()) {
      ids.add(e.id)
      let r = runners.get(e.id)
      if (!r) runners.set(e.id, r = new Runner(e.id))
      r.kick()
    }
    for (const [id, r] of runners) if (!ids.has(id)) { runners.delete(id); void r.close() }
  }

  let unreadable = false
  async function loop (): Promise<void> {
    // A store no other instance writes (LMDB: one service per folder) has one deliverer, this
    // one: a lease of another owner is a predecessor's, killed before it could release it.
    // Taken at once, not a lease later (a shared store waits for it to lapse: its holder may live).
    if (!store.shared) {
      try {
        if (hooks.list().some(e => { const l = hooks.leaseOf(e.id); return l !== undefined && l.owner !== owner })) {
          await store.writeDurable(() => hooks.releaseOthersSync(owner))
        }
      } catch {}   // a store that cannot answer: its leases lapse, as on a shared one
    }
    while (!closed) {
      const since = bell.count()
      woken = false
      try {
        scan()
        unreadable = false
      } catch (err) {
        // Once per episode: the store's own fault log says the rest.
        if (!unreadable) log.warn({ err: errorText(err) }, 'webhook endpoints unreadable now; delivery resumes with the store')
        unreadable = true
      }
      if (woken) continue
      const wait = bell.wait(RESCAN_MS, since)
      release = wait.release
      await wait.rung
    }
  }

  const offApplied = store.onApplied(changes => { if (WEBHOOK_DBS.some(db => changes.has(db))) wake() })
  const running = loop()

  return {
    owner,
    wake,
    async close () {
      if (closed) return
      closed = true
      offApplied()
      // An attempt under way has CLOSE_GRACE_MS to bring its answer, which is then written
      // down (a receiver that answered in time is not sent the event again); one that takes
      // longer is cut short, and its event goes again after the restart (at least once).
      const cut = setTimeout(() => aborts.abort(), CLOSE_GRACE_MS)
      wake()
      await running
      await Promise.all([...runners.values()].map(r => r.close()))
      clearTimeout(cut)
      // Another instance may go on at once, not a lease later.
      const holds = (): boolean => hooks.list().some(e => hooks.leaseOf(e.id)?.owner === owner)
      try {
        if (holds()) await store.writeDurable(() => hooks.releaseSync(owner))
      } catch {}   // a store that cannot answer: the leases lapse
    },
  }
}
