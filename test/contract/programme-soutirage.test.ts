import t from 'tap'
import { compileProgrammeValidator } from '../../src/contract/compiled.ts'
import type { ProgrammeSoutirage, SlotProgramme } from '../../src/contract/programme-soutirage.ts'
import { programme } from '../helpers/programme.ts'

// The type is derived from the schema (json-schema-to-ts, as EpxConfig is): what the
// schema requires the type requires, and `npm run typecheck` refuses what the schema
// refuses (the @ts-expect-error lines fail the typecheck if the type ever lets them by).
t.test('ProgrammeSoutirage is the schema\'s type: a valid programme is one, a wrong version or a short slot is not', async t => {
  const validate = compileProgrammeValidator({ maxSites: 10 })
  const result = validate(programme({ slots: 1 }), { allowed: () => true, requireContiguous: false })
  t.ok(result.ok, 'the schema takes it')
  const p: ProgrammeSoutirage | undefined = result.ok ? result.programme : undefined
  const version: 'v0.2' | undefined = p?.schema_version
  t.equal(version, 'v0.2')
  const slot: SlotProgramme | undefined = p?.sites[0]?.energie_programmee[0]
  t.equal(slot?.energie_kwh, 2.5)

  // @ts-expect-error the schema's only version is v0.2
  const wrongVersion: ProgrammeSoutirage['schema_version'] = 'v0.3'
  // @ts-expect-error a slot needs its end and its energy
  const shortSlot: SlotProgramme = { debut_utc: '2026-11-21T23:00:00Z' }
  t.ok(wrongVersion && shortSlot)
})
