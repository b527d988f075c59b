/**
 * Request budgets per company (DECISIONS.md "Rate limits and quotas"): a token bucket per
 * company and kind of request (GET and HEAD together, POST), in the memory of the door's
 * thread. Checked once the authentication chain has named the company, before the handler
 * runs, so a POST over budget is refused before its body is read.
 *
 * On the accepted path a check is a Map lookup and a few numbers: no store access, no
 * object per request (the bucket keeps its `RateLimit-Policy` text; only the `RateLimit`
 * value, which changes with every request, is a new string).
 *
 * The headers are draft-ietf-httpapi-ratelimit-headers' structured fields: the policy
 * names the kind, its quota `q` the bucket's size, its window `w` the seconds an empty
 * bucket takes to fill; `RateLimit` says the requests left `r` and the seconds `t` until
 * the bucket is full again.
 * @module
 */
import type { Caller } from '../auth/caller.ts'
import type { EpxConfig } from '../config.ts'
import type { RequestBudget } from '../store/companies.ts'

/** Which budget a request spends: GET and HEAD share one, POST has its own. */
export type BudgetKind = 'get' | 'post'

export class Bucket {
  /** Tokens left (fractional while it refills). */
  tokens = 0
  /** When `tokens` was last brought up to date. */
  atMs = 0
  perSecond = 0
  burst = 0
  /** `RateLimit-Policy`, made when the budget changes. */
  policy = ''

  constructor (readonly companyId: string, readonly kind: BudgetKind) {}

  /**
   * Spends one token at `nowMs` under `budget`; false when none is left (nothing spent).
   * A new budget (the company's limits changed) starts with a full bucket of its own size.
   */
  take (budget: RequestBudget, nowMs: number): boolean {
    if (budget.perSecond !== this.perSecond || budget.burst !== this.burst) this.reset(budget, nowMs)
    else this.refill(nowMs)
    if (this.tokens < 1) return false
    this.tokens -= 1
    return true
  }

  /** Whole seconds until one token is there again (at least 1): the 429's `Retry-After`. */
  retryAfterSeconds (): number {
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perSecond))
  }

  /** The `RateLimit` field value: requests left and seconds until the bucket is full. */
  remaining (): string {
    const t = Math.ceil((this.burst - this.tokens) / this.perSecond)
    return `"${this.kind}";r=${Math.floor(this.tokens)};t=${t}`
  }

  private reset (budget: RequestBudget, nowMs: number): void {
    this.perSecond = budget.perSecond
    this.burst = budget.burst
    this.tokens = budget.burst
    this.atMs = nowMs
    this.policy = `"${this.kind}";q=${budget.burst};w=${Math.ceil(budget.burst / budget.perSecond)}`
  }

  private refill (nowMs: number): void {
    const elapsed = nowMs - this.atMs
    // A clock that steps back refills nothing (and spends nothing of what was refilled).
    if (elapsed <= 0) return
    this.tokens = Math.min(this.burst, this.tokens + elapsed * this.perSecond / 1000)
    this.atMs = nowMs
  }
}

export interface RateLimiter {
  /** The bucket a request of `caller` spends from (made on a company's first request). */
  bucketOf(caller: Caller, kind: BudgetKind): Bucket
  /** The budget that applies to `caller`: its company's own, else the configuration's. */
  budgetOf(caller: Caller, kind: BudgetKind): RequestBudget
}

export function createRateLimiter (defaults: EpxConfig['api']['rateLimit']): RateLimiter {
  // One entry per company that ever called this door thread: a few dozen.
  const gets = new Map<string, Bucket>()
  const posts = new Map<string, Bucket>()
  return {
    bucketOf (caller, kind) {
      const buckets = kind === 'get' ? gets : posts
      let b = buckets.get(caller.companyId)
      if (b === undefined) buckets.set(caller.companyId, b = new Bucket(caller.companyId, kind))
      return b
    },
    budgetOf (caller, kind) {
      return caller.rateLimit?.[kind] ?? defaults[kind]
    },
  }
}

/** The budget a method spends: HEAD is a GET without its body. */
export function budgetKindOf (method: string): BudgetKind {
  return method === 'POST' ? 'post' : 'get'
}
