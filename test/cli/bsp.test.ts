import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEpx } from '../helpers/epx.ts'
import { spawn } from 'node:child_process'
import { BIN, epx as runEpx } from '../helpers/cli.ts'
import { testPki } from '../helpers/certs.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'

const DAY = '2026-11-22'

/** A real epx, and a BSP's files: certificate, key, server CA, token file. */
async function setup (t: Parameters<typeof startEpx>[0]) {
  const root = t.testdir()
  const epx = await startEpx(t, { sites: 2, dataDir: join(root, 'epx') })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges', 'inbound:programme-soutirage', 'outbound:realise', 'outbound:evenements'])
  const files = { cert: join(root, 'bsp.crt'), key: join(root, 'bsp.key'), ca: join(root, 'ca.crt'), token: join(root, 'token') }
  writeFileSync(files.cert, cert.certPem)
  writeFileSync(files.key, cert.keyPem)
  writeFileSync(files.ca, testPki().serverCa.certPem)
  writeFileSync(files.token, secret + '\n', { mode: 0o600 })
  const conn = ['--url', epx.url.href, '--cert', files.cert, '--key', files.key, '--ca', files.ca, '--token-file', files.token]
  return { root, epx, files, conn, cert, secret }
}

t.test('epx bsp pull: fetched, then unchanged, then the new revision after a publish', async t => {
  const { root, epx, conn } = await setup(t)
  await epx.handle.publish({ targetDate: DAY })
  const out = join(root, 'out')
  const pull = () => runEpx(root, 'bsp', 'pull', ...conn, '--site', siteId(1), '--site', siteId(2), '--date', DAY, '--out', out)
  const first = await pull()
  t.equal(first.code, 0, first.err)
  t.match(first.lines.at(-1), `${DAY}: fetched 2, unchanged 0, missing 0, failed 0`)
  const doc = JSON.parse(readFileSync(join(out, DAY, `${siteId(1)}.json`), 'utf8'))
  const second = await pull()
  t.match(second.lines.at(-1), 'fetched 0, unchanged 2, missing 0, failed 0')
  epx.clock.advance(60_000)
  await epx.handle.publish({ targetDate: DAY, siteIds: [siteId(1)] })
  const third = await pull()
  t.match(third.lines.at(-1), 'fetched 1, unchanged 1, missing 0, failed 0')
  t.ok(JSON.parse(readFileSync(join(out, DAY, `${siteId(1)}.json`), 'utf8')).emitted_at > doc.emitted_at)
  const missing = await runEpx(root, 'bsp', 'pull', ...conn, '--site', siteId(1), '--date', '2026-11-23', '--out', out, '--json')
  t.equal(missing.code, 0, 'nothing published yet is not a failure')
  t.match(JSON.parse(missing.out), { counts: { missing: 1 }, outcomes: [{ result: 'missing', retryAfterSecs: 300 }] })
})

t.test('epx bsp push: the ids of a good programme; a broken one is stopped with the server\'s details', async t => {
  const { root, epx, conn, cert, secret } = await setup(t)
  const good = join(root, 'good.json')
  writeFileSync(good, JSON.stringify(programme({ sites: 2 })))
  const ok = await runEpx(root, 'bsp', 'push', ...conn, good)
  t.equal(ok.code, 0, ok.err)
  t.same(ok.lines, [
    `ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z ${siteId(1)} 96 queued`,
    `ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z ${siteId(2)} 96 queued`,
  ])
  t.match(ok.err, /2 instruction\(s\) persisted; 2 will be applied at the next solver cycle/)
  const older = join(root, 'older.json')
  writeFileSync(older, JSON.stringify(programme({ sites: 1, emittedAt: '2026-11-21T11:00:00Z' })))
  const superseded = await runEpx(root, 'bsp', 'push', ...conn, older)
  t.same(superseded.lines, [`ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z ${siteId(1)} 96 superseded by ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z`])
  t.match(superseded.err, /1 is superseded by a later programme/)

  // This machine's clock decides: an emitted_at an hour ahead of it is not sent.
  const future = join(root, 'future.json')
  writeFileSync(future, JSON.stringify(programme({ emittedAt: new Date(Date.now() + 3_600_000).toISOString() })))
  const ahead = await runEpx(root, 'bsp', 'push', ...conn, future)
  t.equal(ahead.code, 1)
  t.match(ahead.err, /INVALID_PROGRAMME_SOUTIRAGE_REQUEST: 1 problem\(s\) found before sending; nothing was sent/)
  t.match(ahead.err, /\/emitted_at: is 1\.0 h ahead of this machine's clock .*check the clock and the time zone/)

  const body = programme() as any
  body.sites[0].energie_programmee[2].energie_kwh = -1
  body.sites[0].site_id = 'PRM_1'
  const broken = join(root, 'broken.json')
  writeFileSync(broken, JSON.stringify(body))
  const local = await runEpx(root, 'bsp', 'push', ...conn, '--json', broken)
  t.equal(local.code, 1)
  const server = await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body })
  t.same(JSON.parse(local.out).error.details, server.json().error.details, 'the same JSON-pointer details')
  const text = await runEpx(root, 'bsp', 'push', ...conn, broken)
  t.match(text.err, /INVALID_PROGRAMME_SOUTIRAGE_REQUEST: 2 problem\(s\) found before sending; nothing was sent/)
  t.match(text.err, /\/sites\/0\/energie_programmee\/2\/energie_kwh: /)

  writeFileSync(broken, '{"schema_version": ')
  const notJson = await runEpx(root, 'bsp', 'push', ...conn, '--json', broken)
  const serverNotJson = await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: '{"schema_version": ', headers: { 'content-type': 'application/json' } })
  t.same(JSON.parse(notJson.out).error.details, serverNotJson.json().error.details, 'not JSON: the same "" detail')
})

