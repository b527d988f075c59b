// The `npm test` slice of the campaign's kill -9 row (bench/campaign/kill-loop.ts; the full
// run, `npm run campaign`, does 500 cycles). DECISIONS.md "Inbound": 202 means "it survives
// a crash", and a programme is stored with all its sites or none.
import t from 'tap'
import { buildHost, removeTempDirs } from '../../bench/campaign/daemon.ts'
import { killLoop } from '../../bench/campaign/kill-loop.ts'

t.before(() => buildHost({ plugin: false }))   // .taprc's `before:` has just built dist/
t.teardown(removeTempDirs)

t.test('kill -9 during concurrent multi-site POSTs: every 202 is found whole after restart, nothing is stored in part', async t => {
  const r = await killLoop({ cycles: 10, killAfterMs: [20, 250], budgetMs: 100_000 })
  t.equal(r.cycles, 10, 'ten kill -9 cycles ran')
  t.ok(r.acked > 0, `some programmes were answered 202 before a kill (${r.acked} of ${r.sent})`)
  t.equal(r.lost, 0, `no acknowledged programme lost${r.firstProblem ? `: ${r.firstProblem}` : ''}`)
  t.equal(r.partial, 0, 'no programme stored in part')
})
