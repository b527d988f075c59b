// `npm run demo:ha`: as a newcomer runs it, two instances on a throwaway PostgreSQL
// cluster; what it prints to try works (a POST to A is read on B, B serves A's
// publication), and stopping it stops both instances and removes the cluster. A cluster,
// two `epx start` and the CLI's steps: it runs under EPX_LONG=1 (`npm run campaign`'s system row);
// what it shows, two instances on one database, is npm test's in test/host/failover.test.ts
// and test/apply/solver-inputs.test.ts.
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { epx, ROOT } from '../helpers/cli.ts'
import { LONG } from '../helpers/long.ts'

t.test('two instances on one database: POST through A, read through B, then all stopped and removed', { skip: !LONG && 'the demo runs under EPX_LONG=1 (npm run campaign)' }, async t => {
  const dir = t.testdir()
  const demo = spawn(process.execPath, ['--import=tsx', join(ROOT, 'scripts', 'demo-ha.ts'), '--port-a', '0', '--port-b', '0', '--data', join(dir, 'ha')],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  demo.stdout.setEncoding('utf8').on('data', d => { out += d })
  demo.stderr.setEncoding('utf8').on('data', d => { out += d })
  const exited = new Promise<number | null>(resolve => demo.on('exit', code => resolve(code)))
  t.teardown(() => { if (demo.exitCode === null) demo.kill('SIGKILL') })
  await Promise.race([
    new Promise<void>(resolve => { const poll = setInterval(() => { if (/Ctrl\+C stops/.test(out)) { clearInterval(poll); resolve() } }, 100) }),
    exited.then(code => { throw new Error(`demo:ha exited (${code}) before it was ready:\n${out}`) }),
  ])

  for (const step of ['store migrate', 'company add demo-bsp', 'cert issue demo-bsp', 'token create', 'publish --date']) {
    t.match(out, new RegExp(`^\\$ npx epx --data \\./ha/a ${step}`, 'm'), `prints the command it runs: epx ${step}`)
  }
  const post = out.split('\n').find(l => l.startsWith('curl') && l.includes('--data-binary'))!
  const [, token] = /Bearer (\S+)"/.exec(post)!
  const [, portA] = /https:\/\/localhost:(\d+)\S*programme-soutirage"$/.exec(post)!
  const [, portB] = /^ {2}B: https:\/\/localhost:(\d+)/m.exec(out)!
  const [, date] = /target date (\d{4}-\d{2}-\d{2})\)/.exec(out)!
  const bundle = join(dir, 'ha', 'bsp')
  const agent = new Agent({ connect: { ca: readFileSync(join(bundle, 'ca.crt')), cert: readFileSync(join(bundle, 'client.crt')), key: readFileSync(join(bundle, 'client.key')) } })
  t.teardown(() => agent.close())
  const api = (port: string, path: string, body?: Buffer) => request(`https://localhost:${port}/api/v0.5/energy-programs/${path}`, {
    dispatcher: agent, method: body ? 'POST' : 'GET', body,
    headers: { authorization: `Bearer ${token}`, ...(body && { 'content-type': 'application/json' }) },
  })

  const accepted = await api(portA, 'programme-soutirage', readFileSync(join(bundle, 'programme.json')))
  t.equal(accepted.statusCode, 202, await accepted.body.text())
  const listed = await epx(join(dir, 'ha', 'b'), 'instructions', 'list', '--date', date!, '--json')
  t.equal((JSON.parse(listed.out) as unknown[]).length, 1, "A's programme is in B's instructions")
  const status = await api(portB, `programme-soutirage?site_id=PRM30000000000001&target_date=${date}`)
  t.equal(status.statusCode, 200, 'and in its status read')
  await status.body.text()

  const [, socketDir] = /host=([^&]+)&/.exec(out)!
  t.ok(existsSync(decodeURIComponent(socketDir!)), 'the cluster runs in its temporary folder')
  demo.kill('SIGTERM')
  t.equal(await exited, 0)
  t.notOk(existsSync(decodeURIComponent(socketDir!)), 'stopped: the cluster and its folder are gone')
  t.match(out, /stopping both instances, then the database/)
})
