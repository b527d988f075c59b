import t from 'tap'
import { utimesSync, writeFileSync, existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openInstructionFlags } from '../../src/store/instruction-flags.ts'
import { openDeliveries } from '../../src/store/deliveries.ts'
import { openAudit } from '../../src/store/audit.ts'
import { openStore } from '../../src/store/open-store.ts'
import { createOperations } from '../../src/apply/operations.ts'
import type { Logger } from '../../src/host/contract.ts'

t.test('after a publication run, instructions, flags, receipts and audit records past their retention are removed', async t => {
  const epx = await startEpx(t, { config: { inbound: { retentionDays: 30 }, audit: { retentionDays: 60 } } })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage', 'outbound:besoins-agreges'])
  await epx.handle.publish({ targetDate: '2026-11-22' })
  const id = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'
  t.equal((await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme({ slots: 1, kwh: () => 900 }) })).status, 202)
  t.equal((await epx.request({ path: OUTBOUND_PATH, query: { site_id: siteId(1), target_date: '2026-11-22' }, cert, token: secret })).status, 200)
  const flags = openInstructionFlags(epx.store)
  for (let i = 0; i < 200 && !flags.get(id, siteId(1)); i++) await new Promise(resolve => setTimeout(resolve, 25))
  t.ok(flags.get(id, siteId(1)), 'flagged (900 kWh in a quarter-hour)')
  await epx.restart()   // receipts flushed

  // 31 days later: the instruction's day is past inbound.retentionDays (30), the audit records are not yet (60).
  epx.clock.set('2026-12-23T12:00:00Z')
  await epx.handle.publish({ targetDate: '2026-12-24' })
  await epx.restart()   // waits for the retention the run started
  t.same(openInstructions(epx.store).list().map(i => i.instructionId), [])
  t.equal(openInstructions(epx.store).effectiveId('2026-11-22', siteId(1)), undefined)
  t.equal(openInstructionFlags(epx.store).get(id, siteId(1)), undefined)
  t.ok(openAudit(epx.store).list({ action: 'programme.accepted' }).length === 1, 'audit kept 60 days')
  t.same(openDeliveries(epx.store).list('2026-11-22').length, 1, 'receipts follow publish.retentionDays (90)')

  epx.clock.set('2027-03-01T12:00:00Z')
  await epx.handle.publish({ targetDate: '2027-03-02' })
  await epx.restart()
  t.same(openAudit(epx.store).list({ action: 'programme.accepted' }), [])
  t.same(openDeliveries(epx.store).list('2026-11-22'), [])
  t.match(epx.logs().find(l => /expired audit records/.test(l.msg)), { level: 30 })
})

t.test('on start, revision files a crash left uncommitted are removed; committed and fresh ones stay', async t => {
  const epx = await startEpx(t)
  await epx.handle.publish({ targetDate: '2026-11-22' })
  const dir = join(epx.store.path, 'revision-bytes')
  const [committed] = readdirSync(dir)
  const orphan = join(dir, 'mhzk0000-abc123x.seg')
  const fresh = join(dir, 'mhzk0001-abc124x.seg')
  writeFileSync(orphan, 'bytes appended before a crash')
  writeFileSync(fresh, 'another process is publishing right now')
  const twoHoursAgo = (Date.now() - 2 * 3_600_000) / 1000
  utimesSync(orphan, twoHoursAgo, twoHoursAgo)
  utimesSync(join(dir, committed!), twoHoursAgo, twoHoursAgo)
  await epx.restart()
  t.notOk(existsSync(orphan), 'the orphan is gone')
  t.ok(existsSync(fresh), 'a file written within the hour may be another process\'s: kept')
  t.ok(existsSync(join(dir, committed!)), 'a committed segment stays')
  t.match(epx.logs().find(l => /uncommitted/.test(l.msg)), { level: 40, segments: ['mhzk0000-abc123x.seg'] })
})

t.test('retention runs only on the instance that leads those sharing the store', async t => {
  const store = openStore(join(t.testdir(), 'store'))
  t.teardown(() => store.close())
  const audit = openAudit(store, { retentionDays: 30 })
  audit.record({ actor: { kind: 'host' }, action: 'publication.run', subject: '2026-09-01', outcome: 'ok' }, Date.parse('2026-09-01T12:00:00Z'))
  await audit.flush()
  const silent: Logger = { debug () {}, info () {}, warn () {}, error () {}, child: () => silent }
  let leading = false
  const ops = createOperations({
    audit, instructions: openInstructions(store), deliveries: openDeliveries(store),
    retentionDays: { instructions: 30, deliveries: 90 }, leads: () => leading,
    clock: { now: () => new Date('2026-11-21T12:00:00Z') }, log: silent,
  })
  await ops.retention()
  t.equal(audit.list().length, 1, 'not the leader: the expired record stays')
  leading = true
  await ops.retention()
  t.equal(audit.list().length, 0, 'the leader removes it')
})
