import t from 'tap'
import { inDataDir } from '../../src/config.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openMetering } from '../../src/store/metering.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import { coverageOf } from '../../src/contract/paris-day.ts'
import { epx, initializedDataDir } from '../helpers/cli.ts'
import { programme, siteId } from '../helpers/programme.ts'

// `epx realise`: programme against delivery for the operator, from the store the running
// service writes: an instruction for site 1 (met, short, a broken curtailment, no data),
// meter values alone for site 2.

const dir = await initializedDataDir(t)
const DAY = '2026-11-22'
const NEXT = '2026-11-23'
const START = Date.parse(coverageOf(DAY).startUtc)
const iso = (ms: number) => new Date(ms).toISOString()
{
  const store = openStore(inDataDir(dir, 'epx.lmdb'))
  const check = createProgrammeCheck({ maxSites: 10, requireContiguous: false })
  const r = check(Buffer.from(JSON.stringify(programme({ slots: 4, kwh: j => [4, 4, 0, 2][j]! }))), {
    perimeter: 'all', provenance: { receivedAt: '2026-11-21T12:00:00.000Z', companyId: 'acme', tokenId: 'tok_1', certFingerprint256: 'AB:CD' },
  })
  if (!r.ok) throw new Error(JSON.stringify(r.details))
  await openInstructions(store).save(r.batch, '2026-11-21T12:00:00.000Z')
  // Both hold their sites since the 1st (DECISIONS.md "Tenure"): a company's day is the quarter-hours it held.
  const companies = openCompanies(store, { now: () => Date.parse('2026-11-01T00:00:00Z') })
  await companies.add({ id: 'acme', name: 'Acme', status: 'active', certSubject: 'CN=acme', perimeter: [siteId(1)], createdAt: '2026-11-01T00:00:00Z' })
  await companies.add({ id: 'other', name: 'Other', status: 'active', certSubject: 'CN=other', perimeter: [siteId(2)], createdAt: '2026-11-01T00:00:00Z' })
  const metering = openMetering(store, { now: () => Date.parse('2026-11-23T00:00:00Z'), retentionDays: 90000 })
  const at = (site: string, slot: number, kwh: number) => ({ siteId: site, startUtc: iso(START + slot * 900_000), endUtc: iso(START + (slot + 1) * 900_000), kwh })
  await metering.report([at(siteId(1), 0, 4.1), at(siteId(1), 1, 3), at(siteId(1), 2, 0.7), at(siteId(2), 10, 1.25), at(siteId(2), 11, 1.25)])
  // The next day: a programme applied the day before, then one for the day itself received at
  // 06:15 in Paris, 25 of its periods over (DECISIONS.md "In force, quarter-hour by quarter-hour").
  const instructions = openInstructions(store)
  const save = async (emittedAt: string, kwh: number) => {
    const b = check(Buffer.from(JSON.stringify(programme({ targetDate: NEXT, emittedAt, kwh: () => kwh }))), {
      perimeter: 'all', provenance: { receivedAt: emittedAt, companyId: 'acme', tokenId: 'tok_1', certFingerprint256: 'AB:CD' },
    })
    if (!b.ok) throw new Error(JSON.stringify(b.details))
    await instructions.save(b.batch, emittedAt, 'queued')
    return b.batch.instructionId
  }
  await instructions.markApplied([{ instructionId: await save('2026-11-22T12:00:00.000Z', 2.5), siteId: siteId(1) }], 1, '2026-11-22T12:00:01.000Z')
  await save('2026-11-23T05:15:00.000Z', 0)
  const later = openMetering(store, { now: () => Date.parse('2026-11-24T00:00:00Z'), retentionDays: 90000 })
  const nextStart = Date.parse(coverageOf(NEXT).startUtc)
  await later.report(Array.from({ length: 30 }, (_, j) => ({ siteId: siteId(1), startUtc: iso(nextStart + j * 900_000), endUtc: iso(nextStart + (j + 1) * 900_000), kwh: 2.6 })))
  await store.close()
}

t.test('a programme received late: each quarter-hour against the instruction in force at its start, the late slots apart', async t => {
  const governing = `ProgrammeSoutirage-${NEXT}-rev-20261122T120000Z`
  const late = `ProgrammeSoutirage-${NEXT}-rev-20261123T051500Z`
  const r = await epx(dir, 'realise', '--date', NEXT, '--site', siteId(1))
  t.equal(r.code, 0, r.err)
  t.match(r.out, new RegExp(`2026-11-22T23:00:00Z\\s+2026-11-22T23:15:00Z\\s+2\\.500\\s+2\\.600\\s+met\\s+in force: ${governing}; late: 0\\.000 of ${late}`))
  t.match(r.out, /2026-11-23T05:15:00Z\s+2026-11-23T05:30:00Z\s+0\.000\s+2\.600\s+curtailment_broken/)
  t.match(r.lines.at(-1), /; 25 met, 5 curtailment_broken, 66 no_data; 25 late \(received after the quarter-hour began, counted apart\)$/)
  const day = await epx(dir, 'realise', '--date', NEXT)
  t.match(day.out, new RegExp(`${siteId(1)}\\s+${late}\\s+62\\.500\\s+78\\.000\\s+0\\.000\\s+25\\s+0\\s+0\\s+5\\s+66\\s+25`))
  const csv = (await epx(dir, 'realise', '--date', NEXT, '--csv')).out.trimEnd().split(/\r?\n/).map(l => l.split(','))
  t.same(csv[1]!.slice(-3), ['acme', late, '0'], 'the late slot in its own columns')
  t.equal(csv[1]![2], governing, 'the instruction in force at the quarter-hour\'s start')
})

