import t from 'tap'
import { inDataDir } from '../../src/config.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import { epx, initializedDataDir } from '../helpers/cli.ts'
import { parisDateOf } from '../../src/contract/paris-day.ts'
import { programme, siteId, type ProgrammeOptions } from '../helpers/programme.ts'

const dir = await initializedDataDir(t)
const check = createProgrammeCheck({ maxSites: 10, requireContiguous: false })
const NEW = 'ProgrammeSoutirage-2026-11-22-rev-20261121T110000Z'
const OLD = 'ProgrammeSoutirage-2026-11-22-rev-20261121T100000Z'

// Seeds the data folder's store as the API would: two programmes for 2026-11-22 (the
// older one superseded for site 1), one for 2026-11-23; the newer one applied by cycle 4.
{
  const store = openStore(inDataDir(dir, 'epx.lmdb'))
  const instructions = openInstructions(store)
  const save = async (o: ProgrammeOptions) => {
    const r = check(Buffer.from(JSON.stringify(programme({ slots: 3, kwh: j => j * 1.5, ...o }))), {
      perimeter: 'all', provenance: { receivedAt: '2026-11-21T12:00:00.000Z', companyId: 'acme', tokenId: 'tok_1', certFingerprint256: 'AB:CD' },
    })
    if (!r.ok) throw new Error(JSON.stringify(r.details))
    await instructions.save(r.batch, '2026-11-21T12:00:00.000Z')
  }
  await save({ emittedAt: '2026-11-21T10:00:00Z', sites: 2 })
  await save({ emittedAt: '2026-11-21T11:00:00Z' })
  await save({ targetDate: '2026-11-23', emittedAt: '2026-11-21T11:30:00Z', slots: 0 })
  // 1 µs apart, the later one sent first: two instructions, the later effective.
  await save({ targetDate: '2026-11-25', emittedAt: '2026-11-21T12:00:00.000001Z', slots: 1 })
  await save({ targetDate: '2026-11-25', emittedAt: '2026-11-21T12:00:00Z', slots: 1 })
  await instructions.markApplied([{ instructionId: NEW, siteId: siteId(1) }], 4, '2026-11-21T12:05:00.000Z')
  await store.close()
}

t.test('instructions list shows every instruction with its status and cycle', async t => {
  const r = await epx(dir, 'instructions', 'list')
  t.equal(r.code, 0, r.err)
  t.match(r.lines[0], /^INSTRUCTION_ID\s+SITE_ID\s+TARGET_DATE\s+STATUS\s+CYCLE\s+PERIODS\s+COMPANY\s+RECEIVED_AT$/)
  t.equal(r.lines.length, 7)
  t.match(r.out, new RegExp(`${OLD}\\s+${siteId(1)}\\s+2026-11-22\\s+superseded\\s+-\\s+3\\s+acme`))
  t.match(r.out, new RegExp(`${OLD}\\s+${siteId(2)}\\s+2026-11-22\\s+received\\s+-\\s+3`))
  t.match(r.out, new RegExp(`${NEW}\\s+${siteId(1)}\\s+2026-11-22\\s+applied\\s+4\\s+3`))
})

t.test('instructions list filters by --site and --date, and prints JSON with --json', async t => {
  const r = await epx(dir, 'instructions', 'list', '--site', siteId(1), '--date', '2026-11-22', '--json')
  t.equal(r.code, 0, r.err)
  const rows = JSON.parse(r.out)
  t.same(rows.map((x: any) => [x.instruction_id, x.status, x.cycle]), [[OLD, 'superseded', undefined], [NEW, 'applied', 4]])
  t.match(rows[1], { site_id: siteId(1), target_date: '2026-11-22', emitted_by: 'bsp-acme', company_id: 'acme', token_id: 'tok_1', periods_count: 3 })
  t.same((await epx(dir, 'instructions', 'list', '--date', '2026-11-24')).lines, ['no instructions'])
})

t.test('instructions list refuses a malformed --site or --date with a usage error', async t => {
  const bad = await epx(dir, 'instructions', 'list', '--site', 'PRM1')
  t.equal(bad.code, 2)
  t.match(bad.err, /--site PRM1 is not a site id/)
  t.equal((await epx(dir, 'instructions', 'list', '--date', '2026-02-30')).code, 2)
})

t.test('instructions show prints the status and each kW period (floor or curtailment)', async t => {
  const r = await epx(dir, 'instructions', 'show', NEW)
  t.equal(r.code, 0, r.err)
  t.match(r.out, /status\s+applied \(solver cycle 4\) since 2026-11-21T12:05:00.000Z/)
  t.match(r.out, /emitted\s+2026-11-21T11:00:00Z by bsp-acme/)
  t.match(r.out, /START_UTC\s+END_UTC\s+ENERGY_KWH\s+CONSTRAINT/)
  t.match(r.out, /2026-11-21T23:00:00Z\s+2026-11-21T23:15:00Z\s+0\s+max_kw 0/)
  t.match(r.out, /2026-11-21T23:15:00Z\s+2026-11-21T23:30:00Z\s+1\.5\s+min_kw 6/)
  t.match(r.out, /2026-11-21T23:30:00Z\s+2026-11-21T23:45:00Z\s+3\s+min_kw 12/)
})