t.test('epx bsp push: a programme for today says late, or how many periods were over; a slot above the sanity bound is not sent', async t => {
  const { root, conn } = await setup(t)
  const file = (name: string, body: object) => { const f = join(root, name); writeFileSync(f, JSON.stringify(body)); return f }
  // The service's clock stands at 2026-11-21T12:30Z: the day's first eight quarter-hours are over.
  const late = await runEpx(root, 'bsp', 'push', ...conn, file('late.json', programme({ targetDate: '2026-11-21', slots: 8 })))
  t.equal(late.code, 0, late.err)
  t.same(late.lines, [`ProgrammeSoutirage-2026-11-21-rev-20261121T120000Z ${siteId(1)} 8 late`])
  t.match(late.err, /1 instruction\(s\) persisted; none will be applied; 1 is late: every period had begun before it was received \(kept, never applied\)/)
  const partly = await runEpx(root, 'bsp', 'push', ...conn, file('today.json', programme({ targetDate: '2026-11-21', emittedAt: '2026-11-21T12:10:00Z' })))
  t.same(partly.lines, [`ProgrammeSoutirage-2026-11-21-rev-20261121T121000Z ${siteId(1)} 96 queued (54 over)`])

  const huge = await runEpx(root, 'bsp', 'push', ...conn, file('huge.json', programme({ kwh: j => j === 3 ? 1e306 : 2.5 })))
  t.equal(huge.code, 1)
  t.match(huge.err, /1 problem\(s\) found before sending; nothing was sent/)
  t.match(huge.err, /\/sites\/0\/energie_programmee\/3\/energie_kwh: 1e\+306 kWh over a 900 s slot .*sanity bound of 100000 kW per site/)
  // 2.5 kWh a quarter-hour is 10 kW: a service whose bound is 5 kW would refuse it.
  const bounded = await runEpx(root, 'bsp', 'push', ...conn, '--max-site-kw', '5', file('ten.json', programme({ slots: 1 })))
  t.equal(bounded.code, 1)
  t.match(bounded.err, /energie_kwh: .*sanity bound of 5 kW per site/)
  const typo = await runEpx(root, 'bsp', 'push', ...conn, '--max-site-kw', '5kW', file('ten.json', programme({ slots: 1 })))
  t.not(typo.code, 0)
  t.match(typo.err, /--max-site-kw 5kW is not a positive number of kW/)
})

