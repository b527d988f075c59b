/**
 * Removals are kept in the database REMOVALS_KEPT_DAYS so a replica catching up sees
 * them; the store that follows the feed drops older ones every hour (sql.ts
 * `pruneRemovals`), while the database answers. Any instance may; a second finds nothing.
 * @module
 */
import type { Logger } from '../../host/contract.ts'
import type { Connections } from './connections.ts'
import { pruneRemovals } from './sql.ts'

const PRUNE_EVERY_MS = 3_600_000

/** Starts the hourly pruning; returns its stop. */
export function startPruner (connections: Connections, up: () => boolean, log: Logger | undefined, path: string): () => void {
  const timer = setInterval(() => {
    if (!up()) return
    connections.withClient(client => pruneRemovals(client)).catch(err => {
      log?.warn({ path, err }, 'dropping old removals from the database failed: retried within the hour')
    })
  }, PRUNE_EVERY_MS)
  timer.unref?.()
  return () => clearInterval(timer)
}
