/**
 * Webhook endpoints and their delivery state (DECISIONS.md "Events for BSPs"). The
 * company's events (`events.ts`) are the outbox: an endpoint keeps only a cursor, the
 * last event seq it has been given, advanced in the durable write that records the
 * delivery, so a restart, even a kill -9, resumes where the last 2xx left it.
 *
 * Sub-databases:
 * - `webhooks` id → `WebhookEndpoint`: what the CLI and console set (url, types, secrets
 *   in force, when it was created, failing since when);
 * - `webhook-state` id → `DeliveryState`: the cursor, the retry under way, the log's counter;
 * - `webhook-leases` id → `Lease`: which instance delivers the endpoint's events, until when.
 *   With several instances on one database each write runs under the database's write lock
 *   on a caught-up replica (postgres/write-batch.ts), so `claimSync` and `settleSync` read
 *   the lease as every instance sees it: one instance holds an endpoint at a time, and one
 *   killed mid-delivery leaves it to another once its lease lapses;
 * - `webhook-log` [id, n] → `DeliveryLogEntry`: the last LOG_KEEP attempts of an endpoint.
 *
 * Secrets are kept as they are, since they sign: never in the audit, never in a log.
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { Store } from './open-store.ts'
import type { EventType } from './events.ts'

export const WEBHOOKS_DB = 'webhooks'
export const WEBHOOK_STATE_DB = 'webhook-state'
export const WEBHOOK_LEASES_DB = 'webhook-leases'
export const WEBHOOK_LOG_DB = 'webhook-log'
/** Every sub-database an endpoint's change touches: what wakes a deliverer fed by another writer. */
export const WEBHOOK_DBS: readonly string[] = [WEBHOOKS_DB, WEBHOOK_STATE_DB, WEBHOOK_LEASES_DB]

/** Attempts kept per endpoint (`epx webhook log`). */
export const LOG_KEEP = 100

export interface WebhookSecret {
  readonly secret: string
  /** Until when it still signs beside a newer one (a rotation's overlap); absent: the current one. */
  readonly untilMs?: number
}

export interface WebhookEndpoint {
  readonly id: string
  readonly companyId: string
  readonly url: string
  /** The event types it wants. */
  readonly types: readonly EventType[]
  /** Newest first: the current secret, then the previous one during a rotation's overlap. */
  readonly secrets: readonly WebhookSecret[]
  /** ISO 8601 UTC. */
  readonly createdAt: string
  /** Set once retries ran out (ISO 8601 UTC); delivery stops until `redeliver`. */
  readonly failingSince?: string
}

/** A retry under way: the event, how many attempts failed, the first failure, the next try. */
export interface Retry { readonly seq: number; readonly attempts: number; readonly firstMs: number; readonly nextMs: number }

export interface DeliveryState {
  /** The last event seq delivered (or skipped: not a type it wants). */
  readonly cursor: number
  /** The key of the next log entry. */
  readonly logNext: number
  readonly retry?: Retry
}

export interface Lease { readonly owner: string; readonly untilMs: number }

export interface DeliveryLogEntry {
  readonly atMs: number
  /** The event's wire id (events.ts `eventId`). */
  readonly eventId: string
  /** The answer's status; absent when there was none (`error` says why). */
  readonly status?: number
  readonly error?: string
  readonly latencyMs: number
  /** When it is tried again; absent: delivered, or no more tries. */
  readonly nextTryMs?: number
}

/** What an attempt came to, as `settleSync` writes it. */
export interface Settlement {
  /** The cursor the attempt started from: if someone moved it since (`redeliver`), only the log is written. */
  readonly fromCursor: number
  /** The new cursor: the event delivered, or the last one skipped. */
  readonly cursor?: number
  /** A failure: the retry to keep (absent with `failing`: no more tries). */
  readonly retry?: Retry
  /** Retries ran out: the endpoint is failing from this instant. */
  readonly failingSinceMs?: number
  readonly log?: DeliveryLogEntry
  /** The lease to keep after it. */
  readonly leaseUntilMs: number
}

