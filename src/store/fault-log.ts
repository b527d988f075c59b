/**
 * Store faults in epx's own log: one `error` line when durable
 * writes start failing (with the cause lmdb-js gave), none for the failures that follow
 * (every one of them is already a 503 request line), and one `info` line at the next
 * write that succeeds. A disk that fills up for an hour is two lines, not thousands.
 *
 * lmdb-js also prints a failed commit's native error with `console.error` on its write
 * path (node_modules/lmdb/write.js, the `env.startWriting` callback), before it rejects
 * the commit's promises; it has no option to stop that. `muteLmdbWriteErrors` hides
 * those prints, and only those, while an epx store is open: the line below reports
 * the same error, once, through the host's logger.
 * @module
 */
import type { Logger } from '../host/contract.ts'

export interface FaultLog {
  /** A durable write was refused (NO_STORE); `err` is what `writeDurable` rejected with. */
  failed(err: unknown): void
  /** A durable write is on disk. */
  succeeded(): void
}

/** The error lmdb-js reported under our NO_STORE: a failed commit hands it over as `commitError`. */
async function causeOf (err: unknown): Promise<unknown> {
  const cause = (err as { cause?: unknown } | undefined)?.cause ?? err
  const commitError = (cause as { commitError?: Promise<unknown> } | undefined)?.commitError
  if (commitError && typeof commitError.then === 'function') {
    try { await commitError } catch (native) { return native }
  }
  return cause
}

function describe (cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code
    return code === undefined ? cause.message : `${cause.message} (code ${String(code)})`
  }
  return cause === undefined ? 'the store is unavailable' : String(cause)
}

const LMDB_FAILING = 'store writes are failing (disk full or I/O error?): every write answers 503 NO_STORE until one succeeds; ' +
  'free disk space or fix the device: epx recovers by itself'

/** What an episode's two lines say, and the name under which the recovery line counts failures. */
export interface FaultLines { readonly failing: string; readonly recovered: string; readonly counted: string }

const LMDB_LINES: FaultLines = { failing: LMDB_FAILING, recovered: 'store writes succeed again', counted: 'failedWrites' }

/** `lines`: default LMDB's, about the disk and its writes. */
export function createFaultLog (path: string, log: Logger | undefined, now: () => number = Date.now, onFailed?: () => void, lines: FaultLines = LMDB_LINES): FaultLog {
  const { failing, recovered, counted } = lines
  let episode: { since: number; failures: number } | undefined
  return {
    failed (err) {
      onFailed?.()   // every failure (the metrics), not once per episode
      if (episode) { episode.failures++; return }
      episode = { since: now(), failures: 1 }
      if (!log) return
      void causeOf(err).then(cause => {
        log.error({ path, cause: describe(cause), err: cause instanceof Error ? cause : undefined }, failing)
      })
    },
    succeeded () {
      if (!episode) return
      const { since, failures } = episode
      episode = undefined
      log?.info({ path, [counted]: failures, faultMs: now() - since }, recovered)
    },
  }
}

/** An lmdb-js write-path print: an Error whose first stack frame is in lmdb's write.js. */
function fromLmdbWritePath (err: Error): boolean {
  const frame = (err.stack ?? '').split('\n').find(line => /^\s+at /.test(line))
  return frame !== undefined && /[\\/]lmdb[\\/](?:write\.js|dist[\\/]index\.cjs):\d+/.test(frame)
}

let mute: { original: typeof console.error; filter: typeof console.error; users: number } | undefined

/**
 * Hides lmdb-js's write-path `console.error(error)` prints until the returned release
 * function has been called as many times as this was. Everything else printed with
 * `console.error` goes through untouched; if the host replaced `console.error` after
 * us, releasing leaves its replacement in place.
 */
export function muteLmdbWriteErrors (): () => void {
  if (!mute) {
    const original = console.error
    const filter = function (this: unknown, ...args: unknown[]): void {
      const [first] = args
      if (args.length === 1 && first instanceof Error && fromLmdbWritePath(first)) return
      original.apply(this ?? console, args)
    }
    console.error = filter
    mute = { original, filter, users: 0 }
  }
  mute.users++
  let released = false
  return () => {
    if (released || !mute) return
    released = true
    if (--mute.users > 0) return
    if (console.error === mute.filter) console.error = mute.original
    mute = undefined
  }
}
