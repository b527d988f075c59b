import t from 'tap'
import { createToken } from '../../src/auth/issue-token.ts'
import { tokenState } from '../../src/store/tokens.ts'
import { hashToken } from '../../src/auth/tokens.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openTokens } from '../../src/store/tokens.ts'
import { openAudit } from '../../src/store/audit.ts'

t.test('a token for an existing company: the secret returned once, its hash stored, the expiry from the clock given, its maker in the audit trail', async t => {
  const store = openStore(t.testdir())
  t.teardown(() => store.close())
  await openCompanies(store).add({ id: 'acme', name: 'ACME', status: 'active', certSubject: 'CN=acme,O=ACME', perimeter: 'all', createdAt: '2026-11-21T00:00:00Z' })
  const now = Date.parse('2026-11-21T12:00:00Z')
  const { record, token } = await createToken(store, { kind: 'console', user: 'alice' }, 'acme', ['outbound:besoins-agreges', 'outbound:besoins-agreges'], 3_600_000, now)
  t.same(record.scopes, ['outbound:besoins-agreges'], 'scopes deduplicated')
  t.equal(record.createdAt, '2026-11-21T12:00:00.000Z')
  t.equal(record.expiresAt, '2026-11-21T13:00:00.000Z')
  t.equal(record.createdBy, 'alice', 'its maker is kept on the record (the token list shows it)')
  t.equal(record.label, undefined, 'no label unless given')
  t.equal(openTokens(store).byHash(hashToken(token))?.id, record.id)
  t.equal(tokenState(record, now), 'active')
  t.equal(tokenState(record, now + 3_600_000), 'expired', 'expired at its expiry instant')
  t.equal(tokenState({ ...record, revokedAt: '2026-11-21T12:30:00Z' }, now), 'revoked')
  const [made] = openAudit(store).list({ action: 'token.created' })
  t.match(made, { actor: { kind: 'console', user: 'alice' }, subject: record.id, at: '2026-11-21T12:00:00.000Z', details: { companyId: 'acme' } })
  t.notOk(JSON.stringify(made).includes(token), 'never the secret')
  await t.rejects(createToken(store, { kind: 'cli', user: 'op' }, 'nope', ['outbound:besoins-agreges']), { code: 'EPX_NOT_FOUND', message: /no company 'nope'/ })
})
