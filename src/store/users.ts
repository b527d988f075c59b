/**
 * Console accounts, keyed by username: a service admin, or a member of one company.
 * Only the scrypt hash of the password is stored (auth/password.ts).
 * @module
 */
import type { Store } from './open-store.ts'
import { EpxError } from '../errors.ts'

export interface UserRecord {
  readonly username: string
  /** A service admin sees every company; a member only its `companyId`'s. */
  readonly admin: boolean
  readonly companyId: string | null
  readonly passwordHash: string
  readonly disabled: boolean
  readonly createdAt: string
  readonly passwordChangedAt: string
  /** A generated password, given by an admin (creation, reset): the user must choose its own at its next login. */
  readonly mustChangePassword?: boolean
}

/** 2 to 64 characters: letters, digits, `.`, `_`, `-`, `@`; compared case-insensitively (stored lower-case). */
export const USERNAME = /^[a-z0-9][a-z0-9._@-]{1,63}$/

export function normalizeUsername (text: string): string {
  return text.trim().toLowerCase()
}

/** The console's accounts: what the console, the CLI and the demo may ask of them. */
export interface Users {
  get(username: string): UserRecord | undefined
  list(): UserRecord[]
  /** EPX_CONFLICT when the username is taken. */
  add(u: UserRecord): Promise<void>
  /** Rewrites one account atomically; EPX_NOT_FOUND when there is none. */
  update(username: string, change: (u: UserRecord) => UserRecord): Promise<UserRecord>
}

export function openUsers (store: Store): Users {
  const db = store.db<UserRecord>('users')
  const users: Users = {
    get (username: string): UserRecord | undefined {
      return db.get(normalizeUsername(username))
    },
    list (): UserRecord[] {
      // String keys only: the msgpack shapes live under a symbol key of the same db.
      return [...db.getRange()].filter(e => typeof e.key === 'string').map(e => e.value)
    },
    async add (u: UserRecord): Promise<void> {
      const added = await store.writeDurable(() => {
        if (db.get(u.username)) return false
        db.putSync(u.username, u)
        return true
      })
      if (!added) throw new EpxError('EPX_CONFLICT', [`user ${u.username} already exists`])
    },
    async update (username: string, change: (u: UserRecord) => UserRecord): Promise<UserRecord> {
      const next = await store.writeDurable(() => {
        const u = db.get(username)
        if (!u) return undefined
        const n = change(u)
        db.putSync(username, n)
        return n
      })
      if (!next) throw new EpxError('EPX_NOT_FOUND', [`no user '${username}' (see 'epx user list')`])
      return next
    },
  }
  return users
}
