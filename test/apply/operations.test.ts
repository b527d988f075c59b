import t from 'tap'
import { startEpx } from '../helpers/epx.ts'
import { epx as cli, initializedDataDir } from '../helpers/cli.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { openAudit } from '../../src/store/audit.ts'
import { eventually } from '../helpers/eventually.ts'

// One day of exchanges on a real plugin (real mTLS, real LMDB), then the audit trail,
// the flags and the CLI answer "who sent what, what is infeasible".
const dir = await initializedDataDir(t)
const epx = await startEpx(t, { dataDir: dir, now: '2026-11-21T12:30:00Z' })
// Sites 1 and 2 (one BSP per site): the CLI adds beta on site 3 below.
const { cert } = await epx.addCompany('acme', { perimeter: [siteId(1), siteId(2)] })
const inbound = await epx.addToken('acme', ['inbound:programme-soutirage'])
const outbound = await epx.addToken('acme', ['outbound:besoins-agreges'])
const revoked = await epx.addToken('acme', ['outbound:besoins-agreges'], { revoked: true })
const expired = await epx.addToken('acme', ['outbound:besoins-agreges'], { expiresAt: '2026-11-21T12:00:00Z' })
await epx.handle.publish({ targetDate: '2026-11-22' })

const ID = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'
/** Slot 2 of site 1 asks 500 kWh in a quarter-hour: a 2,000 kW floor, over any simulated site's limit. */
const overPower = programme({ sites: 2, slots: 4, kwh: (j, i) => (i === 0 && j === 2 ? 500 : 1) })
const accepted = await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: inbound.secret, body: overPower })
const rejected = await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: inbound.secret, body: { ...overPower, target_date: '2026-02-30' } })
const query = { site_id: siteId(1), target_date: '2026-11-22' }
const dead1 = await epx.request({ path: OUTBOUND_PATH, query, cert, token: revoked.secret })
const dead2 = await epx.request({ path: OUTBOUND_PATH, query, cert, token: revoked.secret })
const lapsed = await epx.request({ path: OUTBOUND_PATH, query, cert, token: expired.secret })

/** Polls (bounded) for what the service writes after it answered. */
const audited = () => openAudit(epx.store).list()

t.test('a programme accepted with a 202 is audited: instruction id, sites, bytes, sender company and token', async t => {
  t.equal(accepted.status, 202, accepted.text)
  const [r] = (await eventually(audited, l => l.some(x => x.action === 'programme.accepted'))).filter(x => x.action === 'programme.accepted')
  t.match(r, {
    at: '2026-11-21T12:30:00.000Z', action: 'programme.accepted', subject: ID, outcome: 'ok',
    actor: { kind: 'company', companyId: 'acme', tokenId: inbound.id },
    details: { targetDate: '2026-11-22', sites: 2, siteIds: [siteId(1), siteId(2)], bytes: Buffer.byteLength(JSON.stringify(overPower)) },
  })
})

