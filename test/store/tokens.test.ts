import t from 'tap'
import { openTokens, tokenState } from '../../src/store/tokens.ts'
import { hashToken, newTokenId, newTokenSecret } from '../../src/auth/tokens.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)

  t.test('recording the last use never undoes a revocation made after the caller read the token', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const tokens = openTokens(store)
    const id = newTokenId()
    await tokens.add({ id, hash: hashToken(newTokenSecret()), companyId: 'acme', scopes: ['outbound:besoins-agreges'], createdAt: '2026-11-21T00:00:00Z' })
    const seenByTheDoor = tokens.get(id)!             // the door's copy, before the CLI acts
    await tokens.revoke(id, '2026-11-21T12:00:00Z')  // the CLI, in between
    tokens.touch(seenByTheDoor, Date.parse('2026-11-21T12:00:01Z'))
    await store.writeDurable(() => {})               // the touch was queued before: it has committed
    const now = tokens.get(id)!
    t.equal(now.revokedAt, '2026-11-21T12:00:00Z', 'still revoked')
    t.equal(now.lastUsedAt, '2026-11-21T12:00:01.000Z', 'and the use is recorded')
  })

  t.test('an older use never replaces a newer one', async t => {
    const store = await openStore(t.testdir())
    t.teardown(() => store.close())
    const tokens = openTokens(store)
    const id = newTokenId()
    await tokens.add({ id, hash: hashToken(newTokenSecret()), companyId: 'acme', scopes: [], createdAt: '2026-11-21T00:00:00Z' })
    const copy = tokens.get(id)!
    tokens.touch(copy, Date.parse('2026-11-21T12:05:00Z'))
    tokens.touch(copy, Date.parse('2026-11-21T12:00:00Z'))
    await store.writeDurable(() => {})
    t.equal(tokens.get(id)!.lastUsedAt, '2026-11-21T12:05:00.000Z')
  })

  t.test('tokenState: revoked whatever the expiry, expired from the expiry instant on, active otherwise', async t => {
    const now = Date.parse('2026-11-21T12:00:00Z')
    t.equal(tokenState({}, now), 'active', 'no expiry, not revoked')
    t.equal(tokenState({ expiresAt: '2026-11-21T12:00:00.001Z' }, now), 'active', '1 ms before its expiry')
    t.equal(tokenState({ expiresAt: '2026-11-21T12:00:00.000Z' }, now), 'expired', 'at its expiry instant')
    t.equal(tokenState({ revokedAt: '2026-11-20T00:00:00Z', expiresAt: '2026-11-21T11:00:00Z' }, now), 'revoked', 'revoked and expired reads revoked')
    t.equal(tokenState({ revokedAt: '2026-11-20T00:00:00Z', expiresAt: '2027-01-01T00:00:00Z' }, now), 'revoked')
  })
})
