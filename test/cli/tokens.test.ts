import t from 'tap'
import { hashToken, looksLikeToken } from '../../src/auth/tokens.ts'
import { inDataDir } from '../../src/config.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openTokens } from '../../src/store/tokens.ts'
import { epx, initializedDataDir, spawnEpx } from '../helpers/cli.ts'

const dir = await initializedDataDir(t)
await epx(dir, 'company', 'add', 'acme', '--name', 'ACME', '--sites', 'PRM00000000000001')

async function withTokens<T> (fn: (tokens: ReturnType<typeof openTokens>) => T): Promise<T> {
  const store = openStore(inDataDir(dir, 'epx.lmdb'))
  try { return fn(openTokens(store)) } finally { await store.close() }
}

t.test('token create prints the secret alone on the last line of stdout and stores only its hash (real binary)', async t => {
  const r = await spawnEpx(['--data', dir, 'token', 'create', '--company', 'acme', '--scope', 'outbound:besoins-agreges'])
  t.equal(r.code, 0, r.stderr)
  const lines = r.stdout.trimEnd().split('\n')
  const secret = lines.at(-1)!
  t.ok(looksLikeToken(secret), 'the last line is the secret and nothing else')
  t.equal(r.stdout.split(secret).length, 2, 'the secret appears once')
  const id = /created token (tok_[0-9a-f]+) for company acme/.exec(r.stdout)?.[1]
  t.ok(id)
  const record = await withTokens(tokens => tokens.byHash(hashToken(secret)))
  t.match(record, { id, companyId: 'acme', scopes: ['outbound:besoins-agreges'] })
  t.equal(record?.expiresAt, undefined, 'no --expires-in: no expiry')
  t.notOk(JSON.stringify(record).includes(secret), 'the secret is not stored')
})

t.test('token create --json prints { id, company, scopes, expiresAt, token }; --expires-in sets the expiry', async t => {
  const before = Date.now()
  const r = await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'inbound:programme-soutirage',
    '--scope', 'outbound:besoins-agreges', '--expires-in', '12h', '--json')
  t.equal(r.code, 0, r.err)
  const j = JSON.parse(r.out)
  t.same(Object.keys(j), ['id', 'company', 'scopes', 'expiresAt', 'token'])
  t.same(j.scopes, ['inbound:programme-soutirage', 'outbound:besoins-agreges'])
  t.ok(looksLikeToken(j.token))
  const ttl = Date.parse(j.expiresAt) - before
  t.ok(ttl >= 12 * 3_600_000 && ttl < 12 * 3_600_000 + 60_000, 'expires 12 h from now')
})

t.test('token create refuses bad input with exit 2 naming what to fix', async t => {
  const cases: Array<[string[], RegExp]> = [
    [['--company', 'acme', '--scope', 'admin'], /unknown scope 'admin'; the scopes are: outbound:besoins-agreges, inbound:programme-soutirage/],
    [['--company', 'acme'], /missing --scope SCOPE; one of: outbound:besoins-agreges, inbound:programme-soutirage/],
    [['--scope', 'outbound:besoins-agreges'], /missing --company ID/],
    [['--company', 'acme', '--scope', 'outbound:besoins-agreges', '--expires-in', '3w'], /invalid --expires-in '3w': use a whole number and a unit s, m, h or d/],
    [['--company', 'acme', '--scope', 'outbound:besoins-agreges', '--expires-in', '0d'], /invalid --expires-in '0d'/],
    [['--company', 'acme', '--scope'], /option '--scope <value>' argument missing/],
  ]
  const count = (await withTokens(tokens => tokens.list())).length
  for (const [argv, message] of cases) {
    const r = await epx(dir, 'token', 'create', ...argv)
    t.equal(r.code, 2, `${argv.join(' ')} exits 2`)
    t.match(r.err, message)
    t.equal(r.out, '', 'no secret printed')
  }
  t.equal((await withTokens(tokens => tokens.list())).length, count, 'no token stored')
})

t.test('token create for an unknown company exits 1', async t => {
  const r = await epx(dir, 'token', 'create', '--company', 'ghost', '--scope', 'outbound:besoins-agreges')
  t.equal(r.code, 1)
  t.match(r.err, /^epx: no company 'ghost'; add it first/)
  t.equal(r.out, '')
})

t.test('token create for a suspended company works but warns on stderr', async t => {
  await epx(dir, 'company', 'add', 'sleepy', '--name', 'Sleepy', '--sites', 'PRM00000000000002')
  await epx(dir, 'company', 'suspend', 'sleepy')
  const r = await epx(dir, 'token', 'create', '--company', 'sleepy', '--scope', 'outbound:besoins-agreges')
  t.equal(r.code, 0)
  t.match(r.err, /warning: company sleepy is suspended/)
  t.ok(looksLikeToken(r.lines.at(-1)!))
})

t.test('token list shows ids, companies, scopes and states, never a secret or a hash', async t => {
  const secret = (await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'outbound:besoins-agreges')).lines.at(-1)!
  const r = await epx(dir, 'token', 'list')
  t.equal(r.code, 0)
  t.match(r.lines[0], /^ID\s+COMPANY\s+SCOPES\s+STATE\s+CREATED\s+EXPIRES\s+LAST USED$/)
  t.notOk(r.out.includes('epx_'), 'no secret')
  t.notOk(r.out.includes(hashToken(secret)), 'no hash')
  const json = await epx(dir, 'token', 'list', '--json')
  t.notOk(json.out.includes(hashToken(secret)), 'no hash in JSON either')
  t.notOk(json.out.includes('"hash"'))
  const only = JSON.parse((await epx(dir, 'token', 'list', '--company', 'sleepy', '--json')).out)
  t.same(only.map((x: { company: string }) => x.company), ['sleepy'])
  const ghost = await epx(dir, 'token', 'list', '--company', 'ghost')
  t.equal(ghost.code, 1)
  t.match(ghost.err, /no company 'ghost'/)
})

t.test('token revoke marks the token revoked; list shows it; an unknown id exits 1', async t => {
  const j = JSON.parse((await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'outbound:besoins-agreges', '--json')).out)
  const r = await epx(dir, 'token', 'revoke', j.id)
  t.equal(r.code, 0, r.err)
  t.match(r.out, new RegExp(`token ${j.id} of company acme is revoked`))
  t.ok((await withTokens(tokens => tokens.get(j.id)))?.revokedAt)
  t.match((await epx(dir, 'token', 'list')).out, new RegExp(`${j.id}\\s+acme\\s+outbound:besoins-agreges\\s+revoked`))

  const unknown = await epx(dir, 'token', 'revoke', 'tok_0000000000000000')
  t.equal(unknown.code, 1)
  t.equal(unknown.err, "epx: no token 'tok_0000000000000000' (see 'epx token list')")
  const missing = await epx(dir, 'token', 'revoke')
  t.equal(missing.code, 2)
  t.match(missing.err, /missing TOKEN_ID/)
})

t.test('token revoke given a secret instead of an id refuses without echoing it', async t => {
  const secret = (await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'outbound:besoins-agreges')).lines.at(-1)!
  const r = await epx(dir, 'token', 'revoke', secret)
  t.equal(r.code, 2)
  t.match(r.err, /that is a token secret, not its id/)
  t.notOk(r.err.includes(secret))
})
