/**
 * The shape every `epx` command shares: where it writes, which data folder it works
 * on, and the command record the dispatcher in `main.ts` registers.
 * @module
 */

/** Output of a command, one line at a time; `dataDir` is absolute (`--data`, default `./var/epx`). */
export interface CliIo {
  out(line: string): void
  err(line: string): void
  dataDir: string
}

/** A top-level command (`epx <name> ...`); `run` resolves to the process exit code. */
export interface Command {
  name: string
  summary: string
  run(argv: string[], io: CliIo): Promise<number>
}

/**
 * A line writer on one of the process's streams (made once per stream). A reader gone
 * away (`epx store copy | head`, `| grep -q`) is no failure of the command: what it did
 * stands and it ends with its own exit code, its remaining output dropped, where an
 * unhandled EPIPE would end the process on the next tick, with a stack, whatever the
 * command was doing.
 */
export function processLines (stream: 'stdout' | 'stderr'): (line: string) => void {
  return (writers[stream] ??= lineWriter(process[stream]))
}

const writers: Partial<Record<'stdout' | 'stderr', (line: string) => void>> = {}

function lineWriter (stream: NodeJS.WriteStream): (line: string) => void {
  let gone = false
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') { gone = true; return }
    if (!gone) throw err   // not a closed reader: as if there were no listener
  })
  return line => { if (!gone && !stream.destroyed) stream.write(line + '\n') }
}

/** The data folder when `--data` is not given, relative to the working directory. */
export const DEFAULT_DATA_DIR = './var/epx'
