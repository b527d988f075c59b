/**
 * The parsing worker: runs `check-programme.ts` for big bodies off the solver's thread
 * (no event-loop stall over 50 ms while a 1,000-site programme arrives, bench/README.md#targets).
 * The batch goes back by transfer of its buffers, not as an object graph.
 * @module
 */
import { parentPort, workerData } from 'node:worker_threads'
import { batchTransferList } from './to-instructions.ts'
import { createProgrammeCheck, type CheckContext, type CheckOptions } from './check-programme.ts'
import { nameThisThread } from '../os-thread.ts'

nameThisThread('epx-programme')

/** A job: the body (transferred) and what the check needs of the request. */
export interface CheckJob {
  readonly id: number
  readonly bytes: Uint8Array
  readonly ctx: CheckContext
}

const check = createProgrammeCheck(workerData as CheckOptions)

parentPort!.on('message', (job: CheckJob) => {
  try {
    const result = check(job.bytes, job.ctx)
    parentPort!.postMessage({ id: job.id, result }, result.ok ? batchTransferList(result.batch) : [])
  } catch (err) {
    parentPort!.postMessage({ id: job.id, crash: (err as Error)?.stack ?? String(err) })
  }
})
