/**
 * `node --import=tsx test/campaign/restart-time.ts [--faults N] [--clients N] [--console]`: how long
 * the door takes to answer again after a fault of its thread, alone, away from the
 * campaign's other rows. The built daemon (as `npm run campaign`'s inspector row runs
 * it), an exception thrown on the door's event loop through its inspector N times, with
 * and without the standby door (`api.standbyWorker`): p50 / p95 / max from the fault to
 * a GET answered on a new connection, the count within a second, the daemon's resident
 * memory before the first fault and after the last, and the machine's load average, which every figure
 * depends on (2 cores shared: a busy machine starves a thread at nice 10).
 * @module
 */
import { parseArgs } from 'node:util'
import { buildHost, removeTempDirs } from './daemon.ts'
import { inspectorFaults } from './inspector.ts'
import { DOOR_BACK_MS, loadText, restartTimes } from './door-faults.ts'

const { values: args } = parseArgs({ options: { faults: { type: 'string', default: '20' }, clients: { type: 'string', default: '1' }, console: { type: 'boolean', default: false } } })
const faults = Number(args.faults)
const clients = Number(args.clients)

async function main (): Promise<void> {
  buildHost()
  for (const standbyWorker of [true, false]) {
    const r = await inspectorFaults({ faults, clients, config: { api: { standbyWorker }, ...(args.console ? { console: { enabled: true, host: '127.0.0.1', port: 0 } } : {}) } })
    const within = r.backMs.filter(ms => ms < DOOR_BACK_MS).length
    console.log(`standby ${standbyWorker ? 'on ' : 'off'}${args.console ? ', console on' : ''}: ${r.injected} faults, back within ${DOOR_BACK_MS} ms ${within}/${r.backMs.length}, ` +
      `back after (ms, p50 / p95 / max) ${restartTimes(r.backMs)}; daemon RSS ${Math.round(r.rssKb / 1024)} MB before, ${Math.round(r.rssAfterKb / 1024)} MB after; ` +
      `alive ${r.alive ? 'yes' : 'NO'}, 202s lost ${r.lost} of ${r.acks}; load ${loadText(r.load.start)} → ${loadText(r.load.end)}`)
    console.log(`  (${r.backMs.join(', ')})`)
  }
}

main().catch(err => { console.error(err); process.exitCode = 1 }).finally(() => removeTempDirs())
