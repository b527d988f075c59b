/**
 * docs/bsp-guide.md's code samples, run as written against a real epx: its shell, Python
 * and Node blocks, in the guide's order, in a folder holding what the guide says a BSP
 * has (bundle, token files, a programme), with `epx-bsp` installed there. Only the service
 * address changes (the test's port for 8443). A block fenced with `no-test` needs tools
 * from a registry (the client generators); it is the only kind left out. The webhook
 * receivers (fenced `receiver`) are servers: each is started on a free port (for 8080), sent
 * the requests the service would send, and stopped.
 */
import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { startEpx } from '../helpers/epx.ts'
import { testPki } from '../helpers/certs.ts'
import { siteId } from '../helpers/programme.ts'
import { eventually } from '../helpers/eventually.ts'
import { request } from 'undici'
import { newWebhookSecret, verifyWebhook, webhookHeaders } from '../../src/contract/webhook-signature.ts'
import { eventsFeedJsonSchema } from '../../src/contract/published-schemas.ts'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
// Six samples and four runs off the happy path in child processes (python3, curl, node): ~20 s alone, twice that on a loaded machine.
t.setTimeout(180_000)
const GUIDE = readFileSync(join(ROOT, 'docs/bsp-guide.md'), 'utf8')

interface Block { readonly lang: string; readonly info: string; readonly code: string; readonly line: number }
const blocks: Block[] = [...GUIDE.matchAll(/^```(\w*)([^\n]*)\n([\s\S]*?)^```$/gm)].map(m => ({
  lang: m[1]!, info: m[2]!.trim(), code: m[3]!, line: GUIDE.slice(0, m.index).split('\n').length,
}))
const runnable = blocks.filter(b => ['sh', 'python', 'js'].includes(b.lang) && !b.info.includes('no-test') && b.info !== 'receiver')
/** The webhook receivers: servers, run until the test has sent them its requests. */
const receivers = blocks.filter(b => b.info === 'receiver')

/** YYYY-MM-DD of a Europe/Paris day, today + offset. */
function parisDay (offset: number): string {
  const [y, m, d] = new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Paris' }).format(new Date()).split('-').map(Number)
  return new Date(Date.UTC(y!, m! - 1, d! + offset)).toISOString().slice(0, 10)
}

t.test('the guide\'s blocks: every shell, Python and Node one runs; only the generators\' is left out', async t => {
  t.same(runnable.map(b => b.lang), ['sh', 'python', 'js', 'js', 'js', 'sh', 'sh'])
  t.same(receivers.map(b => b.lang), ['js', 'python', 'sh'])
  t.same(blocks.filter(b => b.info.includes('no-test')).map(b => b.code.includes('openapi-generator')), [true])
  for (const b of runnable) t.notMatch(b.code, /\b20\d\d-\d\d-\d\d\b/, `the block at line ${b.line} computes its dates`)
})

