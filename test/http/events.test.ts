import t from 'tap'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { EVENTS_PATH } from '../../src/contract/paths.ts'
import type { Scope } from '../../src/contract/scopes.ts'
import { eventId, openEvents } from '../../src/store/events.ts'

// DECISIONS.md "Events for BSPs": GET evenements?apres=ID&limite=N&attente=S, through the
// front door (mTLS, real tokens), the door in its worker as the plugin ships it.

const DAY = '2026-11-22'
const ALL: Scope[] = ['outbound:evenements', 'inbound:programme-soutirage']

async function company (epx: TestEpx, id: string, perimeter: 'all' | string[], scopes: Scope[] = ALL) {
  // Added now: its first event (its perimeter) is not past retention already.
  const { cert } = await epx.addCompany(id, { perimeter, since: epx.clock.now().toISOString() })
  const { secret } = await epx.addToken(id, scopes)
  const feed = (query: Record<string, string> = {}) => epx.request({ method: 'GET', path: EVENTS_PATH, query, cert, token: secret })
  const send = (emittedAt = '2026-11-21T12:00:00Z') => epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme({ sites: [siteId(1)], slots: 4, emittedAt }) })
  return { feed, send }
}

const open = (t: Parameters<typeof startEpx>[0]) => startEpx(t)

t.test('a company reads its events oldest first, page after page, from the cursor it was given', async t => {
  const epx = await open(t)
  const acme = await company(epx, 'acme', [siteId(1), siteId(2)])
  await epx.handle.publish({ targetDate: DAY })
  const first = await acme.feed()
  t.equal(first.status, 200, first.text)
  t.equal(first.headers['content-type'], 'application/json')
  t.equal(first.headers['cache-control'], 'no-store')
  const body = first.json()
  t.same(Object.keys(body), ['evenements', 'suivant'])
  t.same(body.evenements.map((e: any) => e.type), ['perimetre.modifie', 'besoins_agreges.publie', 'besoins_agreges.publie'])
  const published = body.evenements.slice(1)
  t.same(published.map((e: any) => [e.site_id, e.target_date]), [[siteId(1), DAY], [siteId(2), DAY]], 'the sites of its perimeter, not the third')
  // The event carries what a conditional GET besoins-agreges needs.
  t.match(published[0], { etag: /^W\/"[A-Za-z0-9_-]+"$/, emitted_at: /Z$/, occurred_at: /Z$/ })
  t.equal(body.suivant, body.evenements.at(-1).id)

  const paged = (await acme.feed({ limite: '2' })).json()
  t.same(paged.evenements.map((e: any) => e.id), body.evenements.slice(0, 2).map((e: any) => e.id))
  const rest = (await acme.feed({ apres: paged.suivant, limite: '2' })).json()
  t.same(rest.evenements.map((e: any) => e.id), [body.evenements[2].id])
  const none = (await acme.feed({ apres: rest.suivant })).json()
  t.same(none, { evenements: [], suivant: rest.suivant }, 'nothing new: the same cursor back')
})

