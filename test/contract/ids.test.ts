import t from 'tap'
import { deriveInstructionId, instructionIdPrefix, isPrm, targetDateOfInstructionId } from '../../src/contract/ids.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import { programme } from '../helpers/programme.ts'

const check = createProgrammeCheck({ maxSites: 10, requireContiguous: false })
const provenance = { receivedAt: '2026-11-21T12:31:00.000Z', companyId: 'a', tokenId: 't', certFingerprint256: 'F' }

/** The batch the real check makes of a one-slot programme emitted at `emittedAt`. */
function received (emittedAt: string) {
  const r = check(Buffer.from(JSON.stringify(programme({ slots: 1, emittedAt }))), { perimeter: 'all', provenance })
  if (!r.ok) throw new Error(JSON.stringify(r.details))
  return r.batch
}
const id = (emittedAt: string) => received(emittedAt).instructionId

t.test('an instant without milliseconds gives ProgrammeSoutirage-<date>-rev-YYYYMMDDTHHMMSSZ', async t => {
  t.equal(id('2026-11-21T12:30:00Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000Z')
})

t.test('non-zero milliseconds follow the seconds as .sss', async t => {
  t.equal(id('2026-11-21T12:30:00.250Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.250Z')
  t.equal(id('2026-11-21T12:30:00.007Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.007Z')
})

t.test('a finer fraction follows the seconds in the shortest of .sss, .ssssss, .sssssssss that holds it exactly', async t => {
  t.equal(id('2026-11-21T12:30:00.123456Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.123456Z')
  t.equal(id('2026-11-21T12:30:00.123456789Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.123456789Z')
  t.equal(id('2026-11-21T12:30:00.0000001Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.000000100Z')
  t.equal(id('2026-11-21T12:30:00.12345Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.123450Z')
})

t.test('two different instants never share an id, even less than a millisecond apart', async t => {
  t.not(id('2026-11-21T12:30:00.123456Z'), id('2026-11-21T12:30:00.123457Z'))
  t.not(id('2026-11-21T12:30:00.123Z'), id('2026-11-21T12:30:00.123000001Z'))
  t.not(id('2026-11-21T12:30:00Z'), id('2026-11-21T12:30:00.000000001Z'))
})

t.test('an emitted_at in years 0000 to 0099 names its instruction in that year', async t => {
  t.equal(id('0000-01-01T00:00:00Z'), 'ProgrammeSoutirage-2026-11-22-rev-00000101T000000Z')
  t.equal(id('0050-06-15T12:00:00.5Z'), 'ProgrammeSoutirage-2026-11-22-rev-00500615T120000.500Z')
  t.equal(id('0099-12-31T23:59:59Z'), 'ProgrammeSoutirage-2026-11-22-rev-00991231T235959Z')
})

t.test('two spellings of the same instant give the same id', async t => {
  t.equal(id('2026-11-21T12:30:00.5Z'), id('2026-11-21T12:30:00.500Z'))
  t.equal(id('2026-11-21T12:30:00.5Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.500Z')
  t.equal(id('2026-11-21T12:30:00.123456Z'), id('2026-11-21T12:30:00.123456000Z'))
  t.equal(id('2026-11-21T12:30:00.000Z'), id('2026-11-21T12:30:00Z'))
  t.equal(id('2026-11-21T12:30:00.25Z'), id('2026-11-21T12:30:00.250Z'))
  t.equal(id('2026-11-21T12:30:00.250000Z'), id('2026-11-21T12:30:00.250Z'))
})

t.test('the id of a received programme is derived from its target_date and emitted_at, never supplied', async t => {
  const body = { ...programme({ slots: 1, emittedAt: '2026-11-21T12:30:00.5Z' }), instruction_id: 'mine' }
  const r = check(Buffer.from(JSON.stringify(body)), { perimeter: 'all', provenance })
  t.ok(r.ok)
  if (r.ok) {
    t.equal(r.batch.instructionId, 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.500Z')
    t.equal(r.batch.emittedAt, '2026-11-21T12:30:00.500Z', 'emitted_at kept with its milliseconds')
  }
})

t.test('the stored emitted_at is the canonical spelling at the precision sent', async t => {
  t.equal(received('2026-11-21T12:30:00.123456Z').emittedAt, '2026-11-21T12:30:00.123456Z')
  t.equal(received('2026-11-21T12:30:00.1234567Z').emittedAt, '2026-11-21T12:30:00.123456700Z')
  t.equal(received('2026-11-21T12:30:00.000Z').emittedAt, '2026-11-21T12:30:00Z')
  t.equal(received('2026-11-21T12:30:00.250000Z').emittedAt, '2026-11-21T12:30:00.250Z')
})

t.test('a site id is PRM followed by 14 digits', async t => {
  t.ok(isPrm('PRM30000000000001'))
  for (const bad of ['PRM_30000000000001', 'PRM3000000000001', 'XYZ30000000000001', 42]) t.notOk(isPrm(bad), String(bad))
})

t.test('an instruction id names its target date; other text names none', async t => {
  t.equal(targetDateOfInstructionId('ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z'), '2026-11-22')
  t.equal(targetDateOfInstructionId('ProgrammeSoutirage-2026-11-25-rev-20261121T120000.000001Z'), '2026-11-25')
  for (const bad of ['ProgrammeSoutirage-2026-11-22', 'x-2026-11-22-rev-20261121T110000Z', 'ProgrammeSoutirage-2026-11-22-rev-20261121T110000.12Z']) {
    t.equal(targetDateOfInstructionId(bad), undefined, bad)
  }
})

t.test('every id of a target date starts with instructionIdPrefix, and no other date\'s id does', async t => {
  const emitted = { ms: Date.parse('2026-11-21T12:30:00Z'), nanos: 0 }
  t.equal(instructionIdPrefix('2026-11-22'), 'ProgrammeSoutirage-2026-11-22-rev-')
  t.ok(deriveInstructionId('2026-11-22', emitted).startsWith(instructionIdPrefix('2026-11-22')))
  t.notOk(deriveInstructionId('2026-11-23', emitted).startsWith(instructionIdPrefix('2026-11-22')))
})