t.test('a refused programme is audited with its status, error code and first details', async t => {
  t.equal(rejected.status, 400)
  const r = (await eventually(audited, l => l.some(x => x.action === 'programme.rejected'))).find(x => x.action === 'programme.rejected')
  t.match(r, {
    action: 'programme.rejected', outcome: 'refused 400 INVALID_PROGRAMME_SOUTIRAGE_REQUEST',
    actor: { companyId: 'acme', tokenId: inbound.id }, details: { status: 400, code: 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST', details: { '/target_date': String } },
  })
})

t.test('a publication run is audited with its date, sites published and failed, and who ran it', async t => {
  const r = audited().find(x => x.action === 'publication.run')
  t.match(r, { actor: { kind: 'host' }, subject: '2026-11-22', outcome: 'ok', details: { published: 3, failed: 0 } })
})

t.test('a revoked token used is audited once, not once per retry', async t => {
  t.equal(dead1.status, 401)
  t.equal(dead2.status, 401)
  const refused = (await eventually(audited, l => l.some(x => x.action === 'token.refused'))).filter(x => x.action === 'token.refused')
  t.equal(refused.filter(r => r.subject === revoked.id).length, 1)
  t.match(refused[0], { subject: revoked.id, outcome: 'refused 401 revoked', actor: { companyId: 'acme', tokenId: revoked.id } })
})

t.test('an expired token used is audited as expired-on-use', async t => {
  t.equal(lapsed.status, 401)
  const r = (await eventually(audited, l => l.some(x => x.subject === expired.id))).find(x => x.subject === expired.id)
  t.match(r, { action: 'token.refused', outcome: 'refused 401 expired', details: { reason: 'expired', expiresAt: '2026-11-21T12:00:00Z' } })
})

t.test('the audit trail never holds a token secret', async t => {
  const text = JSON.stringify(audited())
  for (const secret of [inbound.secret, outbound.secret, revoked.secret, expired.secret]) t.notOk(text.includes(secret))
})

t.test('an instruction with a floor over the available power is flagged, warned once, and still applied', async t => {
  const flagged = await eventually(() => cli(dir, 'instructions', 'show', ID, '--site', siteId(1), '--json'),
    r => r.code === 0 && JSON.parse(r.out)[0].feasibility !== null)
  const [shown] = JSON.parse(flagged.out)
  t.equal(shown.feasibility.infeasibleSlots.length, 1, 'one slot over')
  t.match(shown.feasibility.infeasibleSlots[0], { startUtc: '2026-11-21T23:30:00Z', floorKw: 2000 })
  t.ok(shown.feasibility.infeasibleSlots[0].availableKw < 2000)
  t.equal(shown.status, 'queued', 'applied all the same: handed to the solver')
  const other = JSON.parse((await cli(dir, 'instructions', 'show', ID, '--site', siteId(2), '--json')).out)[0]
  t.equal(other.feasibility, null, 'site 2 asks 4 kW a slot: nothing flagged')
  const table = await cli(dir, 'instructions', 'show', ID, '--site', siteId(1))
  t.match(table.out, /feasibility\s+INFEASIBLE: 1 slot\(s\) with a floor over the available power/)
  t.match(table.out, /2026-11-21T23:30:00Z\s+2026-11-21T23:45:00Z\s+500\s+min_kw 2000\s+over the available [\d.]+ kW/)
  const warns = epx.logs().filter(l => l.level === 40 && /asks more than the site can take/.test(l.msg))
  t.equal(warns.length, 1, 'one warn line for the programme')
  t.match(warns[0], { instructionId: ID, sites: 1, firstSite: siteId(1) })
})

t.test('epx audit list answers who did what, filtered by action, company and time', async t => {
  const all = await cli(dir, 'audit', 'list')
  t.equal(all.code, 0, all.err)
  t.match(all.lines[0], /^AT\s+ACTOR\s+ACTION\s+SUBJECT\s+OUTCOME\s+DETAILS$/)
  t.match(all.out, new RegExp(`company acme \\(${inbound.id}\\)\\s+programme.accepted\\s+${ID}\\s+ok`))
  const programmes = JSON.parse((await cli(dir, 'audit', 'list', '--action', 'programme.', '--json')).out)
  t.same(programmes.map((r: any) => r.action), ['programme.accepted', 'programme.rejected'])
  const acme = JSON.parse((await cli(dir, 'audit', 'list', '--company', 'acme', '--json')).out)
  t.notOk(acme.some((r: any) => r.action === 'publication.run'), 'a publication run is nobody\'s company event')
  t.equal(JSON.parse((await cli(dir, 'audit', 'list', '--until', '2026-11-20', '--json')).out).length, 0)
  t.ok(JSON.parse((await cli(dir, 'audit', 'list', '--since', '2026-11-21T12:29:00Z', '--json')).out).length >= 4)
  const bad = await cli(dir, 'audit', 'list', '--since', 'yesterday')
  t.equal(bad.code, 2)
  t.match(bad.err, /--since yesterday is not an instant/)
})

t.test('token and company changes made with the CLI are audited with the CLI user', async t => {
  t.equal((await cli(dir, 'company', 'add', 'beta', '--name', 'Beta', '--sites', siteId(3))).code, 0)
  const created = JSON.parse((await cli(dir, 'token', 'create', '--company', 'beta', '--scope', 'outbound:besoins-agreges', '--json')).out)
  t.equal((await cli(dir, 'token', 'revoke', created.id)).code, 0)
  t.equal((await cli(dir, 'company', 'suspend', 'beta')).code, 0)
  t.equal((await cli(dir, 'company', 'resume', 'beta')).code, 0)
  t.equal((await cli(dir, 'company', 'pin-cert', 'beta', 'AB'.repeat(32))).code, 0)
  t.equal((await cli(dir, 'publish', '--date', '2026-11-23', '--site', siteId(1))).code, 0)
  const run = JSON.parse((await cli(dir, 'audit', 'list', '--action', 'publication.run', '--json')).out).at(-1)
  t.match(run, { actor: { kind: 'cli' }, subject: '2026-11-23', outcome: 'ok', details: { published: 1, failed: 0 } }, 'epx publish is audited before it returns')
  const beta = JSON.parse((await cli(dir, 'audit', 'list', '--company', 'beta', '--json')).out)
  t.same(beta.map((r: any) => r.action), ['company.created', 'token.created', 'token.revoked', 'company.suspended', 'company.resumed', 'company.rebound'])
  t.ok(beta.every((r: any) => r.actor.kind === 'cli' && typeof r.actor.user === 'string'))
  t.match(beta[1], { subject: created.id, details: { companyId: 'beta', scopes: ['outbound:besoins-agreges'] } })
  t.notOk(JSON.stringify(beta).includes(created.token), 'the new secret is not in the trail')
})
