// How many inputs a solver gets for one programme: each site once per change, whichever
// door saved it (its worker thread or the solver's thread), whichever store holds it,
// whichever instance it was posted to (PostgreSQL: scripts/postgres-cluster.ts, a throwaway
// cluster; fails, never skips, without it). A save reaches its own instance's solver
// through its door's hand-over alone, the change feed reporting only the other instances'
// saves. The door on the solver's thread saves through
// the same store calls whichever store holds them: `npm test` runs it on LMDB and on one
// instance, EPX_LONG=1 (helpers/long.ts) on every store and with two instances too.
import t, { type Test } from 'tap'
import { join } from 'node:path'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId, type ProgrammeOptions } from '../helpers/programme.ts'
import { fileCluster, migratedDatabase, storeKinds } from '../helpers/store-kinds.ts'
import { until } from '../helpers/eventually.ts'
import { LONG } from '../helpers/long.ts'

/** Long enough for a change feed's notification and catch-up (milliseconds), not its 5 s poll. */
const FEED_SETTLES_MS = 600

const settle = () => new Promise(resolve => setTimeout(resolve, FEED_SETTLES_MS))

/** epx with the door where asked, on `store` (LMDB when undefined). */
const started = (t: Test, dir: string, inWorker: boolean, store?: Record<string, unknown>) =>
  startEpx(t, { dataDir: dir, config: { api: { inWorker }, ...(store ? { store } : {}) } })

/**
 * Posts `o` as company `acme` (added through `epx`) to `epx`, or to `to` (another instance
 * on the same database); resolves once the 202 is in.
 */
async function poster (epx: TestEpx) {
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  return async (o: ProgrammeOptions, to = epx) => {
    const res = await to.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme(o) })
    if (res.status !== 202) throw new Error(`${res.status} ${res.text}`)
  }
}

const fed = (epx: TestEpx) => epx.ref.pending().map(i => `${i.siteId} ${i.instructionId}`).sort()
const two = (emittedAt: string) => [1, 2].map(k => `${siteId(k)} ProgrammeSoutirage-2026-11-22-rev-${emittedAt}`)

for (const inWorker of [true, false]) {
  const door = inWorker ? 'the door in its worker' : 'the door on the solver\'s thread'

  for (const kind of storeKinds.filter(k => inWorker || LONG || k === 'lmdb')) {
    t.test(`${kind}, ${door}: a 2-site programme is 2 solver inputs; a re-send that changes it, 2 more; one that changes nothing, none`, async t => {
      const store = kind === 'postgres'
        ? { kind, postgres: { connectionString: fileCluster(t).url(await migratedDatabase(fileCluster(t))) } }
        : undefined
      const epx = await started(t, t.testdir(), inWorker, store)
      const post = await poster(epx)
      await post({ sites: 2 })
      await settle()
      t.same(fed(epx), two('20261121T120000Z'), 'each site once')
      await post({ sites: 2, kwh: () => 3 })
      await settle()
      t.equal(epx.ref.pending().length, 4, 'a re-send of the same instruction with other slots is handed again')
      t.same(epx.ref.pending().slice(2).map(i => i.periods[0]?.minKw), [12, 12], 'with its new slots')
      await post({ sites: 2, kwh: () => 3 })
      await settle()
      t.equal(epx.ref.pending().length, 4, 'the same re-sent again changes nothing the solver gets')
    })
  }

  if (storeKinds.includes('postgres') && (inWorker || LONG)) {
    t.test(`two instances on one database, ${door}: a 2-site programme posted to either is 2 inputs for A's solver and 2 for B's`, async t => {
      const cluster = fileCluster(t)
      const store = { kind: 'postgres', postgres: { connectionString: cluster.url(await migratedDatabase(cluster)) } }
      const dir = t.testdir()
      const a = await started(t, join(dir, 'a'), inWorker, store)
      const b = await started(t, join(dir, 'b'), inWorker, store)
      const post = await poster(a)
      await post({ sites: 2 })
      await until('B\'s solver fed', () => b.ref.pending().length >= 2, { ms: 5000 })
      await settle()
      t.same(fed(a), two('20261121T120000Z'), 'posted to A: A\'s solver, each site once (its door\'s hand-over)')
      t.same(fed(b), two('20261121T120000Z'), 'posted to A: B\'s solver, each site once (its change feed)')
      // The other way: a newer programme through B.
      await post({ sites: 2, emittedAt: '2026-11-21T12:10:00Z' }, b)
      await until('A\'s solver fed', () => a.ref.pending().length >= 4, { ms: 5000 })
      await settle()
      const both = [...two('20261121T120000Z'), ...two('20261121T121000Z')].sort()
      t.same(fed(b), both, 'posted to B: B\'s solver, each site once more')
      t.same(fed(a), both, 'posted to B: A\'s solver, each site once more')
    })
  }
}
