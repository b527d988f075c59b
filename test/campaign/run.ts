/**
 * `npm run campaign [-- --quick]`: the project's own fault campaign (docs/development.md "Fault
 * campaign"), rows run one after another against the built plugin in child processes:
 * kill -9 loop, the door's thread dying under load (in process, and in the daemon through its
 * inspector), fast-check fuzz of POST bodies, mTLS
 * matrix, damaged store, disk full, soak, the PostgreSQL replicas' property, and the long
 * system tests at full size (`EPX_LONG=1`, system.ts; `--quick` leaves that row out unless
 * `--only` names it, and then runs the files at `npm test`'s size).
 * Prints one table; a full run writes every figure to test/campaign/results.json
 * (`--quick`, `--only` and the counts options leave it as it was).
 * Exit 0 when every row is met, 1 otherwise (a missed row is a broken promise, not a figure).
 * Options: --quick, --only kill,faults,inspector,fuzz,mtls,damaged,disk,soak,replica,system, --cycles N, --faults N, --requests N,
 * --soak-seconds N, --steps N (the replica row's), --seed N (the fuzz and replica rows'), --door worker|main (the kill row's API door: in its worker
 * thread or on the host's; default: the plugin's, `api.inWorker`).
 * @module
 */
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { buildHost, removeTempDirs } from './daemon.ts'
import { killLoop, killLoopFigures } from './kill-loop.ts'
import { fuzz, fuzzFigures } from './fuzz.ts'
import { mtlsMatrix, mtlsFigures } from './mtls.ts'
import { damagedStores, damagedStoreFigures } from './damaged-store.ts'
import { diskFull, diskFullFigures } from './disk-full.ts'
import { soak, soakFigures } from './soak.ts'
import { doorFaults, doorFaultsFigures } from './door-faults.ts'
import { inspectorFaults, inspectorFaultsFigures } from './inspector.ts'
import { replicaFigures, replicaProperty } from './replica.ts'
import { systemFigures, systemTests } from './system.ts'
import { measureRow, printRows, rowMet, writeRows, type Row } from './report.ts'

const ROWS = ['kill', 'faults', 'inspector', 'fuzz', 'mtls', 'damaged', 'disk', 'soak', 'replica', 'system'] as const
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    cycles: { type: 'string' },
    faults: { type: 'string' },
    requests: { type: 'string' },
    'soak-seconds': { type: 'string' },
    steps: { type: 'string' },
    seed: { type: 'string' },
    door: { type: 'string' },
  },
})
const quick = args.quick!
if (args.door !== undefined && args.door !== 'worker' && args.door !== 'main') {
  console.error(`campaign: --door is worker or main, not ${args.door}`)
  process.exit(2)
}
/** The kill row's plugin configuration: the door where --door puts it, else the default. */
const doorConfig = args.door === undefined ? undefined : { api: { inWorker: args.door === 'worker' } }
const only = args.only?.split(',').map(x => x.trim()).filter(Boolean)
const unknown = only?.filter(x => !(ROWS as readonly string[]).includes(x)) ?? []
if (unknown.length) {
  console.error(`campaign: unknown row ${unknown.join(', ')} in --only; the rows are ${ROWS.join(', ')}`)
  process.exit(2)
}
const plan = {
  quick,
  rows: only ?? ROWS.filter(r => !quick || r !== 'system'),
  cycles: Number(args.cycles ?? (quick ? 20 : 500)),
  /** Faults of each kind, the door alone and with the console and the metrics listener. */
  faults: Number(args.faults ?? (quick ? 3 : 20)),
  requests: Number(args.requests ?? (quick ? 3000 : 100_000)),
  soakSeconds: Number(args['soak-seconds'] ?? (quick ? 5 : 180)),
  /** The replica property's steps (npm test runs 120). */
  replicaSteps: Number(args.steps ?? (quick ? 300 : 3000)),
  soakWarmupSeconds: quick ? 2 : 20,
  // A short soak's start figure still holds warm-up transients: a looser bound (see soak.ts).
  soakBoundPct: quick ? 25 : 10,
  seed: args.seed === undefined ? undefined : Number(args.seed),
}
// Full counts: the figures stand behind the README's promises and go to the results file
// (with --only, just those rows are replaced there; the others keep their last full run).
// The kill row's name says where its door ran when --door says so (both are evidence).
const fullCounts = !quick && !args.cycles && !args.faults && !args.requests && !args['soak-seconds'] && !args.steps
const minutes = (n: number) => n * 60_000

