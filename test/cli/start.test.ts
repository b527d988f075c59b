import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { conformance } from '../helpers/openapi.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { epx, initializedDataDir, startEpx } from '../helpers/cli.ts'

/** An undici agent presenting the bundle `epx cert issue` wrote, as a BSP would use it. */
const bundleAgent = (bundle: string) => new Agent({
  connect: {
    ca: readFileSync(join(bundle, 'ca.crt')),
    cert: readFileSync(join(bundle, 'client.crt')),
    key: readFileSync(join(bundle, 'client.key')),
    servername: 'localhost',
  },
}).compose(conformance)

t.test('epx start --port 0 listens with mTLS, answers a company with its certificate and token, and stops cleanly on SIGTERM', async t => {
  const dir = await initializedDataDir(t)
  await epx(dir, 'company', 'add', 'acme', '--name', 'ACME')
  const bundle = join(dir, 'acme')
  await epx(dir, 'cert', 'issue', 'acme', '--out', bundle)
  const token = (await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'outbound:besoins-agreges')).lines.at(-1)!

  const run = await startEpx(['--data', dir, 'start', '--port', '0', '--cycle', '1'], /epx API listening on (https:\/\/127\.0\.0\.1:\d+\/)/)
  t.teardown(() => { run.child.kill('SIGKILL') })
  const url = new URL(run.match[1]!)
  t.not(url.port, '0', 'a real port was chosen')

  const agent = bundleAgent(bundle)
  t.teardown(() => agent.close())
  const res = await request(new URL(`${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-23`, url), {
    dispatcher: agent, headers: { authorization: `Bearer ${token}` },
  })
  await res.body.text()
  t.notOk([401, 403].includes(res.statusCode), `the certificate and token of epx cert issue / token create pass the door (got ${res.statusCode})`)

  const noToken = await request(new URL(OUTBOUND_PATH, url), { dispatcher: agent })
  await noToken.body.text()
  t.equal(noToken.statusCode, 401, 'the door is really there')

  run.child.kill('SIGTERM')
  t.equal(await run.exited, 0, 'exits 0 after SIGTERM')
  t.match(run.output(), /"msg":"epx closed"/, 'the plugin was closed')
  t.match(run.output(), /\nepx stopped\n/)
  t.notOk(run.output().includes(token), 'the token never reaches the logs')
})

t.test('epx start refuses a bad --port, --host or --cycle with exit 2', async t => {
  const dir = await initializedDataDir(t)
  for (const [argv, message] of [
    [['--port', '70000'], /invalid --port '70000': use an integer from 0 to 65535/],
    [['--port', 'http'], /invalid --port 'http'/],
    [['--cycle', '0'], /invalid --cycle '0': use a number of seconds >= 1/],
    [['--host', ''], /--host must not be empty/],
  ] as Array<[string[], RegExp]>) {
    const r = await epx(dir, 'start', ...argv)
    t.equal(r.code, 2, argv.join(' '))
    t.match(r.err, message)
  }
})

t.test('epx start reports a catalogue error as "epx: <message>", exit 1, no stack', async t => {
  const dir = await initializedDataDir(t)
  const r = await epx(dir, 'start', '--port', '0', '--host', '192.0.2.1')   // TEST-NET: not an address of this machine
  t.equal(r.code, 1)
  t.match(r.err, /^epx: /)
  t.notMatch(r.err, /\n\s+at /, 'no stack trace')
})


t.test('the CLI writes the store while epx start runs, and the service sees each change on its next request', async t => {
  const dir = await initializedDataDir(t)
  await epx(dir, 'company', 'add', 'acme', '--name', 'ACME')
  const bundle = join(dir, 'acme')
  await epx(dir, 'cert', 'issue', 'acme', '--out', bundle)
  const run = await startEpx(['--data', dir, 'start', '--port', '0', '--cycle', '60'], /epx API listening on (https:\/\/127\.0\.0\.1:\d+\/)/)
  t.teardown(() => { run.child.kill('SIGKILL') })
  const url = new URL(`${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-23`, run.match[1]!)
  const agent = bundleAgent(bundle)
  t.teardown(() => agent.close())
  // An unexpected status says why: its body and the service's last log lines.
  const told = (what: { status: number; body: string }, expected: number) => {
    if (what.status !== expected) t.comment(`${what.status} ${what.body}\n${run.output().slice(-3000)}`)
  }
  const get = async (token: string) => {
    const res = await request(url, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } })
    return { status: res.statusCode, body: await res.body.text() }
  }

  // Created after the service started: known on the next request.
  const created = await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'outbound:besoins-agreges', '--json')
  const { id, token } = JSON.parse(created.out)
  t.notOk([401, 403].includes((await get(token)).status), 'a token created by the CLI is accepted at once')

  await epx(dir, 'company', 'suspend', 'acme')
  const suspended = await get(token)
  told(suspended, 403)
  t.equal(suspended.status, 403)
  t.match(JSON.parse(suspended.body), { code: 'COMPANY_SUSPENDED' }, 'a suspension by the CLI applies at once')

  await epx(dir, 'company', 'resume', 'acme')
  t.notOk([401, 403].includes((await get(token)).status), 'so does the resumption')

  // The service keeps what it read of the latest revision: a publication by the CLI must still show at once.
  const before = await request(url, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } })
  await before.body.dump()
  const published = await epx(dir, 'publish', '--date', '2026-11-23', '--site', 'PRM30000000000001', '--json')
  const etag = JSON.parse(published.out).published[0].etag as string
  t.not(etag, before.headers.etag, 'the CLI made a new revision')
  const after = await request(url, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } })
  const afterBody = await after.body.text()
  told({ status: after.statusCode, body: afterBody.slice(0, 500) }, 200)
  t.equal(after.statusCode, 200)
  t.equal(after.headers.etag, etag, 'a revision published by the CLI is served at once')

  await epx(dir, 'token', 'revoke', id)
  const revoked = await get(token)
  told(revoked, 401)
  t.equal(revoked.status, 401, 'a revocation by the CLI applies at once')
  run.child.kill('SIGTERM')
  t.equal(await run.exited, 0)
})
