import t from 'tap'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { newWebhookSecret, webhookHeaders } from '../../src/contract/webhook-signature.ts'
import { BIN, epx as runEpx } from '../helpers/cli.ts'
import { testPki } from '../helpers/certs.ts'

// `epx bsp receive` (`epx-bsp receive`): an endpoint for the service's webhooks on a port, over real TLS on loopback.

t.test('epx bsp receive: the echo check answered before the secret is known, the secret file read at each delivery, each verified event printed once as a JSON line, refusals told on stderr, SIGTERM ends it', async t => {
  const dir = t.testdir()
  const [previous, next] = [newWebhookSecret(), newWebhookSecret()]
  const pki = testPki()
  // Empty at the start, as when the endpoint is registered once the receiver answers the check.
  writeFileSync(join(dir, 'webhook.secret'), '', { mode: 0o600 })
  writeFileSync(join(dir, 'server.crt'), pki.server.certPem)
  writeFileSync(join(dir, 'server.key'), pki.server.keyPem)
  const child = spawn(process.execPath, [BIN, 'bsp', 'receive', '--port', '0', '--secret-file', 'webhook.secret', '--tls-cert', 'server.crt', '--tls-key', 'server.key'],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  let [stdout, stderr] = ['', '']
  child.stdout.setEncoding('utf8').on('data', d => { stdout += d })
  const exited = new Promise<number | null>(resolve => child.on('close', resolve))
  const listening = await new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', d => {
      stderr += d
      const m = /listening on (https:\/\/127\.0\.0\.1:\d+)/.exec(stderr)
      if (m) resolve(m[1]!)
    })
    exited.then(code => reject(new Error(`exited (${code}) before listening: ${stderr}`)))
  })
  const agent = new Agent({ connect: { ca: pki.serverCa.certPem, servername: 'localhost' } })
  t.teardown(() => agent.close())
  const send = async (path: string, o: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}) => {
    const res = await request(listening + path, { method: o.method ?? 'POST', dispatcher: agent, ...o })
    return { status: res.statusCode, text: await res.body.text() }
  }
  const now = Math.floor(Date.now() / 1000)
  const body = JSON.stringify({ id: '000000000000042', type: 'perimetre.modifie', occurred_at: new Date().toISOString(), sites_added: ['PRM30000000000001'], sites_removed: [], all_sites: false })

  t.same(await send('/hooks?echo=3f9a', { method: 'GET' }), { status: 200, text: '3f9a' })
  t.same(await send('/hooks', { headers: webhookHeaders([next], '000000000000042', now, body), body }),
    { status: 401, text: 'this receiver has no secret yet: give it the whsec_ secret shown when the endpoint was registered' })
  writeFileSync(join(dir, 'webhook.secret'), `${previous}\n${next}\n`)
  t.equal((await send('/hooks', { headers: webhookHeaders([next], '000000000000042', now, body), body })).status, 200)
  t.equal((await send('/hooks', { headers: webhookHeaders([previous], '000000000000042', now, body), body })).status, 200, 'sent again, under the other secret of the rotation')
  // The receiver's clock has moved on a little since `now`: on a loaded machine, a second or more.
  t.match(await send('/hooks', { headers: webhookHeaders([next], '000000000000042', now - 3600, body), body }), { status: 401, text: /^webhook-timestamp is 36\d\d s behind this clock, beyond the 300 s tolerated$/ })
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM ends it')
  t.same(stdout.trimEnd().split('\n').map(l => JSON.parse(l)), [JSON.parse(body)], 'the event printed once, as the service sent it')
  t.match(stderr, /refused POST \/hooks: 401 webhook-timestamp is 36\d\d s behind this clock/)
  t.match(stderr, /webhook\.secret holds no secret yet: the registration check is answered, deliveries are refused until it does/)
})

t.test('epx bsp receive: the secret from a file or EPX_BSP_WEBHOOK_SECRET, never an argument; each mistake named', async t => {
  const dir = t.testdir()
  writeFileSync(join(dir, 'bad.secret'), 'hunter2\n')
  const none = await runEpx(dir, 'bsp', 'receive', '--port', '0')
  t.equal(none.code, 2)
  t.match(none.err, /no secret: give --secret-file FILE or set EPX_BSP_WEBHOOK_SECRET/)
  const secret = newWebhookSecret()
  const arg = await runEpx(dir, 'bsp', 'receive', '--port', '0', '--secret', secret)
  t.equal(arg.code, 2, 'no --secret option')
  t.notMatch(arg.err, secret, 'the secret is not echoed')
  t.match((await runEpx(dir, 'bsp', 'receive', '--port', '0', '--secret-file', join(dir, 'bad.secret'))).err, /a secret is whsec_ followed by base64, .*"hunter2"/)
  t.match((await runEpx(dir, 'bsp', 'receive', '--port', '0', '--secret-file', join(dir, 'nope'))).err, /cannot read --secret-file .*nope: ENOENT/)
  t.match((await runEpx(dir, 'bsp', 'receive', '--port', '70000', '--secret-file', join(dir, 'bad.secret'))).err, /--port 70000 is not a port number/)
  t.match((await runEpx(dir, 'bsp', 'receive', '--port', '0', '--tls-cert', 'x')).err, /--tls-cert and --tls-key go together/)
  t.match((await runEpx(dir, 'bsp', 'receive', '--port', '0', '--tolerance', '5m')).err, /--tolerance 5m is not a whole number of seconds/)
})