t.test('every bad parameter is a 400 problem naming it and saying what to give', async t => {
  const epx = await open(t)
  const acme = await company(epx, 'acme', 'all')
  const cases: Array<[Record<string, string>, string, RegExp]> = [
    [{ apres: 'abc' }, 'apres', /event id/],
    [{ apres: '-1' }, 'apres', /event id/],
    [{ limite: '0' }, 'limite', /1 to 1000/],
    [{ limite: '1001' }, 'limite', /1 to 1000/],
    [{ limite: '2.5' }, 'limite', /integer/],
    [{ attente: '31' }, 'attente', /0 to 30/],
    [{ attente: 'soon' }, 'attente', /seconds/],
    [{ after: '1' }, 'after', /unknown parameter; the parameters are apres, limite, attente/],
  ]
  for (const [query, name, reason] of cases) {
    const res = await acme.feed(query)
    t.equal(res.status, 400, JSON.stringify(query))
    t.equal(res.headers['content-type'], 'application/problem+json')
    const problem = res.json()
    t.equal(problem.code, 'INVALID_QUERY')
    t.equal(problem.invalid_params.length, 1)
    t.equal(problem.invalid_params[0].name, name)
    t.match(problem.invalid_params[0].reason, reason)
    t.match(problem.detail, name)
  }
  const twice = await epx.request({ method: 'GET', path: `${EVENTS_PATH}?limite=5&limite=6`, cert: (await epx.addCompany('twice', { perimeter: [], since: epx.clock.now().toISOString() })).cert, token: (await epx.addToken('twice', ALL)).secret })
  t.equal(twice.status, 400)
  t.match(twice.json().invalid_params, [{ name: 'limite', reason: 'must be given once' }])

  const reader = await company(epx, 'reader', [siteId(3)], ['outbound:besoins-agreges'])
  const denied = await reader.feed()
  t.equal(denied.status, 403)
  t.equal(denied.json().code, 'SCOPE_DENIED')
  t.match(denied.headers['www-authenticate'], /scope="outbound:evenements"/)
})

t.test('tenancy: with every parameter, three companies each read their own events only', async t => {
  const epx = await open(t)
  const companies = {
    acme: await company(epx, 'acme', [siteId(1)]),
    bolt: await company(epx, 'bolt', [siteId(2)]),
    cove: await company(epx, 'cove', [siteId(3)]),
  }
  const own = { acme: siteId(1), bolt: siteId(2), cove: siteId(3) }
  for (let i = 0; i < 3; i++) await epx.handle.publish({ targetDate: DAY })
  // Each company's ids, to try as another's cursor.
  const ids = new Set<string>()
  for (const c of Object.values(companies)) for (const e of (await c.feed({ limite: '1000' })).json().evenements) ids.add(e.id)
  const cursors = [undefined, eventId(0), eventId(1), eventId(2), ...ids, eventId(999)]
  for (const [name, c] of Object.entries(companies)) {
    for (const apres of cursors) {
      for (const limite of [undefined, '1', '1000']) {
        const query: Record<string, string> = { attente: '0', ...(apres === undefined ? {} : { apres }), ...(limite === undefined ? {} : { limite }) }
        const res = await c.feed(query)
        t.equal(res.status, 200, `${name} ${JSON.stringify(query)}`)
        for (const e of res.json().evenements) {
          if (e.type === 'besoins_agreges.publie' && e.site_id !== own[name as keyof typeof own]) {
            t.fail(`${name} was given another company's event with ${JSON.stringify(query)}: ${JSON.stringify(e)}`)
            return
          }
          if (e.type === 'perimetre.modifie' && e.sites_added[0] !== own[name as keyof typeof own]) t.fail(`${name}: another's perimeter`)
        }
      }
    }
  }
  t.pass('no company read another\'s event')
})

t.test('attente: an empty answer waits, and goes at once when an event is written, whichever thread writes it', async t => {
  const epx = await open(t)
  const acme = await company(epx, 'acme', [siteId(1)])
  const { suivant } = (await acme.feed()).json()

  // Nothing comes: the answer waits the whole second, then says so.
  const started = performance.now()
  const quiet = await acme.feed({ apres: suivant, attente: '1' })
  t.ok(performance.now() - started >= 950, 'it waited')
  t.same(quiet.json(), { evenements: [], suivant })

  // A publication on the solver's thread wakes a wait in the door's thread.
  const waiting = acme.feed({ apres: suivant, attente: '30' })
  const since = performance.now()
  await new Promise(resolve => setTimeout(resolve, 200))
  await epx.handle.publish({ targetDate: DAY, siteIds: [siteId(1)] })
  const woken = await waiting
  t.ok(performance.now() - since < 25_000, 'released by the event, not by the end of its wait')
  const got = woken.json()
  t.same(got.evenements.map((e: any) => [e.type, e.site_id]), [['besoins_agreges.publie', siteId(1)]])

  // A programme saved by the door's own thread wakes it too.
  const again = acme.feed({ apres: got.suivant, attente: '30' })
  const since2 = performance.now()
  await new Promise(resolve => setTimeout(resolve, 200))
  t.equal((await acme.send()).status, 202)
  const queued = (await again).json()
  t.ok(performance.now() - since2 < 25_000)
  t.match(queued.evenements, [{ type: 'instruction.statut', site_id: siteId(1), status: 'queued' }])

  // Another company's event wakes the wait, which finds nothing of its own and waits on.
  const bolt = await company(epx, 'bolt', [siteId(2)])
  const boltCursor = (await bolt.feed()).json().suivant
  const boltWaiting = bolt.feed({ apres: boltCursor, attente: '2' })
  await new Promise(resolve => setTimeout(resolve, 200))
  await epx.handle.publish({ targetDate: DAY, siteIds: [siteId(1)] })
  t.same((await boltWaiting).json(), { evenements: [], suivant: boltCursor }, 'acme\'s event is not bolt\'s')
})

