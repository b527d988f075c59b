import t from 'tap'
import { createLoginThrottle } from '../../src/console/login-throttle.ts'

const limits = { perAccount: 3, perAddress: 5, windowMs: 60_000 }

t.test('an account is throttled after its attempts, for what is left of its window; then it may try again', async t => {
  const th = createLoginThrottle(limits)
  for (let i = 0; i < 3; i++) t.equal(th.attempt('bob', '10.0.0.1', 1_000 + i), undefined)
  t.same(th.attempt('bob', '10.0.0.2', 11_000), { what: 'account', untilMs: 61_000, seconds: 50 }, 'the account is locked until its window ends, from any address')
  t.equal(th.attempt('bob', '10.0.0.2', 60_999)?.seconds, 1)
  t.equal(th.attempt('bob', '10.0.0.2', 61_000), undefined, 'a new window')
})

t.test('an address is throttled across accounts (a spray of usernames)', async t => {
  const th = createLoginThrottle(limits)
  for (let i = 0; i < 5; i++) t.equal(th.attempt(`user${i}`, '10.0.0.9', 0), undefined)
  t.same(th.attempt('someone-else', '10.0.0.9', 0), { what: 'address', untilMs: 60_000, seconds: 60 }, 'the address is what is locked')
  t.equal(th.attempt('someone-else', '10.0.0.8', 0), undefined, 'another address is not affected')
  t.same(th.addressLocks(1_000), [{ address: '10.0.0.9', attempts: 5, untilMs: 60_000 }], 'an admin sees the locked address')
  t.equal(th.liftAddress('10.0.0.9'), true, 'and lifts its lock')
  t.same(th.addressLocks(1_000), [])
  t.equal(th.attempt('someone-else', '10.0.0.9', 1_000), undefined, 'the address may try again at once')
  t.equal(th.liftAddress('10.0.0.9'), true)
  t.equal(th.liftAddress('10.0.0.9'), false, 'nothing left to lift')
})

t.test("a success clears the account's count and gives the address its attempt back; a throttled attempt counts nothing", async t => {
  const th = createLoginThrottle(limits)
  th.attempt('bob', 'a', 0)
  th.attempt('bob', 'a', 0)
  th.succeeded('bob', 'a')
  for (let i = 0; i < 3; i++) t.equal(th.attempt('bob', 'a', 0), undefined, `attempt ${i + 1} after the success`)
  t.equal(th.attempt('bob', 'a', 0)?.what, 'account')
  t.equal(th.attempt('carol', 'a', 0), undefined, 'the address has 5 - 2 (the success gave one back) - ... attempts: the refused one was not counted')
  t.equal(th.attempt('carol', 'a', 0)?.what, 'address', 'now the address is at its limit')
  th.succeeded('nobody', 'unknown-address')   // nothing to clear: no throw
})

t.test("a password set since the account's window opened (an admin's reset) gives the account its attempts back", async t => {
  const th = createLoginThrottle(limits)
  for (let i = 0; i < 3; i++) th.attempt('admin', `10.0.0.${i}`, 0, '2026-11-21T08:00:00.000Z')
  t.equal(th.attempt('admin', '10.0.0.7', 1_000, '2026-11-21T08:00:00.000Z')?.seconds, 59, 'locked out, the old password as the window knew it')
  t.equal(th.attempt('admin', '10.0.0.7', 2_000, '2026-11-21T09:00:00.000Z'), undefined, 'after a reset: a fresh window')
  for (let i = 0; i < 2; i++) th.attempt('admin', '10.0.0.8', 3_000, '2026-11-21T09:00:00.000Z')
  t.equal(th.attempt('admin', '10.0.0.8', 4_000, '2026-11-21T09:00:00.000Z')?.seconds, 58, 'failures against the new password count again')
})
