import t from 'tap'
import { hashPassword, newPassword, passwordProblem, passwordWeakness, SCRYPT, verifyPassword } from '../../src/auth/password.ts'

t.test('a hash records its scrypt parameters and a random salt, and verifies only its password', async t => {
  const a = await hashPassword('correct horse battery staple')
  const b = await hashPassword('correct horse battery staple')
  t.match(a, new RegExp(`^scrypt\\$${SCRYPT.N}\\$${SCRYPT.r}\\$${SCRYPT.p}\\$[A-Za-z0-9_-]{22}\\$[A-Za-z0-9_-]{43}$`))
  t.not(a, b, 'a new salt each time')
  t.equal(await verifyPassword('correct horse battery staple', a), true)
  t.equal(await verifyPassword('correct horse battery stapl', a), false)
  t.equal(await verifyPassword('cafe\u0301 au lait!!!', await hashPassword('caf\u00e9 au lait!!!')), true, 'NFC: the same text typed two ways')
})

t.test('a malformed stored hash verifies nothing and throws nothing', async t => {
  for (const stored of ['', 'bcrypt$x', 'scrypt$a$b$c$d$e', 'scrypt$16384$8$1$c2FsdA$', 'scrypt$3$8$1$c2FsdA$AAAA']) {
    t.equal(await verifyPassword('x', stored), false, stored)
  }
})

t.test('generated passwords and the rules for chosen ones', async t => {
  t.match(newPassword(), /^[A-Za-z0-9_-]{24}$/)
  t.not(newPassword(), newPassword())
  t.match(passwordProblem('short'), /at least 12/)
  t.match(passwordProblem('x'.repeat(257)), /at most 256/)
  t.equal(passwordProblem('twelve chars'), undefined)
})

t.test('a chosen password is refused when trivial: repeated, a run, the username, a common password with digits around', async t => {
  const refused: Array<[string, string | undefined, string]> = [
    ['aaaaaaaaaaaa', undefined, 'few-characters'],
    ['abababababab', undefined, 'few-characters'],
    ['abcdefghijkl', undefined, 'run'],
    ['123456789012', undefined, 'run'],
    ['lkjihgfedcba', undefined, 'run'],
    ['alice-the-admin', 'alice', 'username'],
    ['My ALICE 2026!', 'alice', 'username'],
    ['password1234', undefined, 'common'],
    ['Motdepasse2026!', undefined, 'common'],
    ['azertyuiop12', undefined, 'common'],
    ['abcdef123456', undefined, 'common'],
    ['soleilsoleil', undefined, 'common'],
  ]
  for (const [password, username, why] of refused) t.equal(passwordWeakness(password, username), why, password)
  const accepted: Array<[string, string | undefined]> = [
    ['correct horse battery', 'alice'],
    ['twelve chars', undefined],
    ['8302 7461 9583', undefined],
    ['al-pine meadow', 'al'],
  ]
  for (const [password, username] of accepted) t.equal(passwordWeakness(password, username), undefined, password)
  t.match(passwordProblem('aaaaaaaaaaaa'), /at least 5 different characters/)
  t.match(passwordProblem('bob the builder', 'bob the builder'), /not contain the username/)
  for (let i = 0; i < 200; i++) t.equal(passwordWeakness(newPassword()), undefined)
})
