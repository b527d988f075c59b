import t from 'tap'
import { readFileSync } from 'node:fs'
import { judgeInterval, medianInterval } from '../../bench/report.ts'

// bench/README.md "Ratios judged on their interval": a target over rounds is met only when
// the whole interval of its median is under it, missed when all of it is over.

t.test('the interval of the median: min–max up to 8 rounds, with its coverage; narrower order statistics from 9', async t => {
  t.equal(medianInterval([]), undefined)
  t.match(medianInterval([1.3]), { lo: 1.3, hi: 1.3, coverage: 0, n: 1 })
  t.match(medianInterval([1.4, 1.1]), { lo: 1.1, hi: 1.4, coverage: 0.5, n: 2 })
  t.match(medianInterval([5, 1, 4, 2, 3]), { lo: 1, hi: 5, coverage: 1 - 2 / 32 })
  const nine = medianInterval([9, 1, 8, 2, 7, 3, 6, 4, 5])!
  t.match(nine, { lo: 2, hi: 8 }, 'from 9 rounds the 2nd smallest to the 2nd largest')
  t.ok(nine.coverage >= 0.95 && nine.coverage < 1)
  const twenty = medianInterval(Array.from({ length: 20 }, (_, i) => i + 1))!
  t.match(twenty, { lo: 6, hi: 15 }, '20 rounds: the 6th to the 15th')
  t.ok(twenty.coverage >= 0.95)
  t.match(medianInterval([1, NaN, 2]), { n: 2 }, 'a round that gave no figure is left out')
})

t.test('met only when the whole interval is under the limit, missed when all of it is over, else unresolved', async t => {
  t.same(judgeInterval(1.2, { lo: 1.0, hi: 1.19, coverage: 0.9, n: 5 }), { met: true })
  t.same(judgeInterval(1.2, { lo: 1.0, hi: 1.2, coverage: 0.9, n: 5 }), { met: true }, 'at the limit is under it')
  t.same(judgeInterval(1.2, { lo: 1.21, hi: 1.5, coverage: 0.9, n: 5 }), { met: false })
  t.same(judgeInterval(1.2, { lo: 1.1, hi: 1.3, coverage: 0.9, n: 5 }), { met: null, unresolved: true })
  t.same(judgeInterval(1.2, undefined), { met: null })
})

t.test('POST is judged against C (Fastify + one durable commit) and B; a scenario to narrow is named once', async t => {
  const { RATIO_TARGETS, scenariosToNarrow } = await import('../../bench/summary.ts')
  const of = (scenario: string) => RATIO_TARGETS.filter(x => x.scenario === scenario).map(x => `${x.base} ${x.limit}`)
  t.same(of('POST 1×96'), ['C 1', 'B 1'])
  t.same(of('POST 100×96'), ['C 1', 'B 1.15'])
  t.same(of('GET 200'), ['A 1.3', 'A 1.2'], 'the target, then the stretch')
  t.same(of('GET 304'), ['A 1.3', 'A 1.25'])
  const sample = (round: number, server: 'A' | 'B' | 'C' | 'E', cpu: number) => ({
    round, server, scenario: 'POST 1×96' as const, requests: 1, rps: 1, p50Ms: 1, p99Ms: 1, cpuPerReqUs: cpu,
    sysPerReqUs: 0, maxStallMs: 0, bytesPerResponse: 0, mainThreadPerReqUs: null, heapBytesPerReq: 0,
  })
  const wide = [sample(1, 'B', 100), sample(1, 'C', 100), sample(1, 'E', 100), sample(2, 'B', 100), sample(2, 'C', 100), sample(2, 'E', 200)]
  t.same(scenariosToNarrow(wide, ['POST 1×96']), ['POST 1×96'], 'wide against B and C: one more round of it, named once')
  const narrow = wide.map(s => s.server === 'E' ? { ...s, cpuPerReqUs: 100 } : s)
  t.same(scenariosToNarrow(narrow, ['POST 1×96']), [])
})

