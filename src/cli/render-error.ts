/**
 * The CLI door of the error catalogue, shared by `epx` and `epx-bsp`.
 * @module
 */
import { catalogue, isEpxError, type ErrorSpec } from '../errors.ts'

/** The CLI door of the catalogue: the message, and the exit code the catalogue gives the code. */
export function renderError (e: unknown, err: (line: string) => void): number {
  if (isEpxError(e)) {
    err(`epx: ${e.message}`)
    return (catalogue[e.code] as ErrorSpec).exit ?? 1
  }
  // Not in the catalogue: a bug or an environment failure; the stack helps to report it.
  err(`epx: unexpected error: ${(e as Error)?.stack ?? String(e)}`)
  return 1
}
