/**
 * Every sub-database of the store, whatever its engine, and whether its values are raw
 * bytes (the others are msgpack). The store's modules open theirs by these names; an
 * engine that receives another writer's records (postgres/replica.ts) opens each with its
 * encoding before it applies them, since a thread may receive records of a sub-database it
 * never opened itself.
 * @module
 */

/**
 * Revisions' bytes, [segment, offset] → bytes, written in the transaction of their
 * metadata: a replica writes them into its own segment file of that name at that offset
 * (revision-segments.ts), so a revision's `SegmentRef` holds on every instance, and
 * keeps an empty marker in LMDB (retention finds a segment's rows by it).
 */
export const REVISION_BYTES_DB = 'rev-bytes'

/**
 * Every sub-database of the store and whether its values are raw bytes: a replica
 * opens each one with its encoding before it applies another writer's records, since
 * a thread may receive records of a sub-database it never opened itself.
 */
export const SUB_DATABASES: Readonly<Record<string, { readonly binary: boolean }>> = {
  companies: { binary: false },
  tokens: { binary: false },
  'token-hashes': { binary: false },
  users: { binary: false },
  sessions: { binary: false },
  generation: { binary: false },
  'rev-latest': { binary: false },
  'rev-older': { binary: false },
  'rev-expiry': { binary: false },
  'rev-segments': { binary: false },
  [REVISION_BYTES_DB]: { binary: true },
  instructions: { binary: true },
  'instruction-effective': { binary: false },
  'in-force': { binary: false },
  metering: { binary: true },
  audit: { binary: false },
  tenure: { binary: false },
  withdrawals: { binary: false },
  deliveries: { binary: false },
  quota: { binary: false },
  events: { binary: false },
  'event-heads': { binary: false },
  'event-throttle': { binary: false },
  webhooks: { binary: false },
  'webhook-state': { binary: false },
  'webhook-leases': { binary: false },
  'webhook-log': { binary: false },
}
