/**
 * pg's own parser of `postgresql://` URLs (pg-connection-string), so the configuration is
 * read exactly as pg will read it; loaded on first use: a process whose store is LMDB
 * (and the door's worker) never loads it.
 * @module
 */
import { createRequire } from 'node:module'
import type { ConnectionOptions } from 'pg-connection-string'

export function parseConnectionString (connectionString: string): ConnectionOptions {
  return (createRequire(import.meta.url)('pg-connection-string') as typeof import('pg-connection-string')).parse(connectionString)
}
