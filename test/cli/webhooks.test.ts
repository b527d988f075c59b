import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { inDataDir } from '../../src/config.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openWebhooks, secretsInForce } from '../../src/store/webhooks.ts'
import { openAudit } from '../../src/store/audit.ts'
import { openEvents } from '../../src/store/events.ts'
import { settingsPath } from '../../src/cli/settings.ts'
import { epx, initializedDataDir } from '../helpers/cli.ts'
import { startReceiver } from '../helpers/webhook-receiver.ts'

// `epx webhook`: endpoints registered after their echo check, their secret shown once,
// listed with their state and log, rotated with an overlap, moved back, removed; audited.

const dir = await initializedDataDir(t)
await epx(dir, 'company', 'add', 'acme', '--name', 'ACME', '--sites', 'PRM00000000000001')

/** `plugin.webhooks` of the data folder's configuration. */
function webhooksConfig (webhooks: Record<string, unknown>): void {
  const file = settingsPath(dir)
  const settings = JSON.parse(readFileSync(file, 'utf8'))
  writeFileSync(file, JSON.stringify({ ...settings, plugin: { ...settings.plugin, webhooks } }, null, 2))
}
// The receiver is on loopback, under the test PKI's server CA (pki/ca.crt).
webhooksConfig({ allowPrivateNetworks: true, caFile: 'pki/ca.crt' })

async function withStore<T> (fn: (store: ReturnType<typeof openStore>) => T | Promise<T>): Promise<T> {
  const store = openStore(inDataDir(dir, 'epx.lmdb'))
  try { await store.opened; return await fn(store) } finally { await store.close() }
}

const receiver = await startReceiver(t, { secret: () => [] })

t.test('add checks the endpoint\'s echo, then prints the secret alone on the last line; list shows it, never the secret', async t => {
  const r = await epx(dir, 'webhook', 'add', 'acme', receiver.url, '--types', 'instruction.statut,realise.modifie')
  t.equal(r.code, 0, r.err)
  const secret = r.lines.at(-1)!
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  const id = /added webhook (wh_[0-9a-f]{16}) for company acme/.exec(r.out)?.[1]
  t.ok(id)
  const stored = await withStore(store => ({ e: openWebhooks(store).get(id!), cursor: openWebhooks(store).stateOf(id!).cursor, last: openEvents(store).lastSeq('acme') }))
  t.same(stored.e && secretsInForce(stored.e, Date.now()), [secret])
  t.equal(stored.cursor, stored.last, 'from the company\'s next event on')
  const list = await epx(dir, 'webhook', 'list')
  t.match(list.lines[1], new RegExp(`^${id}\\s+acme\\s+${receiver.url.replace(/[.]/g, '\\.')}\\s+instruction\\.statut,realise\\.modifie\\s+delivering`))
  t.notOk(list.out.includes(secret) || (await epx(dir, 'webhook', 'list', '--json')).out.includes('whsec_'), 'no secret in either listing')
  const audit = await withStore(store => openAudit(store).list({ action: 'webhook.added' }))
  t.match(audit, [{ subject: id, details: { companyId: 'acme', url: receiver.url } }])
  t.notOk(JSON.stringify(audit).includes('whsec_'), 'nor in the audit')
})

t.test('add refuses what is not an https endpoint answering its echo, saying what to fix, and registers nothing', async t => {
  const before = await withStore(store => openWebhooks(store).list().length)
  const http = await epx(dir, 'webhook', 'add', 'acme', receiver.url.replace('https:', 'http:'))
  t.match([http.code, http.err], [1, /refused: http is not allowed: webhooks go to https:\/\/ endpoints only/])
  const wrong = await startReceiver(t, { secret: () => [], echo: () => ({ status: 200, body: 'hello' }) })
  const echo = await epx(dir, 'webhook', 'add', 'acme', wrong.url)
  t.match([echo.code, echo.err], [1, /failed the echo check: it answered 200 with "hello", not the value .*must answer GET <url>\?echo=<value> with 200/])
  const missing = await startReceiver(t, { secret: () => [], echo: () => ({ status: 404, body: '' }) })
  t.match((await epx(dir, 'webhook', 'add', 'acme', missing.url)).err, /it answered 404/)
  const types = await epx(dir, 'webhook', 'add', 'acme', receiver.url, '--types', 'realise.modifie,nope')
  t.match([types.code, types.err], [2, /unknown 'nope'; the types are besoins_agreges\.publie, instruction\.statut, realise\.modifie, perimetre\.modifie/])
  t.match((await epx(dir, 'webhook', 'add', 'nobody', receiver.url)).err, /no company 'nobody'/)
  webhooksConfig({ caFile: 'pki/ca.crt' })
  t.teardown(() => webhooksConfig({ allowPrivateNetworks: true, caFile: 'pki/ca.crt' }))
  const loopback = await epx(dir, 'webhook', 'add', 'acme', receiver.url)
  t.match([loopback.code, loopback.err], [1, /localhost resolves to (127\.0\.0\.1|::1), a loopback address: .*set webhooks\.allowPrivateNetworks/])
  t.equal(await withStore(store => openWebhooks(store).list().length), before)
})

