/**
 * What changes a company's webhook endpoints (DECISIONS.md "Events for BSPs"), for the
 * console's pages and `epx webhook` alike: each change and its audit record in one durable
 * write (`webhook.added`, `webhook.removed`, `webhook.rotated`, `webhook.redelivered`),
 * never with a secret in the record. An endpoint is checked (`echo-check.ts`) before
 * anything is written.
 * @module
 */
import type { Audit, AuditAction, AuditActor } from '../store/audit.ts'
import { eventId, openEvents, type EventType } from '../store/events.ts'
import type { Store } from '../store/open-store.ts'
import { newWebhookId, openWebhooks, type WebhookEndpoint } from '../store/webhooks.ts'
import { newWebhookSecret } from '../contract/webhook-signature.ts'
import { echoCheck } from './echo-check.ts'
import type { ConnectOptions } from './post-event.ts'

/** How long a rotated-out secret still signs beside the new one, by default, and at most. */
export const OVERLAP_HOURS = 24
export const MAX_OVERLAP_HOURS = 168

export interface WebhookChanges {
  readonly store: Store
  readonly audit: Audit
  readonly actor: AuditActor
  readonly now: () => number
  /** Told once a change is durable (a running deliverer looks again). */
  readonly changed?: () => void
}

function audited<T> (c: WebhookChanges, action: AuditAction, subject: string, details: Record<string, unknown>, change: () => T): Promise<T> {
  return c.store.writeDurable(() => {
    const done = change()
    c.audit.appendSync({ actor: c.actor, action, subject, outcome: 'ok', details }, c.now())
    return done
  }).then(done => { c.changed?.(); return done })
}

/** Checks `text` (form, address, echo; throws the check's refusal), then registers it from the company's next event on. */
export async function addEndpoint (c: WebhookChanges, connect: ConnectOptions, companyId: string, text: string, types: readonly EventType[]): Promise<WebhookEndpoint> {
  const url = await echoCheck(text, connect)
  const endpoint: WebhookEndpoint = {
    id: newWebhookId(), companyId, url: url.href, types, secrets: [{ secret: newWebhookSecret() }], createdAt: new Date(c.now()).toISOString(),
  }
  const hooks = openWebhooks(c.store)
  const events = openEvents(c.store)
  await audited(c, 'webhook.added', endpoint.id, { companyId, url: endpoint.url, types }, () => hooks.addSync(endpoint, events.lastSeq(companyId)))
  return endpoint
}

export function removeEndpoint (c: WebhookChanges, e: WebhookEndpoint): Promise<boolean> {
  return audited(c, 'webhook.removed', e.id, { companyId: e.companyId, url: e.url }, () => openWebhooks(c.store).removeSync(e.id))
}

/** A new secret, the current one signing beside it for `hours`; resolves to the new secret and when the old one stops. */
export async function rotateSecret (c: WebhookChanges, e: WebhookEndpoint, hours: number): Promise<{ secret: string; oldUntilMs: number }> {
  const secret = newWebhookSecret()
  const nowMs = c.now()
  await audited(c, 'webhook.rotated', e.id, { companyId: e.companyId, overlapHours: hours }, () => openWebhooks(c.store).rotateSync(e.id, secret, nowMs, hours * 3_600_000))
  return { secret, oldUntilMs: nowMs + hours * 3_600_000 }
}

/** The cursor moved so the next delivery is event `fromSeq` (undefined: where it stopped); a failing endpoint is tried again. Resolves to the id delivered next. */
export async function redeliver (c: WebhookChanges, e: WebhookEndpoint, fromSeq: number | undefined): Promise<string> {
  const hooks = openWebhooks(c.store)
  const cursor = fromSeq === undefined ? hooks.stateOf(e.id).cursor : fromSeq - 1
  const from = eventId(cursor + 1)
  await audited(c, 'webhook.redelivered', e.id, { companyId: e.companyId, from }, () => hooks.rewindSync(e.id, cursor))
  return from
}
