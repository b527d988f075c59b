/**
 * The authenticated BSP behind a request: what the authentication chain yields.
 * @module
 */
import type { CompanyRecord } from '../store/companies.ts'
export interface Caller {
  readonly companyId: string
  readonly tokenId: string
  /** SHA-256 fingerprint of the client certificate, as node prints it (`AB:CD:…`). */
  readonly certFingerprint256: string
  readonly perimeter: 'all' | readonly string[]
  /** Its company's own request budgets, if it has any (`http/rate-limit.ts`). */
  readonly rateLimit?: CompanyRecord['rateLimit']
  /** Its company's own storage quota, if it has one (`apply/quota.ts`). */
  readonly quotaBytesPerDay?: number
}