t.test('rotate-secret prints the new secret once; the old one signs beside it for the overlap', async t => {
  const id = JSON.parse((await epx(dir, 'webhook', 'add', 'acme', receiver.url, '--json')).out).id
  const r = await epx(dir, 'webhook', 'rotate-secret', id, '--overlap-hours', '2')
  t.equal(r.code, 0, r.err)
  const secret = r.lines.at(-1)!
  const e = (await withStore(store => openWebhooks(store).get(id)))!
  t.same(secretsInForce(e, Date.now()).length, 2)
  t.same(secretsInForce(e, Date.now() + 2 * 3_600_000 + 1000), [secret], 'the old one ends with the overlap')
  t.match((await epx(dir, 'webhook', 'rotate-secret', id, '--overlap-hours', 'x')), { code: 2, err: /--overlap-hours x: a whole number of hours from 0 to 168/ })
})

t.test('log shows the attempts, newest first; redeliver moves the cursor back and resumes a failing endpoint; remove leaves nothing', async t => {
  const id = JSON.parse((await epx(dir, 'webhook', 'add', 'acme', receiver.url, '--json')).out).id
  const T = Date.parse('2026-11-21T08:00:00Z')
  await withStore(async store => {
    const hooks = openWebhooks(store)
    await store.writeDurable(() => openEvents(store).appendSync([1, 2, 3].map(n => ({ companyId: 'acme', type: 'realise.modifie' as const, fields: `"n":${n}` })), T))
    await store.writeDurable(() => {
      hooks.claimSync(id, 'test', T, T + 60_000)
      const from = hooks.stateOf(id).cursor
      hooks.settleSync(id, 'test', T, { fromCursor: from, cursor: from + 1, leaseUntilMs: T + 60_000, log: { atMs: T, eventId: '000000000000001', status: 204, latencyMs: 12 } })
      hooks.settleSync(id, 'test', T, { fromCursor: from + 1, failingSinceMs: T + 1, leaseUntilMs: T + 60_000, log: { atMs: T + 1, eventId: '000000000000002', error: 'ECONNREFUSED connect ECONNREFUSED', latencyMs: 3 } })
    })
  })
  const log = await epx(dir, 'webhook', 'log', id)
  t.same(log.lines.map(l => l.split(/\s{2,}/)), [
    ['AT', 'EVENT', 'RESULT', 'LATENCY', 'NEXT TRY'],
    ['2026-11-21T08:00:00.001Z', '000000000000002', 'ECONNREFUSED connect ECONNREFUSED', '3 ms', '-'],
    ['2026-11-21T08:00:00.000Z', '000000000000001', '204', '12 ms', '-'],
  ])
  t.match((await epx(dir, 'webhook', 'list')).out, new RegExp(`${id} .*failing since 2026-11-21T08:00:00.001Z`))
  const last = await withStore(store => openEvents(store).lastSeq('acme'))
  const back = await epx(dir, 'webhook', 'redeliver', id, '--from', String(last - 2).padStart(15, '0'))
  t.equal(back.code, 0, back.err)
  t.same(await withStore(store => [openWebhooks(store).stateOf(id).cursor, openWebhooks(store).get(id)!.failingSince]), [last - 3, undefined])
  t.match(await epx(dir, 'webhook', 'redeliver', id, '--from', 'abc'), { code: 2, err: /an event id/ })
  t.match(await epx(dir, 'webhook', 'redeliver', id, '--from', String(last + 1)), { code: 1, err: /has no event/ })
  t.equal((await epx(dir, 'company', 'suspend', 'acme')).code, 0)
  t.match((await epx(dir, 'webhook', 'list')).out, new RegExp(`${id} .*paused: the company is suspended`))
  t.equal((await epx(dir, 'company', 'resume', 'acme')).code, 0)
  const gone = await epx(dir, 'webhook', 'remove', id)
  t.equal(gone.code, 0, gone.err)
  t.match(await epx(dir, 'webhook', 'log', id), { code: 1, err: /no webhook/ })
  t.same((await withStore(store => openAudit(store).list({ action: 'webhook.' }))).map(a => a.action).filter(a => a !== 'webhook.added'), ['webhook.rotated', 'webhook.redelivered', 'webhook.removed'])
})