export interface Webhooks {
  get(id: string): WebhookEndpoint | undefined
  /** Every endpoint (of one company), in id order. */
  list(companyId?: string): WebhookEndpoint[]
  stateOf(id: string): DeliveryState
  leaseOf(id: string): Lease | undefined
  /** The endpoints marked failing, counted by company (the metric `epx_webhook_endpoints_failing`). */
  failingByCompany(): Map<string, number>
  /**
   * Per company with endpoints, when (ms) the oldest event one of its endpoints not failing
   * still has to deliver was written; undefined: none owes any (the metric
   * `epx_webhook_oldest_undelivered_seconds`). `dueMs` reads the company's events after a cursor.
   */
  oldestUndelivered(dueMs: (companyId: string, cursor: number, types: readonly EventType[]) => number | undefined): Map<string, number | undefined>
  /** The last `limit` attempts, newest first. */
  log(id: string, limit?: number): DeliveryLogEntry[]
  /** Inside `writeDurable`: a new endpoint whose cursor is `cursor` (the company's last event: only what comes after). */
  addSync(endpoint: WebhookEndpoint, cursor: number): void
  /** Inside `writeDurable`: the endpoint, its state, lease and log removed; false when there was none. */
  removeSync(id: string): boolean
  /** Inside `writeDurable`: `secret` signs from now on; the one in force before signs beside it until `nowMs + overlapMs`. */
  rotateSync(id: string, secret: string, nowMs: number, overlapMs: number): WebhookEndpoint | undefined
  /** Inside `writeDurable`: the cursor set to `cursor`, the retry and the failing mark dropped. */
  rewindSync(id: string, cursor: number): WebhookEndpoint | undefined
  /**
   * Inside `writeDurable`: the endpoint's lease for `owner` until `untilMs`, if no other
   * owner holds one still running at `nowMs`. Whether `owner` holds it now.
   */
  claimSync(id: string, owner: string, nowMs: number, untilMs: number): boolean
  /** Inside `writeDurable`: drops `owner`'s leases (it closes: another instance may go on at once). */
  releaseSync(owner: string): void
  /** Inside `writeDurable`: drops every lease not `owner`'s (a store no other instance writes: they were its predecessors'). */
  releaseOthersSync(owner: string): void
  /**
   * Inside `writeDurable`: writes an attempt's outcome if `owner` still holds the
   * endpoint's lease at `nowMs` (false: another instance took it over; nothing written).
   */
  settleSync(id: string, owner: string, nowMs: number, s: Settlement): boolean
}

/** A new endpoint id, `wh_` and 16 hex digits. */
export function newWebhookId (): string {
  return 'wh_' + randomBytes(8).toString('hex')
}

/** The secrets that sign at `nowMs`, newest first. */
export function secretsInForce (e: WebhookEndpoint, nowMs: number): string[] {
  return e.secrets.filter(s => s.untilMs === undefined || s.untilMs > nowMs).map(s => s.secret)
}

const START: DeliveryState = { cursor: 0, logNext: 0 }