// Never hang: every row is bounded, and so is the whole run.
const watchdog = setTimeout(() => { console.error('campaign: watchdog expired'); process.exit(1) }, quick ? minutes(20) : minutes(140))
watchdog.unref()

async function main (): Promise<number> {
  buildHost()
  const rows: Row[] = []
  const want = (r: string) => plan.rows.includes(r)
  const progress = (id: string, r: Row) => { rows.push({ ...r, id }); process.stderr.write(`  ${r.name}: ${rowMet(r) ? 'met' : 'MISSED'} (${(r.wallMs / 1000).toFixed(0)} s)\n`) }
  if (want('kill')) {
    progress('kill', await measureRow(`kill -9 loop (${plan.cycles} cycles${args.door ? `, door: ${args.door}` : ''})`,
      () => killLoop({ cycles: plan.cycles, budgetMs: quick ? minutes(3) : minutes(40), config: doorConfig }), r => killLoopFigures(r, plan.cycles)))
  }
  if (want('faults')) {
    progress('faults', await measureRow(`the door's thread dies under load (${plan.faults} faults of each kind)`,
      () => doorFaults({ faults: plan.faults, budgetMs: quick ? minutes(5) : minutes(40) }), doorFaultsFigures))
  }
  if (want('inspector')) {
    progress('inspector', await measureRow(`exceptions thrown in the daemon's door from its inspector (${plan.faults})`,
      () => inspectorFaults({ faults: plan.faults }), inspectorFaultsFigures))
  }
  if (want('fuzz')) {
    progress('fuzz', await measureRow(`fuzz of POST bodies (${plan.requests.toLocaleString('en')} requests)`,
      () => fuzz({ requests: plan.requests, seed: plan.seed, budgetMs: quick ? minutes(3) : minutes(40) }), r => fuzzFigures(r, plan.requests)))
  }
  if (want('mtls')) progress('mtls', await measureRow('mTLS matrix', mtlsMatrix, mtlsFigures))
  if (want('damaged')) progress('damaged', await measureRow('damaged store file, host alive', damagedStores, damagedStoreFigures))
  if (want('disk')) progress('disk', await measureRow('disk full, host alive', diskFull, diskFullFigures))
  if (want('soak')) {
    progress('soak', await measureRow(`soak (${plan.soakSeconds} s)`,
      () => soak({ warmupMs: plan.soakWarmupSeconds * 1000, durationMs: plan.soakSeconds * 1000, boundPct: plan.soakBoundPct }), soakFigures))
  }
  if (want('replica')) {
    progress('replica', await measureRow(`PostgreSQL replicas under cuts, restarts, kills and reloads (${plan.replicaSteps} steps)`,
      () => replicaProperty({ steps: plan.replicaSteps, seed: plan.seed, budgetMs: quick ? minutes(3) : minutes(30) }), r => replicaFigures(r, plan.replicaSteps)))
  }
  if (want('system')) {
    progress('system', await measureRow(`the long system tests${quick ? " at npm test's size" : ' at full size (EPX_LONG=1)'}`,
      () => systemTests({ long: !quick, budgetMs: quick ? minutes(10) : minutes(40) }), systemFigures))
  }
  printRows(rows)
  if (fullCounts) writeRows(fileURLToPath(new URL('results.json', import.meta.url)), rows, plan)
  else console.log('(not a full run: test/campaign/results.json left as it was)')
  return rows.every(rowMet) ? 0 : 1
}

main()
  .then(code => { process.exitCode = code })
  .catch(err => { console.error(`campaign: broken: ${(err as Error)?.stack ?? err}`); process.exitCode = 1 })
  .finally(() => {
    clearTimeout(watchdog)
    removeTempDirs()
  })
