/**
 * Login throttling, per account and per client address, decided BEFORE the password is
 * hashed (DECISIONS.md "Robustness": a scrypt hash is the costly part, so a throttled
 * burst must cost none). Each attempt is counted when it starts, not when it fails, so
 * a burst of concurrent attempts cannot all slip in before the first failure lands; a
 * success clears the account's count and gives the address its attempt back.
 * @module
 */

export interface ThrottleLimits {
  /** Attempts per account within the window. */
  readonly perAccount: number
  /** Attempts per client address within the window (several people behind one NAT). */
  readonly perAddress: number
  readonly windowMs: number
}

export const LOGIN_LIMITS: ThrottleLimits = { perAccount: 5, perAddress: 20, windowMs: 15 * 60_000 }

interface Window {
  count: number
  readonly resetAtMs: number
  /** An account's window: its password as it was when the window opened (`passwordChangedAt`). */
  readonly password?: string
}

/** What a refused attempt is told: which window is full, and until when. */
export interface Lock {
  /** `account`: this username, from any address; `address`: this client address, for any account. */
  readonly what: 'account' | 'address'
  readonly untilMs: number
  /** Seconds until then, rounded up (`Retry-After`). */
  readonly seconds: number
}

/** An address at its limit, as the admin page lists it. */
export interface AddressLock { readonly address: string; readonly attempts: number; readonly untilMs: number }

export function createLoginThrottle (limits: ThrottleLimits = LOGIN_LIMITS) {
  const windows = new Map<string, Window>()

  const current = (key: string, nowMs: number): Window | undefined => {
    const w = windows.get(key)
    if (w && w.resetAtMs <= nowMs) { windows.delete(key); return undefined }
    return w
  }
  const prune = (nowMs: number) => {
    if (windows.size < 10_000) return
    for (const [k, w] of windows) if (w.resetAtMs <= nowMs) windows.delete(k)
  }

  return {
    /**
     * Counts an attempt for (account, address) and returns undefined, or, when either is
     * over its limit, that lock (the one that ends last) and counts nothing.
     * `password`: a version of the account's password (its `passwordChangedAt`), if it exists.
     */
    attempt (account: string, address: string, nowMs: number, password?: string): Lock | undefined {
      // A password set since the account's window opened (an admin's reset, from the console
      // or the CLI) starts the account afresh: failures against the old one no longer count,
      // and whoever kept the account locked out cannot keep its owner from the new one.
      const own = current(`a:${account}`, nowMs)
      if (own && own.password !== password) windows.delete(`a:${account}`)
      const keys: Array<[string, number]> = [[`a:${account}`, limits.perAccount], [`ip:${address}`, limits.perAddress]]
      let lock: Lock | undefined
      for (const [key, limit] of keys) {
        const w = current(key, nowMs)
        if (w && w.count >= limit && (!lock || w.resetAtMs > lock.untilMs)) {
          lock = { what: key.startsWith('a:') ? 'account' : 'address', untilMs: w.resetAtMs, seconds: Math.ceil((w.resetAtMs - nowMs) / 1000) }
        }
      }
      if (lock) return lock
      prune(nowMs)
      for (const [key] of keys) {
        const w = current(key, nowMs)
        if (w) w.count++
        else windows.set(key, { count: 1, resetAtMs: nowMs + limits.windowMs, ...(key.startsWith('a:') && password !== undefined ? { password } : {}) })
      }
      return undefined
    },
    /** The addresses at their limit now, the latest lock first. */
    addressLocks (nowMs: number): AddressLock[] {
      const locks: AddressLock[] = []
      for (const [key, w] of windows) {
        if (key.startsWith('ip:') && w.resetAtMs > nowMs && w.count >= limits.perAddress) locks.push({ address: key.slice(3), attempts: w.count, untilMs: w.resetAtMs })
      }
      return locks.sort((a, b) => b.untilMs - a.untilMs)
    },
    /** Lifts an address's lock (an admin's decision: a NAT of honest users); whether there was one. */
    liftAddress (address: string): boolean {
      return windows.delete(`ip:${address}`)
    },
    succeeded (account: string, address: string): void {
      windows.delete(`a:${account}`)
      const w = windows.get(`ip:${address}`)
      if (w && w.count > 0) w.count--
    },
  }
}
export type LoginThrottle = ReturnType<typeof createLoginThrottle>