t.test('per site of the day: programmed, delivered, shortfall and the verdict counts', async t => {
  const r = await epx(dir, 'realise', '--date', DAY)
  t.equal(r.code, 0, r.err)
  t.match(r.lines[1], /^SITE\s+INSTRUCTION\s+PROGRAMMED\s+DELIVERED\s+SHORTFALL\s+MET\s+SHORT\s+CURT OK\s+CURT BROKEN\s+NO DATA\s+LATE$/)
  t.match(r.out, new RegExp(`${siteId(1)}\\s+ProgrammeSoutirage-${DAY}-rev-20261121T120000Z\\s+10\\.000\\s+7\\.800\\s+1\\.000\\s+1\\s+1\\s+0\\s+1\\s+1`))
  t.match(r.out, new RegExp(`${siteId(2)}\\s+–\\s+0\\.000\\s+2\\.500\\s+0\\.000\\s+0\\s+0\\s+0\\s+0\\s+0`))
})

t.test('--site: slot by slot, with the totals', async t => {
  const r = await epx(dir, 'realise', '--date', DAY, '--site', siteId(1))
  t.equal(r.code, 0, r.err)
  t.match(r.out, /2026-11-21T23:15:00Z\s+2026-11-21T23:30:00Z\s+4\.000\s+3\.000\s+short\s+1\.000/)
  t.match(r.out, /2026-11-21T23:45:00Z\s+2026-11-22T00:00:00Z\s+2\.000\s+–\s+no_data/)
  t.match(r.lines.at(-1), /^total: programmed 10\.000, delivered 7\.800, shortfall 1\.000; 1 met, 1 short, 1 curtailment_broken, 1 no_data, 92 unconstrained$/)
})

t.test('--json is the API body; --company reads as that company (its perimeter, its instructions)', async t => {
  const json = JSON.parse((await epx(dir, 'realise', '--date', DAY, '--site', siteId(1), '--json')).out)
  t.equal(json.creneaux.length, 96)
  t.same(json.totaux.verdicts, { met: 1, short: 1, curtailment_respected: 0, curtailment_broken: 1, no_data: 1, unconstrained: 92 })
  const other = JSON.parse((await epx(dir, 'realise', '--date', DAY, '--company', 'other', '--json')).out)
  t.same(other.map((b: any) => [b.site_id, b.instruction_id]), [[siteId(2), null]])
  const missing = await epx(dir, 'realise', '--date', DAY, '--company', 'nobody')
  t.equal(missing.code, 1)
  t.match(missing.err, /no company 'nobody'/)
})

t.test('--csv: one row per site and quarter-hour; the columns sum to the totals', async t => {
  const r = await epx(dir, 'realise', '--date', DAY, '--csv')
  t.equal(r.code, 0, r.err)
  t.equal((r.out + '\n').split('\r\n').length, 1 + 2 * 96 + 1, 'every row ends with CRLF (RFC 4180), the last one too')
  const rows = r.out.trimEnd().split(/\r?\n/).map(l => l.split(','))
  t.same(rows[0], ['site_id', 'target_date', 'instruction_id', 'debut_utc', 'fin_utc', 'energie_programmee_kwh', 'energie_realisee_kwh', 'verdict', 'manque_kwh',
    'company_id', 'tardif_instruction_id', 'tardif_energie_kwh'])
  t.equal(rows.length, 1 + 2 * 96)
  const sum = (col: number, site: string) => rows.slice(1).filter(x => x[0] === site).reduce((a, x) => a + Number(x[col] || 0), 0)
  t.equal(Math.round(sum(5, siteId(1)) * 1000) / 1000, 10)
  t.equal(Math.round(sum(6, siteId(1)) * 1000) / 1000, 7.8)
  t.equal(Math.round(sum(8, siteId(1)) * 1000) / 1000, 1)
  t.equal(Math.round(sum(6, siteId(2)) * 1000) / 1000, 2.5)
})

t.test('nothing to compare, and usage errors', async t => {
  t.match((await epx(dir, 'realise', '--date', '2026-11-20')).out, /nothing to compare on 2026-11-20/)
  const bad = await epx(dir, 'realise', '--date', '2026-11-22', '--site', 'PRM1')
  t.equal(bad.code, 2)
  t.equal((await epx(dir, 'realise')).code, 2)
})
