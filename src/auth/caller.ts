/**
 * The authenticated BSP behind a request: what the authentication chain yields.
 * @module
 */
export interface Caller {
  readonly companyId: string
  readonly tokenId: string
  /** SHA-256 fingerprint of the client certificate, as node prints it (`AB:CD:…`). */
  readonly certFingerprint256: string
  readonly perimeter: 'all' | readonly string[]
}
