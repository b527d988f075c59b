/**
 * Token records, keyed by public id, with an index from SHA-256 hash to id.
 * The secret itself is never stored.
 * @module
 */
import type { Store } from './open-store.ts'
import type { Scope } from '../contract/scopes.ts'
import { EpxError } from '../errors.ts'
import { openGeneration } from './generation.ts'

export interface TokenRecord {
  readonly id: string
  readonly hash: string
  readonly companyId: string
  readonly scopes: readonly Scope[]
  readonly createdAt: string
  /** Who made it (a console user, or `user (CLI)`); absent on tokens made before it was kept. */
  readonly createdBy?: string
  /** What it is for, in the words of whoever made it (a console form field). */
  readonly label?: string
  readonly expiresAt?: string
  readonly revokedAt?: string
  readonly lastUsedAt?: string
}

/** Whether a token still opens the door (`active`), and if not, why. */
export type TokenState = 'active' | 'revoked' | 'expired'

/**
 * Token liveness at an instant (DECISIONS.md "Authentication and tenancy"): a revoked
 * token is dead whatever its expiry; an expiring one is dead from its `expiresAt` on
 * (at that very instant included). `expiresAtMs` is for a caller that parsed it once.
 */
export function tokenState (t: Pick<TokenRecord, 'revokedAt' | 'expiresAt'>, nowMs: number, expiresAtMs = expiresAtMsOf(t)): TokenState {
  if (t.revokedAt) return 'revoked'
  return expiresAtMs <= nowMs ? 'expired' : 'active'
}

/** When a token expires, in ms since the epoch; Infinity for one that never does. */
export function expiresAtMsOf (t: Pick<TokenRecord, 'expiresAt'>): number {
  return t.expiresAt ? Date.parse(t.expiresAt) : Infinity
}

/** The token records: what the door and the CLI may ask of them. */
export interface Tokens {
  /** Sync read: the door calls it on every request. */
  byHash(hash: string): TokenRecord | undefined
  get(id: string): TokenRecord | undefined
  /** Every token, or a company's. */
  list(companyId?: string): TokenRecord[]
  add(t: TokenRecord): Promise<void>
  /** Marks it revoked (the first revocation time stays); EPX_NOT_FOUND when there is no such token. */
  revoke(id: string, at: string): Promise<TokenRecord>
  /** The store generation (see `generation.ts`). */
  generation(): number
  /** Records the last use, best effort and not awaited (see below). */
  touch(t: TokenRecord, nowMs: number): void
}

export function openTokens (store: Store): Tokens {
  const byId = store.db<TokenRecord>('tokens')
  const idByHash = store.db<string>('token-hashes')
  const generation = openGeneration(store)
  return {
    byHash (hash: string): TokenRecord | undefined {
      const id = idByHash.get(hash)
      return id === undefined ? undefined : byId.get(id)
    },
    get (id: string): TokenRecord | undefined {
      return byId.get(id)
    },
    list (companyId?: string): TokenRecord[] {
      // String keys only: the msgpack shapes live under a symbol key of the same db.
      return [...byId.getRange()].filter(e => typeof e.key === 'string').map(e => e.value)
        .filter(t => !companyId || t.companyId === companyId)
    },
    async add (t: TokenRecord): Promise<void> {
      await store.writeDurable(() => {
        byId.putSync(t.id, t)
        idByHash.putSync(t.hash, t.id)
        generation.bump()
      })
    },
    async revoke (id: string, at: string): Promise<TokenRecord> {
      const t = await store.writeDurable(() => {
        const t = byId.get(id)
        if (!t) return undefined
        const next = { ...t, revokedAt: t.revokedAt ?? at }
        byId.putSync(id, next)
        generation.bump()   // the door's cached callers must see the revocation
        return next
      })
      if (!t) throw new EpxError('EPX_NOT_FOUND', [`no token ${id}`])
      return t
    },
    generation: generation.read,
    /**
     * Best effort, not awaited by the door: a lost last-used time is not worth a 503.
     * The door calls it at most once a minute per token. The record is re-read inside the
     * write, never written from the caller's copy: that copy may predate a revocation the
     * CLI just made, and writing it back would undo it. It does not bump the generation:
     * the last-used time decides no request.
     */
    touch (t: TokenRecord, nowMs: number): void {
      const at = new Date(nowMs).toISOString()
      store.writeDurable(() => {
        const current = byId.get(t.id)
        if (current && !(current.lastUsedAt && current.lastUsedAt >= at)) byId.putSync(t.id, { ...current, lastUsedAt: at })
      }).catch(() => {})
    },
  }
}
