/**
 * Identifiers on the wire: PRM site ids and derived instruction ids (DECISIONS.md "Inbound").
 * @module
 */
import { basicUtc } from './instants.ts'

/** A site id: `PRM` followed by 14 digits. */
export const PRM_PATTERN = '^PRM[0-9]{14}$'
const PRM = new RegExp(PRM_PATTERN)

export function isPrm (text: unknown): text is string {
  return typeof text === 'string' && PRM.test(text)
}

/**
 * `ProgrammeSoutirage-<target_date>-rev-<B(emitted_at)>`; two spellings of the same
 * instant give the same id because B works on the parsed instant.
 */
export function deriveInstructionId (targetDate: string, emittedAtMs: number): string {
  return `ProgrammeSoutirage-${targetDate}-rev-${basicUtc(emittedAtMs)}`
}
