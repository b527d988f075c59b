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

/** The data folder when `--data` is not given, relative to the working directory. */
export const DEFAULT_DATA_DIR = './var/epx'
