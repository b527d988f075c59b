import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Agent, request } from 'undici'
import { conformance } from '../helpers/openapi.ts'
import { looksLikeToken } from '../../src/auth/tokens.ts'
import { BIN, epx, startEpx } from '../helpers/cli.ts'

const run = promisify(execFile)

/** Splits a printed shell command into words (double and single quotes, as sh does for these lines). */
function shellWords (line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map(m => m[1] ?? m[2] ?? m[3]!)
}

function freePort (): Promise<number> {
  return new Promise(resolve => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

async function hasCurl (): Promise<boolean> {
  try { await run('curl', ['--version']); return true } catch { return false }
}

/** The status a printed curl line gets: run as pasted when curl exists, else replayed with undici. */
async function statusOf (line: string, cwd: string): Promise<number> {
  if (await hasCurl()) {
    const { stdout } = await run('sh', ['-c', `${line} -sS -o /dev/null -w '%{http_code}'`], { cwd })
    return Number(stdout)
  }
  const words = shellWords(line)
  const opt = (name: string) => words[words.indexOf(name) + 1]!
  const file = (p: string) => readFileSync(join(cwd, p))
  const headers: Record<string, string> = {}
  words.forEach((w, i) => { if (w === '-H') { const [k, ...v] = words[i + 1]!.split(':'); headers[k!.toLowerCase()] = v.join(':').trim() } })
  const data = words.includes('--data-binary') ? file(opt('--data-binary').slice(1)) : undefined
  const agent = new Agent({ connect: { ca: file(opt('--cacert')), cert: file(opt('--cert')), key: file(opt('--key')) } }).compose(conformance)
  try {
    const res = await request(words.at(-1)!, { dispatcher: agent, method: data ? 'POST' : 'GET', headers, body: data })
    await res.body.text()
    return res.statusCode
  } finally {
    await agent.close()
  }
}

t.test('epx demo (npm start) on a fresh folder: company, certificate, one token per scope, and curl lines that work as pasted', async t => {
  const cwd = t.testdir()
  const demo = await startEpx(['demo', '--port', '0', '--console-port', '0'], /Ctrl\+C stops the service\.\n/, { cwd })
  t.teardown(() => { demo.child.kill('SIGKILL') })
  const out = demo.output()

  t.match(out, /created .*var\/epx\/pki\/ca\.crt/, 'initialized ./var/epx, the default data folder')
  t.match(out, /added company demo-bsp \(perimeter: all sites\)/)
  for (const f of ['client.crt', 'client.key', 'ca.crt', 'programme.json']) t.ok(existsSync(join(cwd, 'var/epx/demo', f)), `var/epx/demo/${f}`)
  const tokens = [...out.matchAll(/^ {2}(\S+)\s+(tok_[0-9a-f]+)\s+(epx_\S+)$/gm)]
  t.same(tokens.map(m => m[1]).sort(), ['inbound:programme-soutirage', 'outbound:besoins-agreges', 'outbound:evenements', 'outbound:realise'], 'one token per scope')
  for (const m of tokens) t.ok(looksLikeToken(m[3]!))

  const curls = out.split('\n').filter(l => l.startsWith('curl '))
  t.equal(curls.length, 5)
  const [get, post, realise, conditional, events] = curls as [string, string, string, string, string]
  t.match(out, /programmed \d{4}-\d{2}-\d{2} and \d{4}-\d{2}-\d{2} for every site \(demo-bsp\), with simulated meter values for the day before/)
  t.match(realise, /"https:\/\/localhost:\d+\/api\/v0\.5\/energy-programs\/realise\?site_id=PRM\d{14}&target_date=\d{4}-\d{2}-\d{2}"$/)
  t.equal(await statusOf(realise, cwd), 200, 'the day before answers at once: programmed, and metered')
  const yesterday = /target_date=(\d{4}-\d{2}-\d{2})"$/.exec(realise)![1]!
  const keep = out.split('\n').find(l => l.startsWith('etag=$(curl '))
  t.ok(keep, "today's ETag kept in a shell variable")
  t.match(conditional, /^curl -i .* -H "If-None-Match: \$etag" .*"https:\/\/localhost:\d+\/api\/v0\.5\/energy-programs\/realise\?site_id=PRM\d{14}&target_date=\d{4}-\d{2}-\d{2}"$/)
  t.match(out, /At 7 minutes past each hour the simulated meters correct one quarter-hour of today/, 'and how to see a late correction change it')
  if (await hasCurl()) {
    const { stdout } = await run('sh', ['-c', `${keep}\n${conditional} -sS -o /dev/null -w '%{http_code}'`], { cwd })
    t.equal(stdout, '304', 'the two lines as pasted: 304 while nothing changed')
  }
  t.match(get, /--cert \.\/var\/epx\/demo\/client\.crt --key \.\/var\/epx\/demo\/client\.key --cacert \.\/var\/epx\/demo\/ca\.crt/)
  t.match(get, /"https:\/\/localhost:\d+\/api\/v0\.5\/energy-programs\/besoins-agreges\?site_id=PRM\d{14}&target_date=\d{4}-\d{2}-\d{2}"$/)
  t.match(post, /--data-binary @\.\/var\/epx\/demo\/programme\.json "https:\/\/localhost:\d+\/api\/v0\.5\/energy-programs\/programme-soutirage"$/)
  const programme = JSON.parse(readFileSync(join(cwd, 'var/epx/demo/programme.json'), 'utf8'))
  t.match(programme, { schema_version: 'v0.2', type: 'programme_soutirage', slot_duration_secs: 900 })
  t.equal(programme.sites[0].energie_programmee.length, 4)

  const getStatus = await statusOf(get, cwd)
  if (/published Besoins_Agreges for \S+: [1-9]/.test(out)) {
    t.equal(getStatus, 200, 'GET answers 200 at once: the demo published tomorrow at start')
  } else {
    t.equal(getStatus, 404, 'GET passes mTLS and the token; nothing published yet: 404')
  }
  const postStatus = await statusOf(post, cwd)
  t.equal(postStatus, 202, 'POST passes mTLS, the token and validation, and is accepted')
  t.match(events, /"https:\/\/localhost:\d+\/api\/v0\.5\/energy-programs\/evenements\?limite=100&attente=30"$/)
  t.equal(await statusOf(events, cwd), 200, 'the events feed answers at once: the programme just sent is news')
  const metrics = /metrics, health and readiness on (http:\/\/127\.0\.0\.1:\d+\/)metrics/.exec(out)
  t.ok(metrics, 'the demo serves metrics on a loopback port of their own')
  if (metrics) t.match(await (await fetch(new URL('metrics', metrics[1]!))).text(), /epx_programmes_total\{status="accepted"\} 1/)

  const web = /^Web console: (https:\/\/localhost:\d+\/)/m.exec(out)
  t.ok(web, 'the console URL is printed, with the host name its certificate names')
  const admin = /^ {2}admin\s+service admin\s+password \(shown once\): (\S+)$/m.exec(out)
  t.ok(admin, "the admin's one-time password is printed")
  t.match(out, /^ {2}demo-bsp-user\s+member of demo-bsp\s+password \(shown once\): \S+$/m, 'and a demo-bsp member')
  const agent = new Agent({ connect: { ca: readFileSync(join(cwd, 'var/epx/pki/ca.crt')) } })
  try {
    const login = await request(new URL('/login', web![1]), {
      dispatcher: agent, method: 'POST', headers: { origin: new URL(web![1]).origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: 'admin', password: admin![1]! }).toString(),
    })
    await login.body.text()
    t.equal(login.statusCode, 303, 'the printed password logs the admin in')
    t.match(String(login.headers['set-cookie']), /^__Host-epx_session=/)

    // The day before's programme was taken, handed over and applied then: the console says so.
    const page = await request(new URL(`/programmes?target_date=${yesterday}`, web![1]), {
      dispatcher: agent, headers: { cookie: String(login.headers['set-cookie']).split(';')[0]! },
    })
    const html = await page.body.text()
    t.equal(page.statusCode, 200)
    t.equal(html.match(/class="status status-applied">appliquée au cycle 1</g)?.length, 5, 'the console: every site\'s instruction of the day before, applied')
    t.notMatch(html, /status-received|>reçue</, 'none reads "received" once its day is over')
  } finally {
    await agent.close()
  }

  // The status read, as the BSP gets it, with the printed inbound token.
  const words = shellWords(post)
  const opt = (name: string) => readFileSync(join(cwd, words[words.indexOf(name) + 1]!))
  const bsp = new Agent({ connect: { ca: opt('--cacert'), cert: opt('--cert'), key: opt('--key') } }).compose(conformance)
  try {
    const url = new URL(words.at(-1)!)
    url.searchParams.set('target_date', yesterday)
    const res = await request(url, { dispatcher: bsp, headers: { authorization: words.find(w => w.startsWith('Authorization: '))!.slice('Authorization: '.length) } })
    const body = await res.body.json() as { instructions: Array<{ status: string; cycle?: number; applied_at?: string }> }
    t.equal(res.statusCode, 200)
    t.equal(body.instructions.length, 5)
    t.ok(body.instructions.every(i => i.status === 'applied' && i.cycle === 1 && i.applied_at), 'the status read: applied, with its cycle and when')
  } finally {
    await bsp.close()
  }

  // The webhook lines, as pasted (`npx epx` is this checkout's bin; a free port for the printed one).
  const hooks = out.split('\n').filter(l => l.startsWith(': > ') || l.startsWith('npx epx bsp receive ') || l.includes(' webhook add '))
  t.equal(hooks.length, 3, 'a secret file, a receiver, its registration')
  const port = await freePort()
  const [empty, receiver, add] = hooks.map(l => l.replaceAll('npx epx', `${process.execPath} ${BIN}`).replaceAll(':8445/', `:${port}/`).replace('--port 8445', `--port ${port}`)) as [string, string, string]
  t.match(add, / webhook add demo-bsp https:\/\/localhost:\d+\/ \| tail -n 1 > \.\/var\/epx\/demo\/webhook\.secret$/)
  await run('sh', ['-c', empty], { cwd })
  const listening = spawn('sh', ['-c', `exec ${receiver.replace(/ &$/, '')}`], { cwd, stdio: ['ignore', 'ignore', 'pipe'] })
  t.teardown(() => { listening.kill('SIGKILL') })
  let said = ''
  await new Promise<void>((resolve, reject) => {
    listening.stderr!.setEncoding('utf8').on('data', (d: string) => { said += d; if (said.includes('listening on')) resolve() })
    listening.once('exit', code => reject(new Error(`the receiver exited (${code}): ${said}`)))
  })
  t.match(said, /webhook\.secret holds no secret yet/, 'the receiver answers the check before it has a secret')
  await run('sh', ['-c', add], { cwd })
  t.match(readFileSync(join(cwd, 'var/epx/demo/webhook.secret'), 'utf8'), /^whsec_[A-Za-z0-9+/]+={0,2}\n$/, 'registered after the echo check (loopback allowed, the demo CA trusted): the secret in the file')
  listening.kill('SIGTERM')

  demo.child.kill('SIGINT')
  t.equal(await demo.exited, 0, 'Ctrl+C stops it cleanly')
  t.match(demo.output(), /\nepx stopped\n/)

  const applied = JSON.parse((await epx(join(cwd, 'var/epx'), 'instructions', 'list', '--date', yesterday, '--json')).out)
  t.same(applied.map((i: { status: string; cycle?: number }) => [i.status, i.cycle]), Array(5).fill(['applied', 1]), 'epx instructions list: the same')

  const list = await epx(join(cwd, 'var/epx'), 'token', 'list', '--company', 'demo-bsp')
  t.equal(list.lines.length, 5, 'the four demo tokens are in the store')
  t.notOk(list.out.includes('epx_'), 'and token list does not show their secrets')
})
