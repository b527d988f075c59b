// The `npm test` slice of the campaign's kill -9 row (test/campaign/kill-loop.ts; the full
// run, `npm run campaign`, does 500 cycles). DECISIONS.md "Inbound": 202 means "it survives
// a crash", and a programme is stored with all its sites or none.
import t from 'tap'
import { buildHost, removeTempDirs } from './daemon.ts'
import { killLoop } from './kill-loop.ts'

t.before(() => buildHost({ plugin: false }))   // .taprc's `before:` has just built dist/
t.teardown(removeTempDirs)

t.test('kill -9 during concurrent multi-site POSTs: every 202 is found whole after restart, nothing is stored in part', async t => {
  // Two kills within a quarter second of the daemon being ready, while the first POSTs are
  // in flight; one after 1–2 s, so that some programmes are surely answered 202 before a
  // kill even on a loaded machine (on one, no POST was answered within 250 ms in 10 cycles).
  // Three in all: each restarts the daemon (~2 s of CPU with its check), and the 500 of
  // `npm run campaign` (`-- --only kill --cycles N` for another count) are the proof.
  const early = await killLoop({ cycles: 2, killAfterMs: [20, 250], budgetMs: 100_000 })
  const late = await killLoop({ cycles: 1, killAfterMs: [1000, 2000], budgetMs: 100_000 })
  const r = { cycles: early.cycles + late.cycles, acked: early.acked + late.acked, sent: early.sent + late.sent }
  t.equal(r.cycles, 3, 'three kill -9 cycles ran')
  t.ok(r.acked > 0, `some programmes were answered 202 before a kill (${r.acked} of ${r.sent})`)
  for (const x of [early, late]) {
    t.equal(x.lost, 0, `no acknowledged programme lost${x.firstProblem ? `: ${x.firstProblem}` : ''}`)
    t.equal(x.partial, 0, 'no programme stored in part')
  }
})
