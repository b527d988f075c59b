import t, { type Test as Tap } from 'tap'
import { IN_FORCE_DB } from '../../src/store/in-force.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import type { InstructionBatch } from '../../src/contract/instruction.ts'
import { programme, siteId, type ProgrammeOptions } from '../helpers/programme.ts'
import { openInstructionStore, storeKinds, storesOf } from '../helpers/store-kinds.ts'

// DECISIONS.md "In force, quarter-hour by quarter-hour": per (site, day), each change of the
// instruction in force with its instant and cause, written in the transaction that makes it.

const DAY = '2026-11-22'
const check = createProgrammeCheck({ maxSites: 5000, requireContiguous: false })
const ms = (iso: string) => Date.parse(iso)
const idOf = (emittedAt: string) => `ProgrammeSoutirage-${DAY}-rev-${emittedAt.replace(/[-:]/g, '')}`

function batch (o: ProgrammeOptions & { receivedAt?: string; companyId?: string } = {}): InstructionBatch {
  const r = check(Buffer.from(JSON.stringify(programme({ slots: 4, ...o }))), {
    perimeter: 'all',
    provenance: { receivedAt: o.receivedAt ?? '2026-11-21T12:30:00.000Z', companyId: o.companyId ?? 'acme', tokenId: 'tok_1', certFingerprint256: 'AB:CD' },
  })
  if (!r.ok) throw new Error(JSON.stringify(r.details))
  return r.batch
}

const FIRST = '2026-11-21T10:00:00Z'
const SECOND = '2026-11-21T11:00:00Z'
const OLDER = '2026-11-21T09:00:00Z'

