/**
 * A logger that keeps its lines, to assert what an operator reads.
 * @module
 */
import type { Logger } from '../../src/host/contract.ts'

export interface LoggedLine { readonly level: string; readonly obj: any; readonly msg?: string }

export function recordingLog (): { log: Logger; lines: LoggedLine[] } {
  const lines: LoggedLine[] = []
  const log: Logger = {
    debug: (obj, msg) => { lines.push({ level: 'debug', obj, msg }) },
    info: (obj, msg) => { lines.push({ level: 'info', obj, msg }) },
    warn: (obj, msg) => { lines.push({ level: 'warn', obj, msg }) },
    error: (obj, msg) => { lines.push({ level: 'error', obj, msg }) },
    child: () => log,
  }
  return { log, lines }
}
