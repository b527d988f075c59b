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

/** Every instruction id's shape, as published (the receipt's and the status read's `instruction_id`). */
export const INSTRUCTION_ID_PATTERN = '^ProgrammeSoutirage-([0-9]{4}-[0-9]{2}-[0-9]{2})-rev-[0-9]{8}T[0-9]{6}(\\.[0-9]{3}|\\.[0-9]{6}|\\.[0-9]{9})?Z$'
const INSTRUCTION_ID = new RegExp(INSTRUCTION_ID_PATTERN)

/** The target date an instruction id names, or undefined when `text` is not an instruction id. */
export function targetDateOfInstructionId (text: string): string | undefined {
  return INSTRUCTION_ID.exec(text)?.[1]
}
