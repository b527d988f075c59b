/**
 * The store generation: one small counter that every write a reader may have cached
 * bumps in the same transaction (tokens and companies: the door's per-connection
 * callers; the revisions' latest index: the GET's metadata), so a reader keeps what it
 * read until the counter moves (bench/README.md#where-the-doors-thread-spends-a-get).
 * @module
 */
import type { Store } from './open-store.ts'

const KEY = 'generation'

/** The counter: read by whoever caches, bumped by whoever changes what is cached. */
export interface Generation {
  /**
   * Sync, every request: one small read instead of the records it stands for. It
   * lives in LMDB, not in memory, so a write by the CLI (another process) moves it too.
   */
  read(): number
  /** Call inside the `writeDurable` fn that changes a cached record. */
  bump(): void
}

export function openGeneration (store: Store): Generation {
  const db = store.db<number>('generation')
  return {
    read (): number {
      return db.get(KEY) ?? 0
    },
    bump (): void {
      db.putSync(KEY, (db.get(KEY) ?? 0) + 1)
    },
  }
}