t.test('a waiting answer ends at once, and cleanly, when the door closes', async t => {
  const epx = await open(t)
  const acme = await company(epx, 'acme', [siteId(1)])
  const { suivant } = (await acme.feed()).json()
  const waiting = acme.feed({ apres: suivant, attente: '30' })
  await new Promise(resolve => setTimeout(resolve, 300))
  const started = performance.now()
  // The plugin's close, not the harness's: that one waits for its client's requests first.
  await epx.handle.close()
  const res = await waiting
  t.equal(res.status, 200)
  t.same(res.json(), { evenements: [], suivant })
  t.ok(performance.now() - started < 25_000, 'the close did not wait for the 30 s')
})

t.test('a cursor before the oldest event kept: 410 CURSOR_EXPIRED with the oldest id and where to go on', async t => {
  const epx = await open(t)
  const acme = await company(epx, 'acme', [siteId(1)])
  await epx.handle.publish({ targetDate: DAY })
  await epx.handle.publish({ targetDate: DAY })
  const ids = (await acme.feed()).json().evenements.map((e: any) => e.id)
  t.equal(ids.length, 3)
  // Retention as the leader runs it, 8 days on; what it kept is then written again, newer.
  const events = openEvents(epx.store, { retentionDays: 7 })
  const later = epx.clock.now().getTime() + 8 * 86_400_000
  t.equal(await events.prune(later), 3)
  await epx.store.writeDurable(() => events.appendSync([{ companyId: 'acme', type: 'realise.modifie', fields: `"site_id":"${siteId(1)}","target_date":"${DAY}"` }], later))
  const expired = await acme.feed({ apres: ids[0] })
  t.equal(expired.status, 410)
  t.equal(expired.headers['content-type'], 'application/problem+json')
  const problem = expired.json()
  t.match(problem, { status: 410, code: 'CURSOR_EXPIRED', oldest_id: eventId(4), suivant: ids[2], type: /\/errors\/cursor-expired$/ })
  t.match(problem.detail, /read the state again/)
  const resumed = (await acme.feed({ apres: problem.suivant })).json()
  t.same(resumed.evenements.map((e: any) => e.id), [eventId(4)])
  t.equal((await acme.feed({ apres: ids[2] })).status, 200, 'the last id retention removed is still a cursor: nothing was missed after it')
})

t.test('a wait longer than api.requestTimeoutMs is not cut: the request was whole before it waited', async t => {
  const epx = await startEpx(t, { config: { api: { requestTimeoutMs: 500, headersTimeoutMs: 500 } } })
  const acme = await company(epx, 'acme', [siteId(1)])
  const { suivant } = (await acme.feed()).json()
  const started = performance.now()
  const res = await acme.feed({ apres: suivant, attente: '2' })
  t.equal(res.status, 200)
  t.same(res.json(), { evenements: [], suivant })
  t.ok(performance.now() - started >= 1900, 'it waited its 2 s')
})
