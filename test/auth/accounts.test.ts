import t from 'tap'
import { addUser, resetPassword, setUserDisabled, usernameProblem } from '../../src/auth/accounts.ts'
import { verifyPassword } from '../../src/auth/password.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openSessions } from '../../src/store/sessions.ts'
import { openUsers } from '../../src/store/users.ts'

const store = openStore(t.testdir())
t.teardown(() => store.close())
await openCompanies(store).add({ id: 'acme', name: 'ACME', status: 'active', certSubject: 'CN=acme,O=ACME', perimeter: 'all', createdAt: '2026-11-21T00:00:00Z' })

t.test('a user is an admin or the member of one existing company; names are case-insensitive', async t => {
  const { record } = await addUser(store, { username: ' Alice@ACME ', admin: false, companyId: 'acme', password: 'a long enough one' }, 0)
  t.match(record, { username: 'alice@acme', admin: false, companyId: 'acme', disabled: false, createdAt: '1970-01-01T00:00:00.000Z' })
  t.equal(openUsers(store).get('ALICE@acme')?.username, 'alice@acme')
  await t.rejects(addUser(store, { username: 'x1', admin: true, companyId: 'acme' }, 0), { code: 'EPX_USAGE', message: /either a service admin or the member of one company/ })
  await t.rejects(addUser(store, { username: 'x2', admin: false, companyId: null }, 0), { code: 'EPX_USAGE' })
  await t.rejects(addUser(store, { username: 'x3', admin: false, companyId: 'nope' }, 0), { code: 'EPX_NOT_FOUND', message: /no company 'nope'/ })
  await t.rejects(addUser(store, { username: 'x4', admin: true, companyId: null, password: 'short' }, 0), { code: 'EPX_USAGE', message: /at least 12/ })
  await t.rejects(addUser(store, { username: 'alice@acme', admin: true, companyId: null }, 0), { code: 'EPX_CONFLICT' })
  await t.rejects(addUser(store, { username: 'x5', admin: true, companyId: null, password: 'aaaaaaaaaaaa' }, 0), { code: 'EPX_USAGE', message: /5 different characters/ })
  await t.rejects(addUser(store, { username: 'x6-long', admin: true, companyId: null, password: 'I am x6-long, hello' }, 0), { code: 'EPX_USAGE', message: /username/ })
  t.equal(openUsers(store).get('x4'), undefined, 'nothing half-made')
  t.equal((await addUser(store, { username: 'x7', admin: true, companyId: null, mustChangePassword: true }, 0)).record.mustChangePassword, true, 'a door that hands over a generated password asks for its change')
  t.equal(record.mustChangePassword, undefined, 'a password given is the user\'s own')
  t.equal(usernameProblem('ok.name_1'), undefined)
  t.match(usernameProblem('-starts-with-dash'), /invalid username/)
  t.match(usernameProblem('x'), /invalid username/)
})

t.test("disabling ends the user's sessions only; enabling keeps the password; a reset changes it and ends sessions", async t => {
  const { record, password } = await addUser(store, { username: 'bob', admin: true, companyId: null }, 0)
  const sessions = openSessions(store)
  await sessions.put('s-bob', { username: 'bob', csrfToken: 'c', createdAtMs: 0, lastSeenAtMs: 0 })
  await sessions.put('s-alice', { username: 'alice@acme', csrfToken: 'c', createdAtMs: 0, lastSeenAtMs: 0 })
  t.equal((await setUserDisabled(store, 'BOB', true)).disabled, true)
  t.equal(sessions.get('s-bob'), undefined)
  t.ok(sessions.get('s-alice'))
  await sessions.put('s-bob2', { username: 'bob', csrfToken: 'c', createdAtMs: 0, lastSeenAtMs: 0 })
  t.equal((await setUserDisabled(store, 'bob', false)).disabled, false)
  t.ok(sessions.get('s-bob2'), 'enabling ends nothing')
  t.equal(openUsers(store).get('bob')?.passwordHash, record.passwordHash)
  const reset = await resetPassword(store, 'bob', 1_000)
  t.not(reset.password, password)
  t.ok(await verifyPassword(reset.password, openUsers(store).get('bob')!.passwordHash))
  t.equal(reset.record.passwordChangedAt, '1970-01-01T00:00:01.000Z')
  t.equal(reset.record.mustChangePassword, true, 'a generated password is changed at the next login')
  t.equal(sessions.get('s-bob2'), undefined)
  await t.rejects(setUserDisabled(store, 'ghost', true), { code: 'EPX_NOT_FOUND', message: /no user 'ghost'/ })
})
