/**
 * How ajv reads the Programme_Soutirage schema, in one place for its two compilations:
 * at build time for the default site limit (scripts/build.mjs writes ajv's standalone code
 * to src/generated/programme-validator.js), and at activation for any other limit.
 * A thread that serves the default (the door's worker, the parsing worker, the BSP kit)
 * loads no ajv: loading it and compiling the schema and its meta-schema were ~90 ms of the
 * ~270 ms of CPU a door thread's start cost (the suite starts one per activation).
 * @module
 */
import type { Ajv } from 'ajv'
import { programmeFormats, programmeSoutirageSchema } from './programme-soutirage.ts'

/** `inbound.maxSites`'s default (src/config-schema.ts says it again, without imports; test/contract/programme-soutirage.test.ts holds them equal). */
export const DEFAULT_MAX_SITES = 5000

/** verbose: failing errors carry their schema, where the `fix` message is. */
export const programmeAjvOptions = { allErrors: true, strict: true, verbose: true } as const

/** The schema as the default limit has it: what the build compiles. */
export const defaultProgrammeSchema = programmeSoutirageSchema({ maxSites: DEFAULT_MAX_SITES })

/** The keyword and the formats the schema names, on an ajv instance. */
export function addProgrammeVocabulary (ajv: Ajv): void {
  ajv.addKeyword({ keyword: 'fix', schemaType: ['string', 'object'] })
  for (const [name, f] of Object.entries(programmeFormats)) ajv.addFormat(name, { type: 'string', validate: f.validate })
}
