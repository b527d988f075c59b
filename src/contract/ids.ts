/**
 * Identifiers on the wire: PRM site ids and derived instruction ids (DECISIONS.md "Inbound").
 * @module
 */
import { basicUtc, type Instant } from './instants.ts'

/** A site id: `PRM` followed by 14 digits. */
export const PRM_PATTERN = '^PRM[0-9]{14}$'
const PRM = new RegExp(PRM_PATTERN)

export function isPrm (text: unknown): text is string {
  return typeof text === 'string' && PRM.test(text)
}

/**
 * `ProgrammeSoutirage-<target_date>-rev-<B(emitted_at)>`, the fraction of a second at
 * the precision sent (`.sss`, `.ssssss` or `.sssssssss`): two spellings of the same
 * instant give the same id because B works on the parsed instant; two instants never do.
 */
export function deriveInstructionId (targetDate: string, emittedAt: Instant): string {
  return instructionIdPrefix(targetDate) + basicUtc(emittedAt.ms, emittedAt.nanos)
}

/** What every instruction id of a target date starts with: a day's ids are one key range. */
export function instructionIdPrefix (targetDate: string): string {
  return `ProgrammeSoutirage-${targetDate}-rev-`
}

const INSTRUCTION_ID = /^ProgrammeSoutirage-(\d{4}-\d{2}-\d{2})-rev-\d{8}T\d{6}(?:\.\d{3}|\.\d{6}|\.\d{9})?Z$/

/** The target date an instruction id names, or undefined when `text` is not an instruction id. */
export function targetDateOfInstructionId (text: string): string | undefined {
  return INSTRUCTION_ID.exec(text)?.[1]
}
