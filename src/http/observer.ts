/**
 * What the API door tells whoever watches it (plugin.ts wires the metrics and the audit
 * trail to it): every method is optional (metrics off: only the audit's), cheap, and never throws.
 * @module
 */
import type { TokenRecord } from '../store/tokens.ts'

export interface ApiObserver {
  /** A TLS handshake completed. */
  handshake?(): void
  /** A TLS handshake failed; `reason` is node's error code (or `unknown`). */
  handshakeFailed?(reason: string): void
  /**
   * A request ended: its door (`inbound`, `outbound`) and route (the path's last segment,
   * `besoins-agreges`…), both `none` when no route took it, then method, status, error
   * code if any, duration.
   */
  answered?(door: string, route: string, method: string, status: number, code: string | undefined, seconds: number): void
  /** A request of `companyId` was refused 429 RATE_LIMITED: over its budget of `kind` requests (`http/rate-limit.ts`). */
  rateLimited?(companyId: string, door: string, kind: 'get' | 'post', nowMs: number): void
  /** A programme of `companyId` was refused 429 QUOTA_EXCEEDED: over its storage quota of the day (`apply/quota.ts`). */
  quotaExceeded?(companyId: string, nowMs: number): void
  /** A revoked or expired token was presented. */
  deadToken?(token: TokenRecord, reason: 'revoked' | 'expired', nowMs: number): void
}
