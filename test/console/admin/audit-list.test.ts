import t, { type Test } from 'tap'
import { loadAuditList, type AuditListModel, type AuditListQuery } from '../../../src/console/admin/audit-list.ts'
import { renderAuditList } from '../../../src/console/admin/audit.ts'
import { ManualClock } from '../../../src/host/reference-host.ts'
import { openAudit, type Audit, type AuditEvent } from '../../../src/store/audit.ts'
import { seedStore } from '../../helpers/seed.ts'
import { siteId } from '../../helpers/programme.ts'

// "Journal d'audit" as a model: the filters of `epx audit list` plus a search, newest
// first, in pages by key that neither repeat nor skip a record when records keep coming.

const clock = new ManualClock('2026-11-21T12:30:00Z')
const T0 = Date.parse('2026-11-21T08:00:00Z')

async function trail (t: Test): Promise<{ audit: Audit; deps: Parameters<typeof loadAuditList>[0] }> {
  const s = seedStore(t)
  await s.addCompany('acme', 'all')
  await s.addCompany('beta', 'all')
  const audit = openAudit(s.store)
  const events: Array<[AuditEvent, number]> = []
  // 150 programmes of acme, one a minute from 09:00 Paris, each naming its site.
  for (let k = 0; k < 150; k++) {
    events.push([{ actor: { kind: 'company', companyId: 'acme', tokenId: 'tok_a' }, action: 'programme.accepted', subject: `P${k}`, outcome: 'ok', details: { sites: 1, siteIds: [siteId(k + 1)] } }, T0 + k * 60_000])
  }
  events.push([{ actor: { kind: 'company', companyId: 'beta' }, action: 'programme.rejected', subject: 'programme-soutirage', outcome: 'refused 400 INVALID_PROGRAMME_SOUTIRAGE_REQUEST', details: { status: 400 } }, T0 + 30_000])
  events.push([{ actor: { kind: 'console', user: 'root' }, action: 'token.revoked', subject: 'tok_b', outcome: 'ok', details: { companyId: 'beta' } }, T0 + 90_000])
  events.push([{ actor: { kind: 'schedule' }, action: 'publication.run', subject: '2026-11-22', outcome: 'ok', details: { published: 3 } }, T0 - 3 * 86_400_000])
  events.push([{ actor: { kind: 'cli', user: 'ops' }, action: 'company.created', subject: 'gamma', outcome: 'ok' }, T0 - 10 * 86_400_000])
  await s.store.writeDurable(() => { for (const [e, at] of events) audit.appendSync(e, at) })
  return { audit, deps: { audit, companies: s.companies, clock } }
}

function list (deps: Parameters<typeof loadAuditList>[0], q: AuditListQuery): AuditListModel {
  const r = loadAuditList(deps, q)
  if (r.status !== 200) throw new Error(`status ${r.status}: ${'message' in r ? r.message : ''}`)
  return r.model
}

const subjects = (m: AuditListModel) => m.rows.map(r => r.subject)

t.test('newest first over the last seven days by default; a company, an action or a family, and a search narrow it', async t => {
  const { deps } = await trail(t)
  const all = list(deps, {})
  t.equal(all.total, 153, 'the company created ten days ago is before the default window')
  t.equal(all.filter.since, '2026-11-15', 'the window starts six days before today, in Paris')
  t.same(subjects(all).slice(0, 2), ['P149', 'P148'], 'newest first')
  t.equal(all.rows.length, 100, 'a page of 100')
  t.equal(list(deps, { since: '2026-11-01' }).total, 154)
  t.same(subjects(list(deps, { company_id: 'beta' })), ['tok_b', 'programme-soutirage'], 'as actor, or named in the details')
  t.same(subjects(list(deps, { action: 'token.' })), ['tok_b'], 'a family')
  t.same(subjects(list(deps, { action: 'programme.rejected' })), ['programme-soutirage'])
  t.same(subjects(list(deps, { q: siteId(42).toLowerCase() })), ['P41'], 'a site the programme named, in any case')
  t.same(subjects(list(deps, { q: 'ROOT' })), ['tok_b'], 'a console user')
})