t.test('epx bsp status: what became of the programmes of a day, read over the API', async t => {
  const { root, epx, conn } = await setup(t)
  const file = join(root, 'p.json')
  writeFileSync(file, JSON.stringify(programme({ sites: 2, slots: 4 })))
  t.equal((await runEpx(root, 'bsp', 'push', ...conn, file)).code, 0)
  const id = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'
  // The 202 answers once the programme is durable; a door in its worker hands it to the
  // solver's queue within its flush interval: the cycle runs once it is there.
  await epx.caughtUp()
  epx.ref.runCycle()
  let status = await runEpx(root, 'bsp', 'status', ...conn, '--date', DAY)
  for (let i = 0; i < 50 && !status.out.includes('applied'); i++) {
    await new Promise(r => setTimeout(r, 20))
    status = await runEpx(root, 'bsp', 'status', ...conn, '--date', DAY)
  }
  t.equal(status.code, 0, status.err)
  t.match(status.lines[0], /^INSTRUCTION_ID +SITE_ID +EMITTED_AT +PERIODS +STATUS +INFEASIBLE +IN FORCE$/)
  t.match(status.lines[1], new RegExp(`^${id} +${siteId(1)} +2026-11-21T12:00:00Z +4 +applied \\(cycle 1, 2026-11-21T12:30:00.000Z\\) +0 +2026-11-21T12:30:00Z → now$`))
  t.match(status.err, /2 instruction\(s\) of your company for 2026-11-22/)
  const json = await runEpx(root, 'bsp', 'status', ...conn, '--date', DAY, '--site', siteId(2), '--json')
  t.match(JSON.parse(json.out), { target_date: DAY, count: 1, instructions: [{ instruction_id: id, site_id: siteId(2), status: 'applied' }] })
  const bad = await runEpx(root, 'bsp', 'status', ...conn, '--date', '2026-02-30')
  t.equal(bad.code, 2)
  const { secret } = await epx.addToken('acme', ['outbound:besoins-agreges'])
  const tokenFile = join(root, 'out.token')
  writeFileSync(tokenFile, secret, { mode: 0o600 })
  const denied = await runEpx(root, 'bsp', 'status', ...conn.slice(0, -2), '--token-file', tokenFile, '--date', DAY)
  t.equal(denied.code, 1)
  t.match(denied.err, /^epx: SCOPE_DENIED: token lacks scope 'inbound:programme-soutirage'/)
  const none = await runEpx(root, 'bsp', 'status', ...conn, '--date', '2026-11-23')
  t.equal(none.code, 0)
  t.equal(none.out, '')
  t.match(none.err, /0 instruction\(s\) of your company for 2026-11-23/)
})

t.test('the token comes from a file or EPX_BSP_TOKEN, never an argument', async t => {
  const { root, conn, secret } = await setup(t)
  const noToken = conn.slice(0, -2)
  const none = await runEpx(root, 'bsp', 'pull', ...noToken, '--site', siteId(1), '--date', DAY, '--out', join(root, 'o'))
  t.equal(none.code, 2)
  t.match(none.err, /no token: give --token-file FILE or set EPX_BSP_TOKEN/)
  const arg = await runEpx(root, 'bsp', 'pull', ...noToken, '--token', secret, '--site', siteId(1), '--date', DAY, '--out', join(root, 'o'))
  t.equal(arg.code, 2)
  t.notMatch(arg.err, secret, 'the token is not echoed')
  process.env.EPX_BSP_TOKEN = secret
  t.teardown(() => { delete process.env.EPX_BSP_TOKEN })
  const env = await runEpx(root, 'bsp', 'pull', ...noToken, '--site', siteId(1), '--date', DAY, '--out', join(root, 'o'))
  t.equal(env.code, 0, env.err)
  t.match(env.lines.at(-1), 'missing 1')
  const badFile = await runEpx(root, 'bsp', 'pull', ...noToken, '--token-file', join(root, 'nope'), '--site', siteId(1), '--date', DAY, '--out', join(root, 'o'))
  t.match(badFile.err, /cannot read --token-file .*nope: ENOENT/)
  const bad = await runEpx(root, 'bsp', 'pull', ...conn, '--date', DAY, '--out', join(root, 'o'))
  t.match(bad.err, /missing --site PRM/)
})

t.test('epx bsp reads no data folder: --data is refused, its help does not offer it', async t => {
  const { root, conn } = await setup(t)
  for (const sub of ['pull', 'push', 'status', 'realise', 'sites', 'events']) {
    const help = await runEpx(root, 'bsp', sub, '--help')
    t.equal(help.code, 0)
    t.notMatch(help.out, /--data/, `epx bsp ${sub} --help offers no --data`)
  }
  const refused = await runEpx(root, '--data', join(root, 'elsewhere'), 'bsp', 'pull', ...conn, '--site', siteId(1), '--date', DAY, '--out', join(root, 'o'))
  t.equal(refused.code, 2)
  t.match(refused.err, /--data is not an option of 'epx bsp'/)
})