export function openWebhooks (store: Store): Webhooks {
  const endpoints = store.db<WebhookEndpoint>(WEBHOOKS_DB)
  const states = store.db<DeliveryState>(WEBHOOK_STATE_DB)
  const leases = store.db<Lease>(WEBHOOK_LEASES_DB)
  const logs = store.db<DeliveryLogEntry>(WEBHOOK_LOG_DB)
  const stateOf = (id: string): DeliveryState => states.get(id) ?? START
  const holds = (id: string, owner: string, nowMs: number): boolean => {
    const l = leases.get(id)
    return l !== undefined && l.owner === owner && l.untilMs > nowMs
  }

  const api: Webhooks = {
    get: id => endpoints.get(id),
    list (companyId) {
      const out: WebhookEndpoint[] = []
      for (const { key, value } of endpoints.getRange()) {
        if (typeof key !== 'string') continue   // the msgpack shapes live under a symbol key
        if (companyId === undefined || value.companyId === companyId) out.push(value)
      }
      return out
    },
    stateOf,
    leaseOf: id => leases.get(id),
    failingByCompany () {
      const out = new Map<string, number>()
      for (const e of api.list()) if (e.failingSince) out.set(e.companyId, (out.get(e.companyId) ?? 0) + 1)
      return out
    },
    oldestUndelivered (dueMs) {
      const out = new Map<string, number | undefined>()
      for (const e of api.list()) {
        const ms = e.failingSince ? undefined : dueMs(e.companyId, stateOf(e.id).cursor, e.types)
        const was = out.get(e.companyId)
        out.set(e.companyId, ms === undefined ? was : was === undefined ? ms : Math.min(was, ms))
      }
      return out
    },
    log (id, limit = LOG_KEEP) {
      const out: DeliveryLogEntry[] = []
      for (const { value } of logs.getRange({ start: [id, Number.MAX_SAFE_INTEGER], end: [id, -1], reverse: true, limit })) out.push(value)
      return out
    },

    addSync (endpoint, cursor) {
      endpoints.putSync(endpoint.id, endpoint)
      states.putSync(endpoint.id, { cursor, logNext: 0 })
    },
    removeSync (id) {
      if (!endpoints.get(id)) return false
      endpoints.removeSync(id)
      states.removeSync(id)
      leases.removeSync(id)
      for (const key of [...logs.getKeys({ start: [id, -1], end: [id, Number.MAX_SAFE_INTEGER] })]) logs.removeSync(key)
      return true
    },
    rotateSync (id, secret, nowMs, overlapMs) {
      const e = endpoints.get(id)
      if (!e) return undefined
      const current = e.secrets.find(s => s.untilMs === undefined)
      const kept = current ? [{ secret: current.secret, untilMs: nowMs + overlapMs }] : []
      const next: WebhookEndpoint = { ...e, secrets: [{ secret }, ...kept] }
      endpoints.putSync(id, next)
      return next
    },
    rewindSync (id, cursor) {
      const e = endpoints.get(id)
      if (!e) return undefined
      const { retry: _, ...state } = stateOf(id)
      states.putSync(id, { ...state, cursor })
      const { failingSince: __, ...healthy } = e
      endpoints.putSync(id, healthy)
      return healthy
    },
    claimSync (id, owner, nowMs, untilMs) {
      const l = leases.get(id)
      if (l && l.owner !== owner && l.untilMs > nowMs) return false
      leases.putSync(id, { owner, untilMs })
      return true
    },
    releaseSync (owner) {
      for (const { key, value } of leases.getRange()) if (typeof key === 'string' && value.owner === owner) leases.removeSync(key)
    },
    releaseOthersSync (owner) {
      for (const { key, value } of leases.getRange()) if (typeof key === 'string' && value.owner !== owner) leases.removeSync(key)
    },
    settleSync (id, owner, nowMs, s) {
      const e = endpoints.get(id)
      if (!e || !holds(id, owner, nowMs)) return false
      const state = stateOf(id)
      let next: DeliveryState = { ...state, logNext: state.logNext + (s.log ? 1 : 0) }
      if (state.cursor === s.fromCursor) {
        const { retry: _, ...rest } = next
        next = { ...rest, ...(s.cursor === undefined ? {} : { cursor: s.cursor }), ...(s.retry ? { retry: s.retry } : {}) }
        if (s.failingSinceMs !== undefined) endpoints.putSync(id, { ...e, failingSince: new Date(s.failingSinceMs).toISOString() })
      }
      states.putSync(id, next)
      if (s.log) {
        logs.putSync([id, state.logNext], s.log)
        if (state.logNext >= LOG_KEEP) logs.removeSync([id, state.logNext - LOG_KEEP])
      }
      leases.putSync(id, { owner, untilMs: s.leaseUntilMs })
      return true
    },
  }
  return api
}
