/**
 * Console passwords (DECISIONS.md "Web console"): scrypt from node:crypto, a random
 * salt per password, the parameters stored with the hash so they can be raised later
 * without invalidating older hashes. docs/console.md states the parameters.
 * @module
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'

/**
 * N = 2^15, r = 8, p = 1 (32 MiB, ~0.1 s of CPU here; N = 2^17 took 0.4 s): the login
 * throttle runs before the hash (DECISIONS.md "Robustness"), so this cost is not an amplifier.
 */
export const SCRYPT = { N: 2 ** 15, r: 8, p: 1, keyLength: 32, saltLength: 16 } as const

function derive (password: string, salt: Buffer, N: number, r: number, p: number, keyLength: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, keyLength, { N, r, p, maxmem: 256 * N * r }, (err, key) => err ? reject(err) : resolve(key))
  })
}

/** `scrypt$N$r$p$salt$hash` (base64url): self-describing, so old hashes still verify. */
export async function hashPassword (password: string): Promise<string> {
  const salt = randomBytes(SCRYPT.saltLength)
  const key = await derive(password, salt, SCRYPT.N, SCRYPT.r, SCRYPT.p, SCRYPT.keyLength)
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

/** Whether `password` matches `stored`; false (never a throw) for a malformed stored hash. */
export async function verifyPassword (password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number]
  const salt = Buffer.from(parts[4]!, 'base64url')
  const expected = Buffer.from(parts[5]!, 'base64url')
  if (![N, r, p].every(Number.isSafeInteger) || expected.length === 0) return false
  try {
    const key = await derive(password, salt, N, r, p, expected.length)
    return timingSafeEqual(key, expected)
  } catch {
    return false
  }
}

/** A password for a new or reset account: 18 random bytes, 24 base64url characters (144 bits). */
export function newPassword (): string {
  return randomBytes(18).toString('base64url')
}

/** What a chosen password must satisfy, or undefined when it does. */
export function passwordProblem (password: string): string | undefined {
  if (password.length < 12) return 'a password needs at least 12 characters'
  if (password.length > 256) return 'a password has at most 256 characters'
  return undefined
}
