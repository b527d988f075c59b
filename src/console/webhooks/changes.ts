/**
 * What the webhook pages change (DECISIONS.md "Events for BSPs"), each change and its
 * audit record in one durable write, with the audit actions and details `epx webhook`
 * writes (never a secret): `webhook.added`, `webhook.removed`, `webhook.rotated`,
 * `webhook.redelivered`. The endpoint is checked by the CLI's own check
 * (`webhooks/echo-check.ts`) before anything is written.
 * @module
 */
import type { AuditAction } from '../../store/audit.ts'
import { eventId, type EventType } from '../../store/events.ts'
import { newWebhookId, type WebhookEndpoint } from '../../store/webhooks.ts'
import { newWebhookSecret } from '../../contract/webhook-signature.ts'
import { echoCheck } from '../../webhooks/echo-check.ts'
import type { ConsoleDeps } from '../deps.ts'

type Deps = Pick<ConsoleDeps, 'store' | 'audit' | 'clock' | 'webhooks'>

/** How long a rotated-out secret still signs beside the new one, by default (as `epx webhook rotate-secret`). */
export const OVERLAP_HOURS = 24
export const MAX_OVERLAP_HOURS = 168

function audited<T> (deps: Deps, user: string, action: AuditAction, subject: string, details: Record<string, unknown>, change: () => T): Promise<T> {
  return deps.store.writeDurable(() => {
    const done = change()
    deps.audit.appendSync({ actor: { kind: 'console', user }, action, subject, outcome: 'ok', details }, deps.clock.now().getTime())
    return done
  }).then(done => { deps.webhooks.changed(); return done })
}

/** Checks `url` (form, address, echo; throws the check's refusal), then registers it from the company's next event on. */
export async function addEndpoint (deps: Deps, user: string, companyId: string, text: string, types: readonly EventType[]): Promise<WebhookEndpoint> {
  const url = await echoCheck(text, deps.webhooks.connect())
  const endpoint: WebhookEndpoint = {
    id: newWebhookId(), companyId, url: url.href, types, secrets: [{ secret: newWebhookSecret() }], createdAt: deps.clock.now().toISOString(),
  }
  const hooks = deps.webhooks.endpoints
  await audited(deps, user, 'webhook.added', endpoint.id, { companyId, url: endpoint.url, types }, () => hooks.addSync(endpoint, deps.webhooks.lastEvent(companyId)))
  return endpoint
}

export function removeEndpoint (deps: Deps, user: string, e: WebhookEndpoint): Promise<boolean> {
  return audited(deps, user, 'webhook.removed', e.id, { companyId: e.companyId, url: e.url }, () => deps.webhooks.endpoints.removeSync(e.id))
}

/** A new secret, the current one signing beside it for `hours`; resolves to the new secret. */
export async function rotateSecret (deps: Deps, user: string, e: WebhookEndpoint, hours: number): Promise<string> {
  const secret = newWebhookSecret()
  const nowMs = deps.clock.now().getTime()
  await audited(deps, user, 'webhook.rotated', e.id, { companyId: e.companyId, overlapHours: hours }, () => deps.webhooks.endpoints.rotateSync(e.id, secret, nowMs, hours * 3_600_000))
  return secret
}

/** The cursor moved so the next delivery is event `fromSeq` (undefined: where it stopped); a failing endpoint is tried again. */
export async function redeliver (deps: Deps, user: string, e: WebhookEndpoint, fromSeq: number | undefined): Promise<string> {
  const hooks = deps.webhooks.endpoints
  const cursor = fromSeq === undefined ? hooks.stateOf(e.id).cursor : fromSeq - 1
  const from = eventId(cursor + 1)
  await audited(deps, user, 'webhook.redelivered', e.id, { companyId: e.companyId, from }, () => hooks.rewindSync(e.id, cursor))
  return from
}
