import t from 'tap'
import { deriveInstructionId, isPrm } from '../../src/contract/ids.ts'
import { parseUtcInstant } from '../../src/contract/instants.ts'
import { createProgrammeCheck } from '../../src/http/check-programme.ts'
import { programme } from '../helpers/programme.ts'

const id = (emittedAt: string, targetDate = '2026-11-22') => deriveInstructionId(targetDate, parseUtcInstant(emittedAt)!)

t.test('an instant without milliseconds gives ProgrammeSoutirage-<date>-rev-YYYYMMDDTHHMMSSZ', async t => {
  t.equal(id('2026-11-21T12:30:00Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000Z')
})

t.test('non-zero milliseconds follow the seconds as .sss', async t => {
  t.equal(id('2026-11-21T12:30:00.250Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.250Z')
  t.equal(id('2026-11-21T12:30:00.007Z'), 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.007Z')
})

t.test('two spellings of the same instant give the same id', async t => {
  t.equal(id('2026-11-21T12:30:00.000Z'), id('2026-11-21T12:30:00Z'))
  t.equal(id('2026-11-21T12:30:00.25Z'), id('2026-11-21T12:30:00.250Z'))
  t.equal(id('2026-11-21T12:30:00.250000Z'), id('2026-11-21T12:30:00.250Z'))
})

t.test('the id of a received programme is derived from its target_date and emitted_at, never supplied', async t => {
  const check = createProgrammeCheck({ maxSites: 10, requireContiguous: false })
  const body = { ...programme({ slots: 1, emittedAt: '2026-11-21T12:30:00.5Z' }), instruction_id: 'mine' }
  const r = check(Buffer.from(JSON.stringify(body)), {
    perimeter: 'all', provenance: { receivedAt: '2026-11-21T12:31:00.000Z', companyId: 'a', tokenId: 't', certFingerprint256: 'F' },
  })
  t.ok(r.ok)
  if (r.ok) {
    t.equal(r.batch.instructionId, 'ProgrammeSoutirage-2026-11-22-rev-20261121T123000.500Z')
    t.equal(r.batch.emittedAt, '2026-11-21T12:30:00.500Z', 'emitted_at kept with its milliseconds')
  }
})

t.test('a site id is PRM followed by 14 digits', async t => {
  t.ok(isPrm('PRM30000000000001'))
  for (const bad of ['PRM_30000000000001', 'PRM3000000000001', 'XYZ30000000000001', 42]) t.notOk(isPrm(bad), String(bad))
})
