/**
 * Console accounts (DECISIONS.md "Web console"): the rules the CLI (`epx user ...`) and
 * the console's admin pages share. A user is a service admin or a member of exactly one
 * existing company; disabling a user or resetting its password ends its sessions.
 * @module
 */
import { EpxError } from '../errors.ts'
import { openCompanies } from '../store/companies.ts'
import type { Store } from '../store/open-store.ts'
import { openSessions } from '../store/sessions.ts'
import { normalizeUsername, openUsers, USERNAME, type UserRecord } from '../store/users.ts'
import { hashPassword, newPassword, passwordProblem } from './password.ts'

export interface NewUser {
  readonly username: string
  readonly admin: boolean
  readonly companyId: string | null
  /** Omitted: a password is generated (and returned once). */
  readonly password?: string
  /**
   * The user must choose its own password at its first login: what the doors ask for a
   * password they generate and hand over (`epx user add` without --password-stdin, the
   * console's "Ajouter"), as a reset always does.
   */
  readonly mustChangePassword?: boolean
}

/** Why a username is refused, or undefined. */
export function usernameProblem (username: string): string | undefined {
  return USERNAME.test(username)
    ? undefined
    : `invalid username '${username}': use 2 to 64 letters, digits, ".", "_", "-" or "@", starting with a letter or digit`
}

/** Creates the account; returns it with its password (the generated one when none was given). */
export async function addUser (store: Store, u: NewUser, nowMs: number): Promise<{ record: UserRecord; password: string }> {
  const username = normalizeUsername(u.username)
  const bad = usernameProblem(username)
  if (bad) throw new EpxError('EPX_USAGE', [bad])
  if (u.admin === (u.companyId !== null)) throw new EpxError('EPX_USAGE', ['a user is either a service admin or the member of one company'])
  if (u.companyId !== null && !openCompanies(store).get(u.companyId)) {
    throw new EpxError('EPX_NOT_FOUND', [`no company '${u.companyId}' (see 'epx company list')`])
  }
  const password = u.password ?? newPassword()
  const weak = passwordProblem(password, username)
  if (weak) throw new EpxError('EPX_USAGE', [weak])
  const at = new Date(nowMs).toISOString()
  const record: UserRecord = {
    username, admin: u.admin, companyId: u.companyId, passwordHash: await hashPassword(password),
    disabled: false, createdAt: at, passwordChangedAt: at, ...(u.mustChangePassword ? { mustChangePassword: true } : {}),
  }
  await openUsers(store).add(record)
  return { record, password }
}

/** Disables the account (its sessions end at once) or enables it again. */
export async function setUserDisabled (store: Store, username: string, disabled: boolean): Promise<UserRecord> {
  const name = normalizeUsername(username)
  const record = await openUsers(store).update(name, u => ({ ...u, disabled }))
  if (disabled) await openSessions(store).deleteWhere(s => s.username === name)
  return record
}

/**
 * A new generated password (returned once), to be changed at the next login; the user's
 * sessions end. A disabled account stays disabled.
 */
export async function resetPassword (store: Store, username: string, nowMs: number): Promise<{ record: UserRecord; password: string }> {
  const name = normalizeUsername(username)
  const password = newPassword()
  const passwordHash = await hashPassword(password)
  const record = await openUsers(store).update(name, u => ({
    ...u, passwordHash, passwordChangedAt: new Date(nowMs).toISOString(), mustChangePassword: true,
  }))
  await openSessions(store).deleteWhere(s => s.username === name)
  return { record, password }
}