t.test("E-pg's cost counts the database's CPU; its ratios are printed with and without it, and its GETs judged against E's spread", async t => {
  const { costOf, ratios } = await import('../../bench/report.ts')
  const { targetsOf } = await import('../../bench/summary.ts')
  const sample = (round: number, server: 'B' | 'E' | 'E-pg', scenario: 'GET 200' | 'POST 1×96', cpu: number, db?: number) => ({
    round, server, scenario, requests: 1, rps: 1, p50Ms: 1, p99Ms: 1, cpuPerReqUs: cpu, ...(db === undefined ? {} : { dbCpuPerReqUs: db }),
    sysPerReqUs: 0, maxStallMs: 0, bytesPerResponse: 0, mainThreadPerReqUs: null, heapBytesPerReq: 0,
  })
  const samples = [
    sample(1, 'B', 'POST 1×96', 100), sample(1, 'E', 'POST 1×96', 200), sample(1, 'E-pg', 'POST 1×96', 300, 100),
    sample(1, 'E', 'GET 200', 60), sample(2, 'E', 'GET 200', 80), sample(1, 'E-pg', 'GET 200', 70, 5), sample(2, 'E-pg', 'GET 200', 74, 5),
  ]
  t.equal(costOf(samples[2]!), 400, 'the server and the database')
  t.equal(costOf(samples[2]!, false), 300)
  t.same(ratios(samples, 'POST 1×96', 'B', 'E-pg'), [4])
  t.same(ratios(samples, 'POST 1×96', 'E', 'E-pg'), [2])
  t.same(ratios(samples, 'POST 1×96', 'B', 'E-pg', false), [3], 'without the database')
  t.same(ratios(samples, 'POST 1×96', 'B'), [2], "E's as before")
  const input = { samples, status: { A: 'ok', B: 'ok', D: 'ok', C: 'ok', E: 'ok', 'E-pg': 'ok' }, failures: {}, plan: { quick: true }, documentBytes: 0, documentSource: '', targetDate: '' } as const
  const get = targetsOf(input).find(x => x.name.startsWith('GET 200: E-pg'))!
  t.match(get, { measured: 77, limit: 80, met: true }, "E-pg's median with the database's CPU, at most E's slowest round")
  const slower = targetsOf({ ...input, samples: samples.map(s => s.server === 'E-pg' ? { ...s, dbCpuPerReqUs: 20 } : s) }).find(x => x.name.startsWith('GET 200: E-pg'))!
  t.match(slower, { measured: 92, met: false })
})

t.test('latest.md: the committed page is what the writer makes of the committed latest.json', async t => {
  const { renderLatestMd } = await import('../../bench/latest-md.ts')
  const results = new URL('../../bench/results/', import.meta.url)
  const json = JSON.parse(readFileSync(new URL('latest.json', results), 'utf8'))
  const page = renderLatestMd(json)
  t.equal(readFileSync(new URL('latest.md', results), 'utf8'), page, 'regenerate it: node --import=tsx bench/latest-md.ts')
  const rows = page.split('\n').filter(l => l.startsWith('| ') && !l.startsWith('| Target'))
  for (const target of json.targets) {
    t.ok(rows.some(r => r.startsWith(`| ${target.name.replace(/\|/g, '\\|')} |`) && r.includes(`| ${target.verdict} |`)), `${target.name}: a row, ${target.verdict}`)
  }
  t.match(page, json.machine.node, 'the machine')
  t.match(page, json.machine.date.slice(0, 10), 'the date')
})

