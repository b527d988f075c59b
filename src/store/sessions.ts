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
  /**
   * What the page after a form's redirect shows once (post/redirect/get): a notice, a
   * report, or a generated secret, which never goes into a URL. `key` says which page it
   * is for; the page that shows it deletes it.
   */
  readonly flash?: { readonly key: string; readonly data: unknown }
}

/** Console sessions by the hash of their id. */
export interface Sessions {
  get(idHash: string): SessionRecord | undefined
  put(idHash: string, s: SessionRecord): Promise<void>
  delete(idHash: string): Promise<void>
  /** Rewrites one session atomically (`change` returns undefined: left as it is); the record written, if any. */
  update(idHash: string, change: (s: SessionRecord) => SessionRecord | undefined): Promise<SessionRecord | undefined>
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
    async update (idHash: string, change: (s: SessionRecord) => SessionRecord | undefined): Promise<SessionRecord | undefined> {
      return store.writeDurable(() => {
        const s = db.get(idHash)
        const next = s && change(s)
        if (next) db.putSync(idHash, next)
        return next
      })
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
