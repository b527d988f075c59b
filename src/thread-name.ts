/**
 * Names the calling thread for the operating system (Linux: `/proc/thread-self/comm`, 15
 * bytes at most), so that `top -H -p <pid>`, `ps -L` and `/proc/<pid>/task/*` tell epx's
 * worker threads (the API door, the programme parser) from the solver's own: every
 * thread of a Node process is otherwise called `node`. The bench reads these names to
 * split a request's CPU by thread (bench/servers/harness.ts). Elsewhere (no /proc), or
 * where the file cannot be written, the thread keeps its name: nothing depends on it.
 * @module
 */
import { writeFileSync } from 'node:fs'

export function nameThisThread (name: string): void {
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15))
  } catch {
    // Not Linux, or /proc is not mounted: a name is a convenience.
  }
}
