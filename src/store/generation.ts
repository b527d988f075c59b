/**
 * The store generation: one small counter that every write a reader may have cached
 * bumps in the same transaction (tokens and companies: the door's per-connection
 * callers; the revisions' latest index: the GET's metadata), so a reader keeps what it
 * read until the counter moves (bench/README.md).
 * @module
 */
import type { Store } from './open-store.ts'

const KEY = 'generation'

export function openGeneration (store: Store) {
  const db = store.db<number>('generation')
  return {
    /**
     * Sync, every request: one small read instead of the records it stands for. It
     * lives in LMDB, not in memory, so a write by the CLI (another process) moves it too.
     */
    read (): number {
      return db.get(KEY) ?? 0
    },
    /** Call inside the `writeDurable` fn that changes a cached record. */
    bump (): void {
      db.putSync(KEY, (db.get(KEY) ?? 0) + 1)
    },
  }
}