t.test('instructions show and list say which instruction superseded an older one', async t => {
  const r = await epx(dir, 'instructions', 'show', OLD, '--site', siteId(1))
  t.equal(r.code, 0, r.err)
  t.match(r.out, new RegExp(`status\\s+superseded by ${NEW} since`))
  const rows = JSON.parse((await epx(dir, 'instructions', 'list', '--date', '2026-11-22', '--json')).out)
  t.same(rows.map((x: any) => [x.instruction_id, x.site_id, x.superseded_by]), [
    [OLD, siteId(1), NEW], [OLD, siteId(2), undefined], [NEW, siteId(1), undefined],
  ])
})

t.test('instructions show --site limits to sites; --json gives the periods', async t => {
  const r = await epx(dir, 'instructions', 'show', OLD, '--site', siteId(2), '--json')
  t.equal(r.code, 0, r.err)
  const [one, ...rest] = JSON.parse(r.out)
  t.same(rest, [])
  t.match(one, { site_id: siteId(2), status: 'received' })
  t.same(one.periods[1], { startUtc: '2026-11-21T23:15:00Z', endUtc: '2026-11-21T23:30:00Z', minKw: 6 })
})

t.test('instructions show of an instruction with no periods says it clears the day', async t => {
  const r = await epx(dir, 'instructions', 'show', 'ProgrammeSoutirage-2026-11-23-rev-20261121T113000Z')
  t.match(r.out, /no periods: this instruction clears/)
})

t.test('instructions show of an unknown id exits 1 pointing to list', async t => {
  const r = await epx(dir, 'instructions', 'show', 'ProgrammeSoutirage-2030-01-01-rev-20291231T000000Z')
  t.equal(r.code, 1)
  t.match(r.err, /no instruction ProgrammeSoutirage-2030-01-01-rev-20291231T000000Z; see 'epx instructions list'/)
})

t.test('instructions list and show print emitted_at at the precision sent, in emitted_at order', async t => {
  const r = await epx(dir, 'instructions', 'list', '--date', '2026-11-25', '--json')
  t.equal(r.code, 0, r.err)
  t.same(JSON.parse(r.out).map((x: any) => [x.instruction_id, x.emitted_at, x.status]), [
    ['ProgrammeSoutirage-2026-11-25-rev-20261121T120000Z', '2026-11-21T12:00:00Z', 'superseded'],
    ['ProgrammeSoutirage-2026-11-25-rev-20261121T120000.000001Z', '2026-11-21T12:00:00.000001Z', 'received'],
  ])
  const show = await epx(dir, 'instructions', 'show', 'ProgrammeSoutirage-2026-11-25-rev-20261121T120000.000001Z')
  t.equal(show.code, 0, show.err)
  t.match(show.out, /emitted\s+2026-11-21T12:00:00\.000001Z by bsp-acme/)
})

// DECISIONS.md "Tenure: who holds a site, and when": the operator's withdrawal.
t.test('instructions withdraw: a company\'s instructions of the days not over, of some sites, audited', async t => {
  const here = await initializedDataDir(t)
  t.equal((await epx(here, 'company', 'add', 'acme', '--name', 'ACME')).code, 0)
  const day = parisDateOf(new Date(Date.now() + 2 * 86_400_000))
  const store = openStore(inDataDir(here, 'epx.lmdb'))
  const r = check(Buffer.from(JSON.stringify(programme({ targetDate: day, sites: 2, slots: 2, emittedAt: '2026-11-21T10:00:00Z' }))), {
    perimeter: 'all', provenance: { receivedAt: '2026-11-21T12:00:00.000Z', companyId: 'acme', tokenId: 'tok_1', certFingerprint256: 'AB:CD' },
  })
  if (!r.ok) throw new Error(JSON.stringify(r.details))
  await openInstructions(store).save(r.batch, '2026-11-21T12:00:00.000Z')
  await store.close()
  const id = `ProgrammeSoutirage-${day}-rev-20261121T100000Z`

  const missing = await epx(here, 'instructions', 'withdraw')
  t.equal(missing.code, 2)
  t.match(missing.err, /--company/)
  const ghost = await epx(here, 'instructions', 'withdraw', '--company', 'ghost')
  t.equal(ghost.code, 1)
  t.match(ghost.err, /no company 'ghost'/)

  const done = await epx(here, 'instructions', 'withdraw', '--company', 'acme', '--site', siteId(2))
  t.equal(done.code, 0, done.err)
  t.match(done.lines[0], /^INSTRUCTION_ID\s+SITE_ID\s+TARGET_DATE$/)
  t.match(done.out, new RegExp(`${id}\\s+${siteId(2)}\\s+${day}`))
  t.match(done.lines.at(-1), /^withdrew 1 instruction\(s\) of company acme at /)
  const listed = JSON.parse((await epx(here, 'instructions', 'list', '--date', day, '--json')).out)
  t.same(listed.map((x: any) => [x.site_id, x.status]), [[siteId(1), 'received'], [siteId(2), 'withdrawn']])
  const again = await epx(here, 'instructions', 'withdraw', '--company', 'acme', '--site', siteId(2))
  t.match(again.out, /^no instruction of company acme to withdraw/)
  const audit = JSON.parse((await epx(here, 'audit', 'list', '--action', 'instruction.withdrawn', '--json')).out)
  t.match(audit, [{ actor: { kind: 'cli' }, subject: 'acme', outcome: 'ok', details: { reason: 'withdrawn', count: 1 } }, { outcome: 'nothing to withdraw' }])
})