t.test('every sample of the guide runs as written against a real service, and does what it says', async t => {
  const tomorrow = parisDay(1)
  const root = t.testdir()
  const epx = await startEpx(t, { sites: 1, now: new Date().toISOString(), dataDir: join(root, 'epx') })
  const { cert } = await epx.addCompany('acme')
  const { secret: outToken } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const { secret: inToken } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  const { secret: realiseToken } = await epx.addToken('acme', ['outbound:realise'])
  const { secret: eventsToken } = await epx.addToken('acme', ['outbound:evenements'])
  t.same((await epx.handle.publish({ targetDate: tomorrow })).failed, [], 'tomorrow is published')

  const dir = join(root, 'bsp')
  mkdirSync(dir)
  const pki = testPki()
  writeFileSync(join(dir, 'client.crt'), cert.certPem)
  writeFileSync(join(dir, 'client.key'), cert.keyPem)
  writeFileSync(join(dir, 'ca.crt'), pki.serverCa.certPem)
  writeFileSync(join(dir, 'out.token'), outToken + '\n', { mode: 0o600 })
  writeFileSync(join(dir, 'in.token'), inToken + '\n', { mode: 0o600 })
  writeFileSync(join(dir, 'realise.token'), realiseToken + '\n', { mode: 0o600 })
  writeFileSync(join(dir, 'events.token'), eventsToken + '\n', { mode: 0o600 })
  // No programme.json: the samples write what they read (the curl one its own, before posting it).
  // A CA bundle that does not know the service: a sample that fell back on it would fail its TLS check.
  writeFileSync(join(dir, 'other-cas.pem'), pki.clientCa.certPem)
  await installEpxBsp(dir)

  const outputs: string[] = []
  for (const [i, b] of runnable.entries()) {
    const res = await runSample(b, `sample-${i}`, dir, epx.url.port)
    t.equal(res.exit, 0, `the ${b.lang} block at line ${b.line} runs and ends${res.exit ? ': ' + res.stderr : ''}`)
    outputs.push(res.stdout)
  }
  const [curl, python, pull, watched, push, cli, events] = outputs as [string, string, string, string, string, string, string]
  t.match(curl, /^304$/m, 'curl: the ETag sent back answers 304')
  t.match(curl, /"status":"received"/, 'curl: the programme posted')
  t.match(curl, new RegExp(`"target_date":"${tomorrow}","count":[1-9]`), 'curl: the status read lists it')
  t.equal(JSON.parse(readFileSync(join(dir, 'PRM30000000000001.json'), 'utf8')).target_date, tomorrow)
  t.match(python, /^fetched \S+Z (92|96|100) periods$/m, 'Python: the GET')
  t.match(python, new RegExp(`^ProgrammeSoutirage-${tomorrow}-rev-\\S+ ${siteId(1)} (92|96|100) queued $`, 'm'), 'Python: the POST, one instruction queued')
  t.equal(JSON.parse(readFileSync(join(dir, 'programme.json'), 'utf8')).sites[0].energie_programmee.length, Number(python.match(/ (\d+) periods/)![1]), 'a programme of every quarter-hour of the Paris day')
  t.match(pull, /fetched: 1/, 'Node: a round fetched the site')
  t.match(watched, /\{ fetched: \d, unchanged: \d, missing: \d, failed: 0 \}/, 'Node: watch ran its round and ended')
  t.match(push, new RegExp(`^ProgrammeSoutirage-${tomorrow}-rev-\\S+ queued$`, 'm'), 'Node: the programme made from the Besoins_Agreges was received')
  t.match(push, new RegExp(`^ProgrammeSoutirage-${tomorrow}-rev-\\S+ (queued|received) 0$`, 'm'), 'Node: the status read, no slot above the power available')
  t.match(cli, /unchanged|fetched/, 'epx-bsp pull')
  t.match(cli, new RegExp(`ProgrammeSoutirage-${tomorrow}-rev-\\S+ ${siteId(1)} \\d+ (queued|superseded)`), 'epx-bsp push')
  t.match(cli, /^DEBUT_UTC +FIN_UTC +PROGRAMMEE_KWH +REALISEE_KWH +VERDICT +MANQUE_KWH$/m, 'epx-bsp realise: the day slot by slot')
  t.match(cli, /Z +\d+\.\d{3} +– +no_data$/m, 'epx-bsp realise: tomorrow programmed, not metered yet')
  t.match(events, /"type":"besoins_agreges\.publie"/, 'curl: the events feed tells of the publication')
  t.match(events, /"type":"instruction\.statut"/, 'curl: and of the programmes posted')

  // Off the happy path, in a folder of their own: the same samples, one thing changed each.
  const [curlBlock, pythonBlock] = [runnable[0]!, runnable[1]!]
  const off = join(root, 'off')
  mkdirSync(off)
  for (const f of ['client.crt', 'client.key', 'ca.crt', 'out.token', 'in.token', 'other-cas.pem']) symlinkSync(join(dir, f), join(off, f))
  const wrongBase = (b: Block) => ({ ...b, code: b.code.replace('/api/v0.5/energy-programs', '/api/v0.4/energy-programs') })

  const curlWrong = await runSample(wrongBase(curlBlock), 'curl-wrong-base', off, epx.url.port)
  t.not(curlWrong.exit, 0, 'curl, a wrong base URL: the script stops')
  t.match(curlWrong.stdout, /"code":"UNKNOWN_PATH"/, 'curl: and shows the problem')
  t.notOk(existsSync(join(off, 'PRM30000000000001.json')), 'curl: no error body stored as the document')

  const pyWrong = await runSample(wrongBase(pythonBlock), 'python-wrong-base', off, epx.url.port)
  t.equal(pyWrong.exit, 1, 'Python, a wrong base URL: it stops, not "not yet" for ever')
  t.notMatch(pyWrong.stdout, /not yet/)
  t.match(pyWrong.stderr, /^GET besoins-agreges: 404 UNKNOWN_PATH: no resource at \/api\/v0\.4\//m)
  t.notMatch(pyWrong.stderr, /Traceback/)

  const pyUnpublished = await runSample({ ...pythonBlock, code: pythonBlock.code.replace('SITE = "PRM30000000000001"', 'SITE = "PRM30000000000009"') }, 'python-unpublished', off, epx.url.port)
  t.match(pyUnpublished.stdout, /^not yet: wait 300 s at least$/m, 'Python, a site not published (a problem+json 404 NOT_PUBLISHED): "not yet"')
  t.match(pyUnpublished.stdout, /^\/sites\/0\/site_id /m, 'Python: the POST refused, its pointer printed')
  t.match(pyUnpublished.stderr, /^POST programme-soutirage: 400 INVALID_PROGRAMME_SOUTIRAGE_REQUEST: /m)
  t.equal(pyUnpublished.exit, 1)

  const postPath = `f"{BASE}/programme-soutirage", token_in`
  t.ok(pythonBlock.code.includes(postPath), 'the Python POST, to change its path')
  const pyPostWrong = await runSample({ ...pythonBlock, code: pythonBlock.code.replace(postPath, `f"{BASE}/programme-soutirag", token_in`) }, 'python-post-wrong-path', off, epx.url.port)
  t.match(pyPostWrong.stderr, /^POST programme-soutirage: 404 UNKNOWN_PATH: no resource at /m, 'Python: a problem+json 404 on the POST is read, no KeyError')
  t.notMatch(pyPostWrong.stderr, /Traceback|KeyError/)
  t.equal(pyPostWrong.exit, 1)

  // A company over its GET budget (one request a second, no burst: epx company limits): the
  // Python sample's GET is answered 429, waits Retry-After, and is sent again.
  const { cert: hastyCert } = await epx.addCompany('hasty')
  await epx.companies.update('hasty', c => ({ ...c, rateLimit: { get: { perSecond: 1, burst: 1 }, post: { perSecond: 1, burst: 1 } } }))
  const { secret: hastyOut } = await epx.addToken('hasty', ['outbound:besoins-agreges'])
  const { secret: hastyIn } = await epx.addToken('hasty', ['inbound:programme-soutirage'])
  const hasty = join(root, 'hasty')
  mkdirSync(hasty)
  writeFileSync(join(hasty, 'client.crt'), hastyCert.certPem)
  writeFileSync(join(hasty, 'client.key'), hastyCert.keyPem)
  writeFileSync(join(hasty, 'out.token'), hastyOut + '\n', { mode: 0o600 })
  writeFileSync(join(hasty, 'in.token'), hastyIn + '\n', { mode: 0o600 })
  for (const f of ['ca.crt', 'other-cas.pem']) symlinkSync(join(dir, f), join(hasty, f))
  const spent = await epx.request({ path: '/api/v0.5/energy-programs/besoins-agreges', query: { site_id: siteId(1), target_date: tomorrow }, cert: hastyCert, token: hastyOut })
  t.equal(spent.status, 200, 'the budget\'s one request, spent')
  // The service's clock stands still unless told: once it has refused the sample (its log line
  // is written before the answer leaves), it moves a second every 100 ms, so the budget refills.
  const ticking = setInterval(() => {
    if (epx.logs().some(l => l.code === 'RATE_LIMITED' && l.companyId === 'hasty')) epx.clock.advance(1000)
  }, 100)
  const pyLimited = await runSample(pythonBlock, 'python-rate-limited', hasty, epx.url.port).finally(() => clearInterval(ticking))
  t.equal(pyLimited.exit, 0, `Python over its budget: it waits and goes on${pyLimited.exit ? ': ' + pyLimited.stderr : ''}`)
  t.match(pyLimited.stdout, /^(over the request budget: wait 1 s\n)+fetched \S+Z (92|96|100) periods$/m, 'Python: a 429 with Retry-After: 1, then the GET again, answered')
  t.match(pyLimited.stdout, new RegExp(`^ProgrammeSoutirage-${tomorrow}-rev-\\S+ ${siteId(1)} (92|96|100) \\w+ `, 'm'), 'Python: then the POST')
})

t.test('the webhook request shown is signed as it says, and its body is an event of the feed', async t => {
  const [head, body] = blocks.find(b => b.lang === 'http')!.code.trimEnd().split('\n\n') as [string, string]
  const headers = Object.fromEntries(head.split('\n').slice(1).map(l => l.split(': ')).map(([k, v]) => [k!.toLowerCase(), v]))
  const secret = /signed under the secret\s+`(whsec_[^`]+)`/.exec(GUIDE)![1]!
  const at = Number(headers['webhook-timestamp'])
  t.same(verifyWebhook({ secret, headers, body, nowSeconds: at }), { ok: true, id: '000000000000042', timestampSeconds: at })
  t.equal(JSON.parse(body).id, headers['webhook-id'], 'webhook-id is the event\'s id')
  const { Ajv2020 } = await import('ajv/dist/2020.js')
  const valid = new Ajv2020({ strict: false }).compile(eventsFeedJsonSchema())
  const ok = valid({ evenements: [JSON.parse(body)], suivant: headers['webhook-id'] })
  t.ok(ok, ok ? 'an event as the feed lists it' : JSON.stringify(valid.errors))
})

t.test('the guide\'s webhook receivers, as written: the registration check answered, a delivery the service signs taken once, a tampered, stale or foreign one refused', async t => {
  const dir = t.testdir()
  await installEpxBsp(dir)
  const secret = newWebhookSecret()
  writeFileSync(join(dir, 'webhook.secret'), secret + '\n', { mode: 0o600 })
  for (const [i, b] of receivers.entries()) {
    const port = await freePort()
    const { cmd, args, env } = sample(b, `receiver-${i}`, dir, b.code.replace(/\b8080\b/g, String(port)))
    // A process group of its own: `npx epx-bsp` is a shell, npx and node, all stopped at the end.
    const child = spawn(cmd, args, { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let [stdout, stderr] = ['', '']
    child.stdout.setEncoding('utf8').on('data', d => { stdout += d })
    child.stderr.setEncoding('utf8').on('data', d => { stderr += d })
    const exited = new Promise(resolve => child.on('close', resolve))
    const url = `http://127.0.0.1:${port}/hooks/epx`
    const id = `00000000000010${i}`
    const send = async (o: { query?: string; headers?: Record<string, string>; body?: string } = {}) => {
      const res = await request(url + (o.query ?? ''), { method: o.body === undefined ? 'GET' : 'POST', headers: { 'content-type': 'application/json', ...o.headers }, body: o.body })
      return { status: res.statusCode, text: await res.body.text() }
    }
    try {
      // Ready once it answers the service's check at registration.
      const echo = await eventually(() => send({ query: '?echo=k7Qz-9' }).catch(() => undefined), r => r !== undefined, { ms: 60_000, everyMs: 100 })
      t.same(echo, { status: 200, text: 'k7Qz-9' }, `${b.lang} at line ${b.line}: the echo check${echo ? '' : ': ' + stderr}`)
      const body = JSON.stringify({ id, type: 'instruction.statut', occurred_at: new Date().toISOString(), instruction_id: 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z', site_id: 'PRM30000000000001', target_date: '2026-11-22', status: 'applied', cycle: 42 })
      const now = Math.floor(Date.now() / 1000)
      const signed = webhookHeaders([secret], id, now, body)
      t.equal((await send({ headers: signed, body })).status, 200, `${b.lang}: a delivery the service signs is taken`)
      t.equal((await send({ headers: signed, body })).status, 200, `${b.lang}: sent again, it is acknowledged`)
      t.equal((await send({ headers: signed, body: body.replace('"cycle":42', '"cycle":43') })).status, 401, `${b.lang}: a tampered body is refused`)
      t.equal((await send({ headers: webhookHeaders([secret], id, now - 600, body), body })).status, 401, `${b.lang}: a stale timestamp is refused`)
      t.equal((await send({ headers: webhookHeaders([newWebhookSecret()], id, now, body), body })).status, 401, `${b.lang}: another secret's signature is refused`)
    } finally {
      try { process.kill(-child.pid!, 'SIGTERM') } catch { /* it ended by itself: its stderr is in the assertions */ }
      await exited
    }
    t.equal(stdout.split(id).length - 1, 1, `${b.lang}: the event handled once: ${stdout}`)
    t.match(stdout, b.lang === 'sh' ? `"id":"${id}","type":"instruction.statut"` : `${id} instruction.statut`)
  }
})

