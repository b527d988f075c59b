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
  // 24 random characters are almost never refused; drawing again costs nothing if one is.
  for (;;) {
    const p = randomBytes(18).toString('base64url')
    if (passwordWeakness(p) === undefined) return p
  }
}

export const PASSWORD_MIN = 12
export const PASSWORD_MAX = 256
/** Distinct characters a password needs: `aaaaaaaaaaab` and `abababababab` are not passwords. */
export const PASSWORD_DISTINCT = 5

/**
 * Passwords everyone tries first, letters only, lower-case: a password made of one of
 * them with digits or signs around (`Motdepasse2024!`) is refused. Short on purpose:
 * the length and the login throttle do the rest (NIST SP 800-63B §5.1.1.2 asks for a
 * check against common passwords, not for composition rules).
 */
const COMMON = new Set([
  'password', 'passwort', 'motdepasse', 'motdepass', 'azerty', 'azertyuiop', 'qwerty', 'qwertyuiop', 'qwertz',
  'asdfghjkl', 'qsdfghjklm', 'wxcvbn', 'zxcvbnm', 'abc', 'abcdef', 'admin', 'administrateur', 'administrator',
  'root', 'toor', 'secret', 'changeme', 'welcome', 'bienvenue', 'letmein', 'iloveyou', 'jetaime', 'soleil',
  'bonjour', 'doudou', 'chouchou', 'loulou', 'marseille', 'paris', 'football', 'dragon', 'monkey', 'master',
  'sunshine', 'princess', 'superman', 'batman', 'trustno', 'login', 'connexion', 'utilisateur', 'user',
  'epx', 'console', 'energie', 'energy', 'test', 'demo',
])

/** Every step from one character to the next is +1, or every one is -1 (`abcdefghijkl`, `987654321098`). */
function isRun (p: string): boolean {
  const step = (i: number) => {
    const a = p.charCodeAt(i - 1)
    const b = p.charCodeAt(i)
    // 9 → 0 and 0 → 9 go on a run of digits (`123456789012`).
    if (a === 57 && b === 48) return 1
    if (a === 48 && b === 57) return -1
    return b - a
  }
  const first = step(1)
  if (first !== 1 && first !== -1) return false
  for (let i = 2; i < p.length; i++) if (step(i) !== first) return false
  return true
}

/** Why a chosen password is refused. */
export type PasswordWeakness = 'short' | 'long' | 'few-characters' | 'run' | 'username' | 'common'

/**
 * What is wrong with `password` for the account `username`, or undefined. The rule
 * (docs/console.md "Passwords"): 12 to 256 characters, 5 of them different, not a run
 * (`abcdef…`, `123456…`), not containing the username, not a common password with
 * digits or signs around it. Doors word the answer (English here, French in the console).
 */
export function passwordWeakness (password: string, username?: string): PasswordWeakness | undefined {
  if (password.length < PASSWORD_MIN) return 'short'
  if (password.length > PASSWORD_MAX) return 'long'
  if (new Set(password).size < PASSWORD_DISTINCT) return 'few-characters'
  if (isRun(password)) return 'run'
  const lower = password.normalize('NFC').toLowerCase()
  // A name of 2 or 3 characters is too often part of a good password to be refused inside one.
  const name = username?.toLowerCase()
  if (name && (name.length >= 4 ? lower.includes(name) : lower === name)) return 'username'
  const letters = lower.replace(/[^\p{L}]/gu, '')
  if (letters === '') return undefined
  const repeated = (w: string) => w.length >= 4 && letters.length % w.length === 0 && letters === w.repeat(letters.length / w.length)
  if (COMMON.has(letters) || (letters.length >= 3 && isRun(letters)) || [...COMMON].some(repeated)) return 'common'
  return undefined
}

const WEAKNESS_EN: Record<PasswordWeakness, string> = {
  short: `a password needs at least ${PASSWORD_MIN} characters`,
  long: `a password has at most ${PASSWORD_MAX} characters`,
  'few-characters': `a password needs at least ${PASSWORD_DISTINCT} different characters`,
  run: 'a password is not a run of consecutive characters (abcdef..., 123456...)',
  username: 'a password must not contain the username',
  common: 'a password is not a common password or word with digits or signs around it (password1234, azertyuiop!)',
}

/** What a chosen password must satisfy, in English (the CLI), or undefined when it does. */
export function passwordProblem (password: string, username?: string): string | undefined {
  const weak = passwordWeakness(password, username)
  return weak && WEAKNESS_EN[weak]
}