for (const kind of storeKinds) t.test(kind, async t => {
  const stores = storesOf(t, kind)
  const open = (t: Tap, path?: string) => openInstructionStore(t, stores, path)

  t.test('each change with its instant and cause: received, superseded, applied (the first cycle only), withdrawn', async t => {
    const { store, instructions } = await open(t)
    const f = instructions.inForce
    t.same(f.timelineOf(DAY, siteId(1)), [], 'nothing received: nothing in force')
    await instructions.save(batch({ emittedAt: FIRST }), '2026-11-21T10:05:00.000Z')
    t.same(f.timelineOf(DAY, siteId(1)), [{ atMs: ms('2026-11-21T10:05:00Z'), cause: 'received', instructionId: idOf(FIRST), companyId: 'acme' }])
    t.equal(f.inForceAt(DAY, siteId(1), ms('2026-11-21T10:04:59.999Z')), undefined, 'not before it was received')
    t.same(f.inForceAt(DAY, siteId(1), ms('2026-11-21T10:05:00Z')), { instructionId: idOf(FIRST), companyId: 'acme' }, 'from the instant it was received')

    await instructions.markApplied([{ instructionId: idOf(FIRST), siteId: siteId(1) }], 1, '2026-11-21T10:05:01.000Z')
    await instructions.save(batch({ emittedAt: SECOND }), '2026-11-21T11:00:00.000Z')
    await instructions.save(batch({ emittedAt: OLDER }), '2026-11-21T11:30:00.000Z')   // superseded on arrival: no change
    await instructions.save(batch({ emittedAt: SECOND, kwh: () => 9 }), '2026-11-21T11:45:00.000Z')   // re-sent: the same instruction
    await instructions.markApplied([{ instructionId: idOf(SECOND), siteId: siteId(1) }], 2, '2026-11-21T11:00:01.000Z')
    await instructions.markApplied([{ instructionId: idOf(SECOND), siteId: siteId(1) }], 2, '2026-11-21T11:00:02.000Z')   // told again
    await instructions.markQueued([{ instructionId: idOf(SECOND), siteId: siteId(1) }], '2026-11-21T12:00:00.000Z')   // a restart queues it again
    await instructions.markApplied([{ instructionId: idOf(SECOND), siteId: siteId(1) }], 3, '2026-11-21T12:00:01.000Z')
    await instructions.markApplied([{ instructionId: idOf(FIRST), siteId: siteId(1) }], 3, '2026-11-21T12:00:01.000Z')   // superseded: never applied again

    const at = (iso: string) => ms(iso)
    t.same(f.timelineOf(DAY, siteId(1)).map(c => [c.atMs, c.cause, c.instructionId, c.cycle]), [
      [at('2026-11-21T10:05:00Z'), 'received', idOf(FIRST), undefined],
      [at('2026-11-21T10:05:01Z'), 'applied', idOf(FIRST), 1],
      [at('2026-11-21T11:00:00Z'), 'superseded', idOf(FIRST), undefined],
      [at('2026-11-21T11:00:00Z'), 'received', idOf(SECOND), undefined],
      [at('2026-11-21T11:00:01Z'), 'applied', idOf(SECOND), 2],
    ])
    t.same(f.spansOf(DAY, siteId(1)), [
      { instructionId: idOf(FIRST), companyId: 'acme', fromMs: at('2026-11-21T10:05:00Z'), untilMs: at('2026-11-21T11:00:00Z'), endedBy: 'superseded' },
      { instructionId: idOf(SECOND), companyId: 'acme', fromMs: at('2026-11-21T11:00:00Z') },
    ])
    t.same(f.inForceAt(DAY, siteId(1), at('2026-11-21T10:59:59Z'))?.instructionId, idOf(FIRST))
    t.same(f.inForceAt(DAY, siteId(1), at('2026-11-21T11:00:00Z'))?.instructionId, idOf(SECOND))
    t.same(f.timelineOf(DAY, siteId(2)), [], 'another site has its own timeline')

    // The withdrawal the tenure records (DECISIONS.md "Tenure"), in its own write.
    await store.writeDurable(() => f.recordWithdrawn(DAY, siteId(1), at('2026-11-22T08:00:00Z'),
      [{ instructionId: idOf(SECOND), companyId: 'acme' }, { instructionId: idOf(OLDER), companyId: 'acme' }], 'site-left-perimeter'))
    t.equal(f.inForceAt(DAY, siteId(1), at('2026-11-22T08:00:00Z')), undefined, 'none in force after it')
    t.equal(f.inForceAt(DAY, siteId(1), at('2026-11-22T07:59:59Z'))?.instructionId, idOf(SECOND), 'a quarter-hour begun before keeps it')
    t.same(f.spansOf(DAY, siteId(1)).at(-1), { instructionId: idOf(SECOND), companyId: 'acme', fromMs: at('2026-11-21T11:00:00Z'), untilMs: at('2026-11-22T08:00:00Z'), endedBy: 'site-left-perimeter' })

    // The new holder's instruction, handed over in the same instant.
    await store.writeDurable(() => f.recordWithdrawn(DAY, siteId(2), at('2026-11-22T08:00:00Z'), [], 'withdrawn'))
    t.same(f.timelineOf(DAY, siteId(2)), [], 'nothing withdrawn: nothing recorded')
  })

  t.test('a withdrawal hands over to what is in force after it', async t => {
    const { store, instructions } = await open(t)
    const f = instructions.inForce
    await instructions.save(batch({ emittedAt: SECOND, companyId: 'former' }), '2026-11-21T11:00:00.000Z')
    const next = { instructionId: idOf(FIRST), companyId: 'holder', emittedAtMs: ms(FIRST) }
    await store.writeDurable(() => f.recordWithdrawn(DAY, siteId(1), ms('2026-11-22T06:00:00Z'), [{ instructionId: idOf(SECOND), companyId: 'former' }], 'site-left-perimeter', next))
    t.same(f.inForceAt(DAY, siteId(1), ms('2026-11-22T06:00:00Z')), { instructionId: idOf(FIRST), companyId: 'holder' })
    t.same(f.spansOf(DAY, siteId(1)).map(s => [s.instructionId, s.companyId, s.endedBy]), [[idOf(SECOND), 'former', 'site-left-perimeter'], [idOf(FIRST), 'holder', undefined]])
  })

  t.test('written in the save\'s transaction: a save that fails writes no change; what resolved is there after a reopen', async t => {
    const dir = t.testdir()
    const { store, instructions } = await open(t, dir)
    await instructions.save(batch({ emittedAt: FIRST, sites: 2 }), '2026-11-21T10:00:00.000Z')
    store.faults.failWriteAfter = 7   // inside the second site of the next programme
    t.equal((await instructions.save(batch({ emittedAt: SECOND, sites: 2 }), '2026-11-21T11:00:00.000Z').catch(e => e)).code, 'NO_STORE')
    for (const n of [1, 2]) t.same(instructions.inForce.timelineOf(DAY, siteId(n)).map(c => c.cause), ['received'], `site ${n}: no half change`)
    await store.close()
    const again = await open(t, dir)
    t.same(again.instructions.inForce.spansOf(DAY, siteId(2)), [{ instructionId: idOf(FIRST), companyId: 'acme', fromMs: ms('2026-11-21T10:00:00Z') }])
  })

  t.test('instructions stored before the timeline: derived from received_at, emitted_at and status, and kept when a new one supersedes them', async t => {
    const { store, instructions } = await open(t)
    await instructions.save(batch({ emittedAt: FIRST, receivedAt: '2026-11-21T10:05:00.000Z' }), '2026-11-21T10:05:00.000Z')
    await instructions.markApplied([{ instructionId: idOf(FIRST), siteId: siteId(1) }], 4, '2026-11-21T10:06:00.000Z')
    await instructions.save(batch({ emittedAt: OLDER, receivedAt: '2026-11-21T10:30:00.000Z' }), '2026-11-21T10:30:00.000Z')
    await instructions.save(batch({ emittedAt: SECOND, receivedAt: '2026-11-21T11:00:00.000Z', sites: [siteId(2)] }), '2026-11-21T11:00:00.000Z')
    const recorded = instructions.inForce.timelineOf(DAY, siteId(1))
    // As a store written before the timeline existed holds them: no record of it.
    const db = store.db(IN_FORCE_DB)
    const keys = [...db.getKeys({ start: [DAY, siteId(1)], end: [DAY, siteId(1) + '\u0000'] })]
    t.equal(keys.length, 2)
    const effective = store.db<Record<string, unknown>>('instruction-effective')
    const { inForce: _, ...unmarked } = effective.get([DAY, siteId(1)])!
    await store.writeDurable(() => {
      for (const k of keys) db.removeSync(k)
      effective.putSync([DAY, siteId(1)], unmarked)
    })
    t.same(instructions.inForce.timelineOf(DAY, siteId(1)), recorded, 'the same timeline, derived')

    await instructions.save(batch({ emittedAt: SECOND, receivedAt: '2026-11-21T12:00:00.000Z' }), '2026-11-21T12:00:00.000Z')
    t.same(instructions.inForce.spansOf(DAY, siteId(1)).map(s => [s.instructionId, s.fromMs, s.untilMs]), [
      [idOf(FIRST), ms('2026-11-21T10:05:00Z'), ms('2026-11-21T12:00:00Z')],
      [idOf(SECOND), ms('2026-11-21T12:00:00Z'), undefined],
    ], 'the derived part written before the change that follows it')
  })

  t.test('retention removes a day\'s timeline with its instructions', async t => {
    const { instructions } = await open(t)
    await instructions.save(batch({ emittedAt: FIRST }), '2026-11-21T10:00:00.000Z')
    await instructions.save(batch({ emittedAt: FIRST, targetDate: '2026-11-23' }), '2026-11-21T10:00:00.000Z')
    t.equal(await instructions.prune('2026-11-23'), 1)
    t.same(instructions.inForce.timelineOf(DAY, siteId(1)), [])
    t.equal(instructions.inForce.timelineOf('2026-11-23', siteId(1)).length, 1)
  })
})