/** A port free on loopback a moment ago. */
async function freePort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  await new Promise(resolve => server.close(resolve))
  return port
}

/** epx-bsp installed in the folder, as `npm install ./epx-bsp-*.tgz` leaves it (test/bsp/package.test.ts installs the tarball itself). */
async function installEpxBsp (dir: string): Promise<void> {
  mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true })
  await run(process.execPath, [join(ROOT, 'scripts/build-bsp-package.mjs'), '--out', join(dir, 'node_modules/epx-bsp'), '--no-types'], { cwd: ROOT })
  symlinkSync('../epx-bsp/bin/epx-bsp.js', join(dir, 'node_modules/.bin/epx-bsp'))
}

/** A sample written to a file in `cwd`, and the command that runs it there, with CA bundles that do not know the service. */
function sample (b: Block, name: string, cwd: string, code: string): { cmd: string; args: string[]; env: NodeJS.ProcessEnv } {
  const file = join(cwd, `${name}.${{ sh: 'sh', python: 'py', js: 'mjs' }[b.lang]}`)
  writeFileSync(file, code)
  const env = { ...process.env, REQUESTS_CA_BUNDLE: join(cwd, 'other-cas.pem'), CURL_CA_BUNDLE: join(cwd, 'other-cas.pem'), NODE_OPTIONS: '' }
  const [cmd, args] = b.lang === 'sh' ? ['bash', ['-e', '-o', 'pipefail', file]] : b.lang === 'python' ? ['python3', [file]] : [process.execPath, [file]]
  return { cmd: cmd as string, args: args as string[], env }
}

/** A sample run as written (the service's port and the feed's wait aside) in `cwd`. */
async function runSample (b: Block, name: string, cwd: string, port: string): Promise<{ exit: number; stdout: string; stderr: string }> {
  // The feed's wait is cut to a second: nothing happens after the samples' last request.
  const { cmd, args, env } = sample(b, name, cwd, b.code.replaceAll('https://localhost:8443', `https://localhost:${port}`).replaceAll('attente=30', 'attente=1'))
  const res = await run(cmd, args, { cwd, env, timeout: 60_000 }).catch(e => e as { code: number; stdout: string; stderr: string })
  return { exit: (res as { code?: number }).code ?? 0, stdout: res.stdout, stderr: res.stderr }
}