t.test('--url with a path: the API\'s paths are appended to it (a service behind a reverse proxy)', async t => {
  const { root, epx, conn } = await setup(t)
  await epx.handle.publish({ targetDate: DAY })
  const url = conn.indexOf('--url') + 1
  const prefixed = conn.with(url, new URL('/behind/a/proxy/', epx.url).href)
  const pull = await runEpx(root, 'bsp', 'pull', ...prefixed, '--site', siteId(1), '--date', DAY, '--out', join(root, 'o'))
  t.equal(pull.code, 1, 'the prefix was kept: the service answers an unknown path')
  t.match(pull.out, /failed/)
  t.match(pull.out + pull.err, /\/behind\/a\/proxy\/api\/v0\.5\/energy-programs\/besoins-agreges/, 'the path asked names the prefix')
  const file = join(root, 'p.json')
  writeFileSync(file, JSON.stringify(programme()))
  for (const [sub, path, rest] of [
    ['push', 'programme-soutirage', [file]],
    ['status', 'programme-soutirage', ['--date', DAY]],
    ['realise', 'realise', ['--site', siteId(1), '--date', DAY]],
    ['sites', 'sites', []],
  ] as const) {
    const r = await runEpx(root, 'bsp', sub, ...prefixed, ...rest)
    t.equal(r.code, 1, `epx bsp ${sub} refused`)
    t.match(r.err, new RegExp(`^epx: UNKNOWN_PATH: no resource at /behind/a/proxy/api/v0\\.5/energy-programs/${path}`), `epx bsp ${sub} keeps the prefix, and says the code of the refusal`)
  }
})

t.test('epx bsp pull --watch says what it waits for, and until when', async t => {
  const { root, conn } = await setup(t)
  // A day a week ahead of the real clock: the first round is due 08:30 Paris the day before.
  const day = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10)
  const child = spawn(process.execPath, [BIN, 'bsp', 'pull', ...conn, '--site', siteId(1), '--date', day, '--out', join(root, 'o'), '--watch'], { stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill() })
  let err = ''
  child.stderr.setEncoding('utf8')
  const line = await new Promise<string>(resolve => child.stderr.on('data', d => { err += d; if (err.includes('\n')) resolve(err.split('\n')[0]!) }))
  const before = new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10)
  t.match(line, new RegExp(`^epx: waiting until ${before}T0[67]:30:00Z \\(${before} 08:30 Europe/Paris\\) for the first round of ${day}: 08:30 Europe/Paris the day before, after the 08:00 publication \\(Ctrl\\+C stops\\)$`))
})

t.test('epx bsp realise: a site\'s day, programmed against delivered, read over the API', async t => {
  const { root, epx, conn } = await setup(t)
  const file = join(root, 'p.json')
  writeFileSync(file, JSON.stringify(programme({ slots: 2, kwh: j => [4, 0][j]! })))
  t.equal((await runEpx(root, 'bsp', 'push', ...conn, file)).code, 0)
  epx.clock.set('2026-11-22T00:00:00Z')
  await epx.handle.reportMetering([
    { siteId: siteId(1), startUtc: '2026-11-21T23:00:00Z', endUtc: '2026-11-21T23:15:00Z', kwh: 3.5 },
    { siteId: siteId(1), startUtc: '2026-11-21T23:15:00Z', endUtc: '2026-11-21T23:30:00Z', kwh: 0 },
  ])
  const r = await runEpx(root, 'bsp', 'realise', ...conn, '--site', siteId(1), '--date', DAY)
  t.equal(r.code, 0, r.err)
  t.match(r.lines[0], /^DEBUT_UTC +FIN_UTC +PROGRAMMEE_KWH +REALISEE_KWH +VERDICT +MANQUE_KWH$/)
  t.match(r.lines[1], /^2026-11-21T23:00:00Z +2026-11-21T23:15:00Z +4\.000 +3\.500 +short +0\.500$/)
  t.match(r.lines[2], /^2026-11-21T23:15:00Z +2026-11-21T23:30:00Z +0\.000 +0\.000 +curtailment_respected/)
  t.match(r.err, /programmed 4\.000 kWh, delivered 3\.500 kWh, shortfall 0\.500 kWh; 1 short, 1 curtailment_respected, 94 unconstrained/)
  const json = JSON.parse((await runEpx(root, 'bsp', 'realise', ...conn, '--site', siteId(1), '--date', DAY, '--json')).out)
  t.equal(json.totaux.manque_kwh, 0.5)
  const none = await runEpx(root, 'bsp', 'realise', ...conn, '--site', siteId(2), '--date', DAY)
  t.equal(none.code, 1)
  t.match(none.err, /NOTHING_TO_COMPARE: nothing to compare for site PRM30000000000002 on 2026-11-22/)
})