t.test('latest.md: each figure with its spread, the interval a verdict rests on, what was not measured and why', async t => {
  const { renderLatestMd } = await import('../../bench/latest-md.ts')
  const sample = (round: number, server: 'A' | 'E', cpu: number, door?: number) => ({
    round, server, scenario: 'GET 304' as const, requests: 1, rps: 1, p50Ms: 1, p99Ms: 1, cpuPerReqUs: cpu, sysPerReqUs: 0, maxStallMs: 0,
    bytesPerResponse: 0, mainThreadPerReqUs: null, heapBytesPerReq: 0, ...(door === undefined ? {} : { threadPerReqUs: { 'epx-door': door, main: 4, other: 2 } }),
  })
  const page = renderLatestMd({
    machine: { node: 'v20.20.2', platform: 'linux x64', cpu: 'AMD EPYC', cores: 2, date: '2026-11-26T11:41:20.244Z' },
    plan: { quick: false, argv: ['--only', 'GET 304,host', '--servers', 'A,E'], roundsRun: 3, clientNice: 10, roundsLoadAvg: { start: 0.55, end: 2.12 } },
    servers: { A: 'ok', E: 'ok', 'E-pg': 'left out (--servers)' },
    scenarios: {
      'GET 200': { servers: {} },
      'GET 304': { servers: { A: { cpuPerReqUs: { median: 30, min: 24, max: 37, n: 3 } }, E: { cpuPerReqUs: { median: 1234.4, min: 1200, max: 1300, n: 3 } } } },
    },
    samples: [sample(1, 'A', 30), sample(1, 'E', 40, 30), sample(2, 'E', 45, 36), sample(3, 'E', 43, 31)],
    targets: [
      { name: 'GET 304: CPU/request E ÷ A', target: '≤ 1.3 × A', measured: 1.5103, unit: '×', verdict: 'unresolved', interval: { lo: 1.1429, hi: 1.8131, coverage: 0.9921875, n: 8 } },
      { name: 'Loop delay: E max', target: '≤ 10 ms', measured: 8.99, unit: 'ms', verdict: 'met', note: 'A | 21.3 ms' },
      { name: 'RSS', target: '≤ 150 MB', measured: null, unit: 'MB', verdict: 'not measured', note: 'E unavailable or --no-special' },
    ],
  })
  t.match(page, '- Run: `npm run bench -- --only "GET 304,host" --servers A,E`, finished 2026-11-26 11:41 UTC', 'the command, quoted as typed, and when')
  t.match(page, '- Machine: AMD EPYC × 2, linux x64, Node v20.20.2')
  t.match(page, '- Rounds: 3, the load client at nice 10; load average 0.6 at their start, 2.1 at their end')
  t.match(page, '- Not run: E-pg left out (--servers)')
  t.match(page, '| GET 304: CPU/request E ÷ A | ≤ 1.3 × A | 1.51 × | [1.14–1.81], 99 %, 8 rounds | unresolved |  |', 'the median and its interval')
  t.match(page, '| Loop delay: E max | ≤ 10 ms | 8.99 ms |  | met | A \\| 21.3 ms |', 'a single figure, to two decimals near its limit; a pipe in a note does not split the row')
  t.match(page, '| RSS | ≤ 150 MB | – |  | not measured | E unavailable or --no-special |')
  t.match(page, '| Scenario | A | E |\n', 'only the servers that ran')
  t.match(page, '| GET 304 | 30 (24–37) | 1,234 (1,200–1,300) |', 'median (min–max)')
  t.notMatch(page, '| GET 200 |', 'a scenario left out has no row')
  t.match(page, '| GET 304 | 31 | 4.0 | 2.0 |', "E's threads, each the median of its rounds")
})

