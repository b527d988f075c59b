import t from 'tap'
import { createHash } from 'node:crypto'
import { hashToken, looksLikeToken, newTokenSecret } from '../../src/auth/tokens.ts'

// DECISIONS.md "Authentication and tenancy": tokens are epx_ + 43 base64url characters
// (32 random bytes); only a SHA-256 hash is stored.

t.test('a token is epx_ followed by 43 base64url characters carrying 32 random bytes', async t => {
  const a = newTokenSecret()
  const b = newTokenSecret()
  t.match(a, /^epx_[A-Za-z0-9_-]{43}$/)
  t.equal(Buffer.from(a.slice(4), 'base64url').length, 32, '32 bytes')
  t.not(a, b, 'random')
  t.ok(looksLikeToken(a))
  for (const bad of ['epx_' + 'A'.repeat(42), 'epx_' + 'A'.repeat(44), 'tok_' + 'A'.repeat(43), 'epx_' + 'A'.repeat(42) + '=', 'epx_' + 'A'.repeat(42) + '+']) {
    t.notOk(looksLikeToken(bad), bad)
  }
})

t.test('the stored form of a token is its SHA-256 hash, never the secret', async t => {
  const secret = newTokenSecret()
  const h = hashToken(secret)
  t.equal(h, createHash('sha256').update(secret).digest('hex'))
  t.match(h, /^[0-9a-f]{64}$/)
  t.notOk(h.includes(secret.slice(4)))
  t.equal(hashToken('epx_' + 'A'.repeat(43)), createHash('sha256').update('epx_' + 'A'.repeat(43)).digest('hex'))
})
