/**
 * What the operating system knows of epx's worker threads (Linux, through /proc; elsewhere
 * nothing is done, and nothing depends on it):
 *
 * - a name (`/proc/thread-self/comm`, 15 bytes at most), so that `top -H -p <pid>`, `ps -L`
 *   and `/proc/<pid>/task/*` tell the API door and the programme parser from the solver's
 *   threads (every thread of a Node process is otherwise `node`); the bench reads these
 *   names to split a request's CPU by thread (bench/servers/harness.ts);
 * - a lower scheduling priority (`api.workerNice`): on Linux the nice value is a thread's
 *   own, so the door's thread can yield the CPU to the solver's when both want it, and a
 *   burst of BSP handshakes delays the solver's loop less (bench/README.md#the-doors-thread-at-nice-10-apiworkernice).
 *
 * Both worker threads use it, the API door's (door/) and the programme parser's (apply/),
 * so it stands below both (docs/architecture.md).
 * @module
 */
import { readFileSync, readlinkSync, writeFileSync } from 'node:fs'
import { getPriority, setPriority } from 'node:os'

export function nameThisThread (name: string): void {
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15))
  } catch {
    // Not Linux, or /proc is not mounted: a name is a convenience.
  }
}

/**
 * Makes the calling thread `by` nicer than it is (it inherited the solver's value; 19 at
 * most; a thread may lower its own priority without privileges). By its Linux thread id,
 * never `setPriority(0, …)`: on other systems that would renice the whole process, the
 * solver included. False where it could not be done.
 */
export function niceThisThread (by: number): boolean {
  if (by === 0) return true
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    if (!Number.isInteger(tid) || tid <= 0) return false
    setPriority(tid, Math.min(19, getPriority(tid) + by))
    return true
  } catch {
    return false
  }
}

/** Set on a thread that `nicerFirst` made nicer (`nicedFirst` reads it). */
const NICED = 'epx.niced'

/**
 * Code for the top of an `eval` worker: makes its thread `by` nicer (as niceThisThread)
 * before it loads any module, so that the whole of its start runs at that priority.
 */
export function nicerFirst (by: number): string {
  return `try { const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()); const os = require('node:os'); ` +
    `if (Number.isInteger(tid) && tid > 0) { os.setPriority(tid, Math.min(19, os.getPriority(tid) + ${Math.trunc(by)})); globalThis[Symbol.for('${NICED}')] = true } } catch {}\n`
}

/** Whether this thread was made nicer by `nicerFirst` (then it is not made nicer again). */
export function nicedFirst (): boolean {
  return (globalThis as Record<symbol, unknown>)[Symbol.for(NICED)] === true
}

/** The calling thread's Linux id; undefined elsewhere. */
export function thisThreadId (): number | undefined {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    return Number.isInteger(tid) && tid > 0 ? tid : undefined
  } catch {
    return undefined
  }
}

/** CPU time (ms, user and system) a thread of this process has used; undefined where it cannot be read. */
export function threadCpuMs (tid: number): number | undefined {
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(f[11]) + Number(f[12])) * 10   // clock ticks of 10 ms (USER_HZ 100)
  } catch {
    return undefined
  }
}