t.test('a time range in Paris wall time: both minutes included', async t => {
  const { deps } = await trail(t)
  // T0 is 09:00 Paris: P0 at 09:00, P1 at 09:01, P2 at 09:02.
  const m = list(deps, { since: '2026-11-21T09:01', until: '2026-11-21T09:02', action: 'programme.accepted' })
  t.same(subjects(m), ['P2', 'P1'])
  t.same(subjects(list(deps, { since: '2026-11-18', until: '2026-11-18' })), ['2026-11-22'], 'a day, whole')
})

t.test('walking the pages while records arrive: each record of the start seen once, and back the same', async t => {
  const { audit, deps } = await trail(t)
  const start = list(deps, { action: 'programme.' })
  const seen: string[] = [...subjects(start)]
  let m = start
  for (let k = 0; m.next; k++) {
    // Newer records land before the cursor: never on a later page.
    await audit.append({ actor: { kind: 'company', companyId: 'acme' }, action: 'programme.accepted', subject: `N${k}`, outcome: 'ok' }, T0 + 200 * 60_000 + k)
    m = list(deps, { action: 'programme.', after: m.next })
    seen.push(...subjects(m))
  }
  t.equal(seen.length, 151, 'every programme record once')
  t.equal(new Set(seen).size, 151)
  t.ok(seen.every(s => !s.startsWith('N')), 'none of those that came meanwhile')
  const walked: string[] = [...subjects(m)]
  for (let cursor = m.previous; cursor !== undefined;) {
    const back = list(deps, { action: 'programme.', before: cursor })
    walked.unshift(...subjects(back))
    cursor = back.previous
  }
  t.same(walked.filter(s => !s.startsWith('N')), seen, 'back through the pages: the same records, in the same order')
  t.same(walked.filter(s => s.startsWith('N')), ['N0'], 'after the one that came meanwhile, first')
})

t.test('a filter it cannot read is a 400 that says what to write', async t => {
  const { deps } = await trail(t)
  t.match(loadAuditList(deps, { since: 'yesterday' }), { status: 400, message: /Depuis « yesterday » : une date \(AAAA-MM-JJ\)/ })
  t.match(loadAuditList(deps, { until: '2026-11-31' }), { status: 400 })
  t.match(loadAuditList(deps, { action: 'token' }), { status: 400, message: /Action « token » inconnue : programme\., .*token\.revoked/ })
  t.match(loadAuditList(deps, { after: 'a', before: 'b' }), { status: 400 })
})

t.test('the page: French labels, the clock once in the header, a refused programme told apart, text escaped', async t => {
  const { audit, deps } = await trail(t)
  await audit.append({ actor: { kind: 'console', user: '<b>eve</b>' }, action: 'user.login-failed', subject: '<script>', outcome: 'refused' }, T0 + 100)
  const page = renderAuditList(list(deps, { since: '2026-11-21', until: '2026-11-21T09:01' })).toString()
  t.match(page, /<th scope="col">Quand <span class="clock">\(heure de Paris\)<\/span><\/th>/)
  t.notMatch(page, /UTC\+0/, 'no cell repeats the offset')
  t.match(page, /<td>programme refusé<br><small><code>programme.rejected<\/code><\/small><\/td><td>entreprise beta<\/td>/)
  t.match(page, /<td class="outcome-other"><strong>refused 400 INVALID_PROGRAMME_SOUTIRAGE_REQUEST<\/strong><\/td>/)
  t.match(page, /&lt;b&gt;eve&lt;\/b&gt;/)
  t.notMatch(page, /<script>|<b>eve/)
  t.match(page, /<input id="since" name="since" type="datetime-local" value="2026-11-21T00:00" required>/)
})