t.test('the webhook row fails on any event missing, repeated or out of order; a count that must be none is met at 0, missed by its count', async t => {
  const { faultsOf, webhookTargets } = await import('../../bench/webhooks.ts')
  const { verdict } = await import('../../bench/report.ts')
  const endpoint = (over: object = {}) => ({ received: 3, distinct: 3, repeated: 0, outOfOrder: 0, unexpected: 0, refused: 0, ...over })
  t.same(faultsOf([endpoint(), endpoint()], 3), { faults: 0 })
  const bad = faultsOf([endpoint(), endpoint({ received: 3, distinct: 2, repeated: 1, outOfOrder: 1 })], 3)
  t.equal(bad.faults, 3, 'one missing, one repeated, one out of order')
  t.match(bad.first, /^endpoint 2: 2 of 3 events, 1 repeated, 1 out of order/)
  const run = (faults: number) => ({
    loadAvg: 1, quiet: { p99Ms: 1, maxMs: 2 }, publication: { wallMs: 900, cpuMs: 1000, delay: { p99Ms: 20, maxMs: 30 }, failed: 0 },
    after: { wallMs: 5000, cpuMs: 4000, delay: { p99Ms: 2.5, maxMs: 8 } }, deliveredMs: 6000, cpuUsPerEvent: 400, rawCpuUsPerEvent: 500, faults, endpoints: [],
  })
  const row = (faults: number) => ({ sites: 30, endpoints: 10, perEndpoint: 3, latencyMs: 0, receiversNice: 10, baseline: [{ wallMs: 800, cpuMs: 900, delay: { p99Ms: 20, maxMs: 30 }, after: { p99Ms: 1, maxMs: 3 } }], registerMs: 1, runs: [run(0), run(faults)] })
  const [once, p99, max, wall] = webhookTargets(row(0))
  t.match(once, { measured: 0, met: true })
  t.equal(verdict(once!), 'met', 'no percentage of a zero limit')
  t.match(webhookTargets(row(2))[0], { measured: 2, met: false })
  t.equal(verdict(webhookTargets(row(2))[0]!), 'MISSED by 2 events')
  const { figure } = await import('../../bench/latest-md.ts')
  t.equal(`${figure(2, 'events')} events`, '2 events', 'a count, whole on the page')
  t.match(p99, { measured: 1.5, met: true }, 'after the publication, against the quiet probe just before')
  t.match(max, { measured: 8, met: true })
  t.match(wall, { measured: 900, met: true })
  t.match(webhookTargets(undefined)[0], { measured: null, note: 'left out (--special)' })
})

t.test("a loop-delay row says the load the server carried, how long the host's main thread ran and waited for a core, and the client's nice value", async t => {
  const { hostTargets, hostLines } = await import('../../bench/host-summary.ts')
  const main = (runMs: number, waitMs: number, runs: number) => ({ runMs, waitMs, runs })
  const probe = {
    clientNice: 10,
    loop: {
      E: {
        quiet: { p50Ms: 1, p99Ms: 1.1, maxMs: 1.5, n: 2800, main: main(12, 0.2, 2843) },
        'keep-alive GET 200': { p50Ms: 1, p99Ms: 4.1, maxMs: 8, n: 2700, main: main(21.3, 314.5, 2694), answersPerS: 9412.4 },
        // A system without the figures (not Linux): the note leaves them out.
        'new connections': { p50Ms: 1, p99Ms: 2.1, maxMs: 6, n: 3000 },
      },
    },
    mainThread: { 'GET 200': { logOn: [], logOff: [], rawLogOn: [], rawLogOff: [] }, 'POST 1×96': { logOn: [], logOff: [], rawLogOn: [], rawLogOff: [] } },
    idle: { logOn: [], logOff: [] },
    handshake: { fullUs: [], resumedUs: [], resumed: 0, offered: 0 },
    failures: {},
  }
  const rows = hostTargets(probe)
  const keepAlive = rows.find(r => r.name === 'Loop delay, keep-alive GET 200: E p99 − quiet p99')!
  t.equal(keepAlive.note, 'p99 4.1 ms, quiet 1.1 ms, 9,412 answers/s; the main thread ran 21 ms and waited 315 ms for a core (117 µs a run); A not measured; the client at nice 10')
  const newConnections = rows.find(r => r.name === 'Loop delay, new connections: E p99 − quiet p99')!.note
  t.notMatch(newConnections, 'waited')
  t.notMatch(newConnections, 'answers/s')
  t.match(hostLines(probe).join('\n'), 'its main thread ran / waited for a core, ms: quiet 12 / 0; new connections n/a; keep-alive GET 200 21 / 315')
  t.match(hostLines(probe)[0], 'the load client at nice 10')
})
