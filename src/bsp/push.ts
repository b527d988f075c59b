/**
 * Sending a Programme_Soutirage: checked locally first with the server's own validator
 * (the same JSON-pointer details, without a round trip), then posted; a 503, a 429 or a network
 * error is retried after a jittered backoff that honours Retry-After. Retrying is safe:
 * the same emitted_at gives the same instruction ids and overwrites (contract §2.3).
 * A 429 QUOTA_EXCEEDED is not retried here: the company's day of storage is used up, and
 * its Retry-After runs to the next Paris day (hours): the answer comes back at once, for
 * the caller to send nothing before `retryAfterSecs`.
 * @module
 */
import type { BspClient, ProgrammeAnswer } from './client.ts'
import { checkProgramme } from './check.ts'
import { backoffMs, type Timing } from './timing.ts'

export type PushResult =
  | ProgrammeAnswer
  | { readonly kind: 'invalid'; readonly details: Readonly<Record<string, string>> }

export interface PushOptions {
  readonly client: BspClient
  /** The programme, parsed. */
  readonly programme: unknown
  /** Tries on 503, 429 RATE_LIMITED or a network error (default 5); 429 QUOTA_EXCEEDED is returned at once. */
  readonly attempts?: number
  readonly timing: Timing
  /** Called before each wait, e.g. to say so. */
  readonly onRetry?: (why: string, waitMs: number) => void
  /**
   * This machine's clock (default the system's): an emitted_at more than
   * `maxClockSkewSeconds` (default the server's, 300) ahead of it is not sent, since the
   * server would refuse it.
   */
  readonly now?: () => Date
  readonly maxClockSkewSeconds?: number
  /** The server's `inbound.maxSiteKw` when it is not the default (100,000 kW): a slot above it is not sent. */
  readonly maxSiteKw?: number
}

export async function pushProgramme (o: PushOptions): Promise<PushResult> {
  const checked = checkProgramme(o.programme, { now: (o.now ?? (() => new Date()))(), maxClockSkewSeconds: o.maxClockSkewSeconds, maxSiteKw: o.maxSiteKw })
  if (!checked.ok) return { kind: 'invalid', details: checked.details }
  const attempts = o.attempts ?? 5
  const body = JSON.stringify(o.programme)
  let last: PushResult = { kind: 'unreachable', detail: 'no attempt made' }
  for (let attempt = 0; attempt < attempts; attempt++) {
    last = await o.client.postProgramme(body)
    if (last.kind !== 'retry' && last.kind !== 'unreachable') return last
    if (last.kind === 'retry' && last.code === 'QUOTA_EXCEEDED') return last
    if (attempt + 1 < attempts) {
      const wait = backoffMs(attempt, last.kind === 'retry' ? last.retryAfterSecs : undefined, o.timing.random)
      o.onRetry?.(last.kind === 'retry' ? `${last.status}: ${last.detail}` : `network: ${last.detail}`, wait)
      await o.timing.sleep(wait)
    }
  }
  return last
}
