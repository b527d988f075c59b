/**
 * The authentication generation: one small counter that every token and company write
 * bumps in the same transaction, so the door may keep a connection's caller until the
 * counter moves (issue 5, finding 3).
 * @module
 */
import type { Store } from './open-store.ts'

const KEY = 'auth'

export function openAuthGeneration (store: Store) {
  const db = store.db<number>('auth-generation')
  return {
    /**
     * Sync, every request: one small read instead of the token and company records. It
     * lives in LMDB, not in memory, so a write by the CLI (another process) moves it too.
     */
    read (): number {
      store.guard()
      return db.get(KEY) ?? 0
    },
    /** Call inside the `writeDurable` fn that changes a token or a company. */
    bump (): void {
      db.putSync(KEY, (db.get(KEY) ?? 0) + 1)
    },
  }
}
export type AuthGeneration = ReturnType<typeof openAuthGeneration>
