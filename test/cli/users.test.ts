import t from 'tap'
import { spawnSync } from 'node:child_process'
import { verifyPassword } from '../../src/auth/password.ts'
import { inDataDir } from '../../src/config.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openSessions } from '../../src/store/sessions.ts'
import { openUsers } from '../../src/store/users.ts'
import { BIN, ROOT, epx, initializedDataDir } from '../helpers/cli.ts'

const dir = await initializedDataDir(t)
await epx(dir, 'company', 'add', 'acme', '--name', 'ACME')

async function withStore<T> (fn: (store: ReturnType<typeof openStore>) => Promise<T> | T): Promise<T> {
  const store = openStore(inDataDir(dir, 'epx.lmdb'))
  try { return await fn(store) } finally { await store.close() }
}

t.test('user add prints a generated password once, on the last line, and stores only its scrypt hash', async t => {
  const r = await epx(dir, 'user', 'add', 'Alice', '--admin')
  t.equal(r.code, 0, r.err)
  t.match(r.lines[0], 'added user alice (service admin)')
  const password = r.lines.at(-1)!
  t.match(password, /^[A-Za-z0-9_-]{24}$/)
  const user = await withStore(s => openUsers(s).get('alice'))
  t.match(user, { username: 'alice', admin: true, companyId: null, disabled: false })
  t.notOk(JSON.stringify(user).includes(password), 'the password is not stored')
  t.ok(await verifyPassword(password, user!.passwordHash), 'the stored hash verifies the printed password')
  t.notOk(await verifyPassword(password + 'x', user!.passwordHash))
})

t.test('user add --company --password-stdin takes the password from stdin and prints none (real binary)', async t => {
  const r = spawnSync(process.execPath, [BIN, '--data', dir, 'user', 'add', 'bob', '--company', 'acme', '--password-stdin'],
    { cwd: ROOT, input: 'correct horse battery\n', encoding: 'utf8' })
  t.equal(r.status, 0, r.stderr)
  t.notMatch(r.stdout, 'correct horse')
  const user = await withStore(s => openUsers(s).get('bob'))
  t.match(user, { admin: false, companyId: 'acme' })
  t.ok(await verifyPassword('correct horse battery', user!.passwordHash), 'the newline is not part of the password')
})

t.test('user add refuses what it cannot do, saying what to fix', async t => {
  const cases: Array<[string[], RegExp, number]> = [
    [['carol'], /give exactly one of --admin or --company ID/, 2],
    [['carol', '--admin', '--company', 'acme'], /give exactly one of --admin or --company ID/, 2],
    [['carol', '--company', 'nope'], /no company 'nope'/, 1],
    [['alice', '--admin'], /user alice already exists/, 1],
    [['-x', '--admin'], /unknown option|invalid username/i, 2],
    [['a b', '--admin'], /invalid username 'a b'/, 2],
  ]
  for (const [argv, message, code] of cases) {
    const r = await epx(dir, 'user', 'add', ...argv)
    t.equal(r.code, code, argv.join(' '))
    t.match(r.err, message, argv.join(' '))
  }
})

t.test('user list shows role, company and state, never a password hash', async t => {
  const r = await epx(dir, 'user', 'list', '--json')
  t.equal(r.code, 0, r.err)
  const users = JSON.parse(r.out)
  t.match(users, [{ username: 'alice', role: 'admin', company: null, state: 'active' }, { username: 'bob', role: 'member', company: 'acme' }])
  t.notMatch(r.out, 'scrypt')
  const table = await epx(dir, 'user', 'list')
  t.match(table.lines[0], /^USERNAME\s+ROLE\s+COMPANY\s+STATE/)
})

t.test('user disable ends the sessions of that user only; reset-password gives a new password and ends them too', async t => {
  await withStore(async s => {
    const sessions = openSessions(s)
    await sessions.put('h-bob', { username: 'bob', csrfToken: 'c', createdAtMs: 0, lastSeenAtMs: 0 })
    await sessions.put('h-alice', { username: 'alice', csrfToken: 'c', createdAtMs: 0, lastSeenAtMs: 0 })
  })
  const r = await epx(dir, 'user', 'disable', 'bob')
  t.equal(r.code, 0, r.err)
  t.match(r.out, 'user bob (member of acme) is now disabled')
  await withStore(s => {
    t.equal(openSessions(s).get('h-bob'), undefined, "bob's session is gone")
    t.ok(openSessions(s).get('h-alice'), "alice's session stays")
    t.equal(openUsers(s).get('bob')?.disabled, true)
  })
  const reset = await epx(dir, 'user', 'reset-password', 'alice')
  t.equal(reset.code, 0, reset.err)
  const password = reset.lines.at(-1)!
  await withStore(async s => {
    t.ok(await verifyPassword(password, openUsers(s).get('alice')!.passwordHash))
    t.equal(openSessions(s).get('h-alice'), undefined, 'a reset ends the sessions too')
  })
  const enable = await epx(dir, 'user', 'enable', 'bob')
  t.match(enable.out, 'is now enabled')
  const missing = await epx(dir, 'user', 'disable', 'nobody')
  t.equal(missing.code, 1)
  t.match(missing.err, "no user 'nobody'")
})