t.test('epx bsp events: what changed since the saved cursor, the cursor saved once printed, a cursor expired told', async t => {
  const { root, epx, conn } = await setup(t)
  const cursor = join(root, 'cursor')
  await epx.handle.publish({ targetDate: DAY })
  const first = await runEpx(root, 'bsp', 'events', ...conn, '--cursor-file', cursor)
  t.equal(first.code, 0, first.err)
  const published = first.lines.filter(l => l.includes('besoins_agreges.publie'))
  t.equal(published.length, 2, 'both sites of the publication')
  t.match(published[0], new RegExp(`^\\d{15} \\S+Z besoins_agreges\\.publie site_id=${siteId(1)} target_date=${DAY} etag=W/"\\S+" emitted_at=\\S+Z$`))
  t.equal(readFileSync(cursor, 'utf8').trim(), first.lines.at(-1)!.split(' ')[0], 'the cursor is the last event printed')

  const none = await runEpx(root, 'bsp', 'events', ...conn, '--cursor-file', cursor)
  t.same([none.code, none.out], [0, ''], 'nothing new since')
  const file = join(root, 'p.json')
  writeFileSync(file, JSON.stringify(programme({ sites: [siteId(1)], slots: 2 })))
  t.equal((await runEpx(root, 'bsp', 'push', ...conn, file)).code, 0)
  const json = await runEpx(root, 'bsp', 'events', ...conn, '--cursor-file', cursor, '--json', '--wait', '1')
  t.match(JSON.parse(json.lines[0]!), { type: 'instruction.statut', site_id: siteId(1), status: 'queued' })

  // Retention 8 days on: the saved cursor is older than every event kept.
  const { openEvents } = await import('../../src/store/events.ts')
  await openEvents(epx.store, { retentionDays: 7 }).prune(epx.clock.now().getTime() + 8 * 86_400_000)
  writeFileSync(cursor, '000000000000001\n')
  const expired = await runEpx(root, 'bsp', 'events', ...conn, '--cursor-file', cursor)
  t.equal(expired.code, 1)
  t.match(expired.err, /CURSOR_EXPIRED: .*read the state again/)
  t.equal(readFileSync(cursor, 'utf8').trim(), '000000000000001', 'the cursor is kept until the state is read again')
  t.equal((await runEpx(root, 'bsp', 'events', ...conn, '--cursor-file', cursor, '--reset')).code, 0)
  t.not(readFileSync(cursor, 'utf8').trim(), '000000000000001')
  t.equal((await runEpx(root, 'bsp', 'events', ...conn, '--cursor-file', cursor)).code, 0, 'and it goes on')
  const bad = await runEpx(root, 'bsp', 'events', ...conn, '--wait', '31')
  t.equal(bad.code, 2)
  t.match(bad.err, /--wait 31 is not a whole number from 0 to 30/)
})

t.test('epx bsp sites: your company\'s perimeter, read over the API with any of its tokens', async t => {
  // bolt is added before acme's "all sites" (a month before the clock), so it holds its two sites (DECISIONS.md "Tenure").
  const { root, epx, files, conn } = await setup(t)
  const { cert } = await epx.addCompany('bolt', { perimeter: [siteId(2), siteId(1)], since: '2026-10-01T00:00:00Z' })
  const { secret } = await epx.addToken('bolt', ['outbound:realise'])
  writeFileSync(files.cert, cert.certPem)
  writeFileSync(files.key, cert.keyPem)
  writeFileSync(files.token, secret + '\n', { mode: 0o600 })
  const r = await runEpx(root, 'bsp', 'sites', ...conn)
  t.equal(r.code, 0, r.err)
  t.match(r.lines[0], /^SITE_ID +HELD_SINCE$/)
  t.match(r.lines.slice(1), [new RegExp(`^${siteId(1)} +2026-10-01T00:00:00\\.000Z$`), new RegExp(`^${siteId(2)} +2026-10-01T00:00:00\\.000Z$`)])
  t.equal(r.lines.length, 3)
  t.match(r.err, /2 site\(s\) in your company's perimeter/)
  const json = JSON.parse((await runEpx(root, 'bsp', 'sites', ...conn, '--json')).out)
  t.same(json, { perimeter: 'sites', sites: [{ site_id: siteId(1), held_since: '2026-10-01T00:00:00.000Z' }, { site_id: siteId(2), held_since: '2026-10-01T00:00:00.000Z' }] })
})
