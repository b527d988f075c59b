import t from 'tap'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { besoinsAgregesSchema } from '../../src/contract/besoins-agreges.ts'
import {
  besoinsAgregesJsonSchema, programmeSoutirageJsonSchema, receiptJsonSchema, toPortableSchema, JSON_SCHEMA_DIALECT,
} from '../../src/contract/published-schemas.ts'
import { programme } from '../helpers/programme.ts'

t.test('the published schemas are draft 2020-12, made from the objects the door uses', async t => {
  const b = besoinsAgregesJsonSchema()
  t.equal(b.$schema, JSON_SCHEMA_DIALECT)
  t.equal(b.$id, besoinsAgregesSchema.$id)
  t.same(Object.keys(b.properties as object), Object.keys(besoinsAgregesSchema.properties), 'the contract\'s field order')
  t.match((b.properties as any).emitted_at, { type: 'string', format: 'date-time', pattern: /Z\$$/ })
  t.match((b.properties as any).target_date, { format: 'date' })
  t.notOk(JSON.stringify(b).includes('unsafe'), 'no serializer-only format')

  const p = programmeSoutirageJsonSchema({ maxSites: 5000 })
  t.match((p.properties as any).emitted_at, { format: 'date-time', description: /ISO 8601 UTC/ })
  t.equal((p.properties as any).sites.maxItems, 5000)
  t.notOk(JSON.stringify(p).includes('"fix"'), 'fix messages became descriptions')
  t.equal((p.properties as any).sites.description, 'must be a non-empty array of sites')
  // The contract's three fields, and the extension `status` (DECISIONS.md "Inbound").
  t.same((receiptJsonSchema() as any).properties.instructions.items.required, ['instruction_id', 'site_id', 'periods_count', 'status'])
})

t.test('a BSP\'s validator accepts what epx accepts, field by field', async t => {
  const ajv = new Ajv2020({ strict: true, validateFormats: false })
  const validate = ajv.compile(programmeSoutirageJsonSchema({ maxSites: 10 }))
  t.ok(validate(programme({ sites: 2 })), ajv.errorsText(validate.errors))
  t.notOk(validate({ ...programme(), schema_version: 'v0.1' }))
})

t.test('unknown formats and plain values pass through', async t => {
  t.same(toPortableSchema({ type: 'string', format: 'email', fix: { '*': 'x' } }), { type: 'string', format: 'email', description: 'x' })
  t.same(toPortableSchema({ type: 'string', format: 'unsafe' }), { type: 'string' })
  t.same(toPortableSchema([1, 'a', null]), [1, 'a', null])
})

t.test('the published instant and date patterns accept what the contract\'s readers accept, and refuse offsets', async t => {
  const { readUtcInstant, UTC_INSTANT_PATTERN } = await import('../../src/contract/instants.ts')
  const { isCalendarDate, DATE_PATTERN } = await import('../../src/contract/paris-day.ts')
  const instant = new RegExp(UTC_INSTANT_PATTERN)
  for (const s of ['2026-11-21T23:15:00Z', '2026-11-21T23:15:00.1Z', '2026-11-21T23:15:00.123456789Z', '0000-01-01T00:00:00Z']) {
    t.ok(typeof readUtcInstant(s) !== 'string' && instant.test(s), `${s}: read and matched`)
  }
  for (const s of ['2026-11-21T23:15:00+01:00', '2026-11-21T23:15Z', '2026-11-21 23:15:00Z', '2026-11-21T23:15:00.1234567890Z']) {
    t.ok(typeof readUtcInstant(s) === 'string' && !instant.test(s), `${s}: refused by both`)
  }
  t.ok(new RegExp(DATE_PATTERN).test('2026-11-22') && isCalendarDate('2026-11-22'))
  t.notOk(new RegExp(DATE_PATTERN).test('2026-1-22') || isCalendarDate('2026-1-22'))
})
