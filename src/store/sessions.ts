/**
 * Console sessions, keyed by the SHA-256 of the session id: the id itself (the cookie)
 * is never stored, so a copy of the store opens no session.
 * @module
 */
import type { Store } from './open-store.ts'

export interface SessionRecord {
  readonly username: string
  /** The per-session CSRF token every form carries (`_csrf`). */
  readonly csrfToken: string
  readonly createdAtMs: number
  readonly lastSeenAtMs: number
}

/** Console sessions by the hash of their id. */
export interface Sessions {
  get(idHash: string): SessionRecord | undefined
  put(idHash: string, s: SessionRecord): Promise<void>
  delete(idHash: string): Promise<void>
  /** Deletes every session `ended` picks (a disabled user's, expired ones); returns how many went. */
  deleteWhere(ended: (s: SessionRecord) => boolean): Promise<number>
}

export function openSessions (store: Store): Sessions {
  const db = store.db<SessionRecord>('sessions')
  return {
    get (idHash: string): SessionRecord | undefined {
      return db.get(idHash)
    },
    async put (idHash: string, s: SessionRecord): Promise<void> {
      await store.writeDurable(() => {
        db.putSync(idHash, s)
      })
    },
    async delete (idHash: string): Promise<void> {
      await store.writeDurable(() => { db.removeSync(idHash) })
    },
    /** Deletes every session `ended` picks (a disabled user's, expired ones); returns how many went. */
    async deleteWhere (ended: (s: SessionRecord) => boolean): Promise<number> {
      return store.writeDurable(() => {
        let n = 0
        for (const { key, value } of db.getRange()) {
          if (typeof key === 'string' && ended(value)) { db.removeSync(key); n++ }
        }
        return n
      })
    },
  }
}
