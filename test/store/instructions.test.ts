import t, { type Test as Tap } from 'tap'
import { renderError } from '../../src/http/render-error.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openInstructionFlags } from '../../src/store/instruction-flags.ts'
import { instructionTree } from '../../src/store/instruction-tree.ts'
import { createProgrammeCheck } from '../../src/apply/check-programme.ts'
import type { InstructionBatch } from '../../src/contract/instruction.ts'
import { programme, siteId, type ProgrammeOptions } from '../helpers/programme.ts'
import { openInstructionStore, storeKinds, storesOf } from '../helpers/store-kinds.ts'

const check = createProgrammeCheck({ maxSites: 5000, requireContiguous: false })
const AT = '2026-11-21T12:30:00.000Z'

function batch (o: ProgrammeOptions = {}): InstructionBatch {
  const r = check(Buffer.from(JSON.stringify(programme({ slots: 4, ...o }))), {
    perimeter: 'all',
    provenance: { receivedAt: AT, companyId: 'acme', tokenId: 'tok_1', certFingerprint256: 'AB:CD:EF' },
  })
  if (!r.ok) throw new Error(JSON.stringify(r.details))
  return r.batch
}

const OLD = '2026-11-21T10:00:00Z'
const NEW = '2026-11-21T11:00:00Z'
const idOf = (emittedAt: string) => `ProgrammeSoutirage-2026-11-22-rev-${emittedAt.replace(/[-:]/g, '')}`

for (const kind of storeKinds) t.test(kind, async t => {
  const stores = storesOf(t, kind)
  const { openStore } = stores
  const open = (t: Tap, path?: string) => openInstructionStore(t, stores, path)

  t.test('a programme is stored one instruction per site, with everything DECISIONS.md lists, status received', async t => {
    const { instructions } = await open(t)
    t.same(await instructions.save(batch({ sites: 2, kwh: j => j }), AT), [true, true])
    const got = instructions.get(idOf('2026-11-21T12:00:00Z'), siteId(2))
    t.match(got, {
      instructionId: 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z',
      siteId: siteId(2),
      siteName: 'Site 2',
      targetDate: '2026-11-22',
      emittedAt: '2026-11-21T12:00:00Z',
      emittedBy: 'bsp-acme',
      receivedAt: AT,
      companyId: 'acme',
      tokenId: 'tok_1',
      certFingerprint256: 'AB:CD:EF',
      slotDurationSecs: 900,
      state: { status: 'received', at: AT },
    })
    t.same(got!.slots.map(s => s[1]), [0, 1, 2, 3])
    t.same(got!.slots[1], ['2026-11-21T23:15:00Z', 1])
  })

  t.test('what save() resolved is on disk: a fresh open of the folder sees it', async t => {
    const dir = t.testdir()
    const first = await openStore(dir)
    await openInstructions(first).save(batch(), AT)
    await first.close()
    const { instructions } = await open(t, dir)
    t.equal(instructions.list().length, 1)
  })

  t.test('re-sending the same (target_date, emitted_at, site_id) overwrites the instruction', async t => {
    const { instructions } = await open(t)
    await instructions.save(batch({ kwh: () => 1 }), AT)
    t.same(await instructions.save(batch({ kwh: () => 7 }), '2026-11-21T12:31:00.000Z'), [true])
    const all = instructions.list()
    t.equal(all.length, 1)
    t.same(all[0]!.slots.map(s => s[1]), [7, 7, 7, 7])
    t.equal(all[0]!.state.status, 'received')
    t.equal(instructions.effectiveId('2026-11-22', siteId(1)), all[0]!.instructionId)
  })

  t.test('a newer emitted_at supersedes the effective instruction of the site and day', async t => {
    const { instructions } = await open(t)
    await instructions.save(batch({ emittedAt: OLD }), AT)
    t.same(await instructions.save(batch({ emittedAt: NEW }), AT), [true], 'the newer one is effective')
    t.equal(instructions.get(idOf(OLD), siteId(1))!.state.status, 'superseded')
    t.equal(instructions.get(idOf(NEW), siteId(1))!.state.status, 'received')
    t.equal(instructions.effectiveId('2026-11-22', siteId(1)), idOf(NEW))
  })

  t.test('an older emitted_at arriving after a newer one is stored as superseded and not effective', async t => {
    const { instructions } = await open(t)
    await instructions.save(batch({ emittedAt: NEW }), AT)
    t.same(await instructions.save(batch({ emittedAt: OLD }), AT), [false], 'not to be fed to the solver')
    t.equal(instructions.get(idOf(OLD), siteId(1))!.state.status, 'superseded', 'kept for audit')
    t.equal(instructions.get(idOf(NEW), siteId(1))!.state.status, 'received')
    t.equal(instructions.effectiveId('2026-11-22', siteId(1)), idOf(NEW))
  })

  t.test('supersession is per site: a programme may win for one site and lose for another', async t => {
    const { instructions } = await open(t)
    await instructions.save(batch({ emittedAt: NEW, sites: [siteId(2)] }), AT)
    t.same(await instructions.save(batch({ emittedAt: OLD, sites: [siteId(1), siteId(2)] }), AT), [true, false])
  })

  t.test('a write failing in the middle of a multi-site programme stores nothing and answers NO_STORE', async t => {
    const { store, instructions } = await open(t)
    await instructions.save(batch({ emittedAt: OLD, sites: 3 }), AT)
    store.faults.failWriteAfter = 6   // the 3rd site of the next programme
    const err = await instructions.save(batch({ emittedAt: NEW, sites: 3 }), AT).catch(e => e)
    t.equal(err.code, 'NO_STORE')
    t.equal(err.status, 503)
    t.equal(renderError(err, 'inbound', 'https://epx.test').headers['retry-after'], '5', 'the door answers it with Retry-After: 5')
    t.same(instructions.list().map(i => i.instructionId), Array(3).fill(idOf(OLD)), 'none of the new programme')
    for (let n = 1; n <= 3; n++) {
      t.equal(instructions.get(idOf(OLD), siteId(n))!.state.status, 'received', 'the old one is not superseded')
      t.equal(instructions.effectiveId('2026-11-22', siteId(n)), idOf(OLD))
    }
  })

  t.test('an unavailable store answers NO_STORE before writing', async t => {
    const { store, instructions } = await open(t)
    store.faults.unavailable = true
    t.equal((await instructions.save(batch(), AT).catch(e => e)).code, 'NO_STORE')
    t.throws(() => instructions.list(), { code: 'NO_STORE' })
  })

  t.test('queued and applied (with the cycle) advance the status, never a superseded one', async t => {
    const { instructions } = await open(t)
    await instructions.save(batch({ emittedAt: OLD }), AT)
    await instructions.save(batch({ emittedAt: NEW }), AT)
    const refs = [{ instructionId: idOf(OLD), siteId: siteId(1) }, { instructionId: idOf(NEW), siteId: siteId(1) }]
    await instructions.markQueued(refs, '2026-11-21T12:30:01.000Z')
    t.same(instructions.get(idOf(NEW), siteId(1))!.state, { status: 'queued', at: '2026-11-21T12:30:01.000Z' })
    await instructions.markApplied(refs, 7, '2026-11-21T12:35:00.000Z')
    t.same(instructions.get(idOf(NEW), siteId(1))!.state, { status: 'applied', cycle: 7, at: '2026-11-21T12:35:00.000Z' })
    t.equal(instructions.get(idOf(OLD), siteId(1))!.state.status, 'superseded')
  })

  t.test('save can start the effective ones as queued; superseded ones stay superseded; unqueue sends queued back to received', async t => {
    const { instructions } = await open(t)
    t.same(await instructions.save(batch({ emittedAt: NEW, sites: 2 }), AT, 'queued'), [true, true])
    t.same(await instructions.save(batch({ emittedAt: OLD, sites: 2 }), AT, 'queued'), [false, false])
    t.same(instructions.get(idOf(NEW), siteId(1))!.state, { status: 'queued', at: AT })
    t.equal(instructions.get(idOf(OLD), siteId(1))!.state.status, 'superseded')
    await instructions.unqueue([{ instructionId: idOf(NEW), siteId: siteId(1) }, { instructionId: idOf(OLD), siteId: siteId(2) }], '2026-11-21T12:30:02.000Z')
    t.same(instructions.get(idOf(NEW), siteId(1))!.state, { status: 'received', at: '2026-11-21T12:30:02.000Z' })
    t.equal(instructions.get(idOf(NEW), siteId(2))!.state.status, 'queued', 'only the ones named')
    t.equal(instructions.get(idOf(OLD), siteId(2))!.state.status, 'superseded', 'never a superseded one')
  })

  t.test('supersedersOf names the sites a later save with a newer emitted_at for the same day may have superseded', async t => {
    const { instructions } = await open(t)
    const a = batch({ emittedAt: OLD, sites: 2 })
    await instructions.save(a, AT)
    if (kind === 'postgres') {
      // Other instances save too: what this one saw is not all the store holds.
      t.equal(instructions.supersedersOf(a), 'all', 'a shared store: every site is read back')
      return
    }
    t.same([...instructions.supersedersOf(a) as Set<string>], [], 'none yet')
    const again = batch({ emittedAt: OLD, sites: 2 })
    t.same(await instructions.save(again, AT), [true, true], 'the same triple overwrites and stays effective')
    await instructions.save(batch({ emittedAt: NEW, targetDate: '2026-11-23', sites: 2 }), AT)
    t.same([...instructions.supersedersOf(a) as Set<string>], [], 'neither a re-send nor another day')
    await instructions.save(batch({ emittedAt: NEW, sites: 1 }), AT)
    t.same([...instructions.supersedersOf(a) as Set<string>], [siteId(1)])
    t.equal(instructions.supersedersOf(batch()), 'all', 'a batch it never saved')
  })

  t.test('list filters by site and by target date; effectiveFrom starts at a day', async t => {
    const { instructions } = await open(t)
    await instructions.save(batch({ targetDate: '2026-11-22', sites: 2 }), AT)
    await instructions.save(batch({ targetDate: '2026-11-23', sites: 2 }), AT)
    t.equal(instructions.list().length, 4)
    t.same(instructions.list({ targetDate: '2026-11-23' }).map(i => [i.targetDate, i.siteId]), [['2026-11-23', siteId(1)], ['2026-11-23', siteId(2)]])
    t.same(instructions.list({ siteIds: [siteId(2)] }).map(i => i.targetDate), ['2026-11-22', '2026-11-23'])
    t.same([...instructions.effectiveFrom('2026-11-23')].map(r => [r.targetDate, r.siteId]), [['2026-11-23', siteId(1)], ['2026-11-23', siteId(2)]])
  })

  t.test('emitted_at is compared at full precision: 1 µs later supersedes, 1 µs earlier is superseded', async t => {
    const { instructions } = await open(t)
    const at = (us: string) => `2026-11-21T12:00:00.123${us}Z`
    t.same(await instructions.save(batch({ emittedAt: at('456') }), AT), [true])
    t.same(await instructions.save(batch({ emittedAt: at('457') }), AT), [true], 'a microsecond later is newer')
    t.same(await instructions.save(batch({ emittedAt: at('456001') }), AT), [false], 'a nanosecond after the first, still before the second')
    t.equal(instructions.effectiveId('2026-11-22', siteId(1)), 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000.123457Z')
    t.same(instructions.list().map(i => [i.emittedAt, i.state.status]), [
      [at('456'), 'superseded'], [at('456001'), 'superseded'], [at('457'), 'received'],
    ], 'three instructions, none replacing another, listed in emitted_at order')
  })

  t.test('supersedersOf sees a later emitted_at less than a millisecond after', async t => {
    const { instructions } = await open(t)
    const a = batch({ emittedAt: '2026-11-21T12:00:00.000001Z' })
    await instructions.save(a, AT)
    await instructions.save(batch({ emittedAt: '2026-11-21T12:00:00.000002Z' }), AT)
    t.same(kind === 'postgres' ? instructions.supersedersOf(a) : [...instructions.supersedersOf(a) as Set<string>], kind === 'postgres' ? 'all' : [siteId(1)])
  })

  t.test('list orders a day by emitted_at, though ids with a fraction sort before the whole second as text', async t => {
    const { instructions } = await open(t)
    for (const e of ['2026-11-21T12:00:00.5Z', '2026-11-21T12:00:00Z', '2026-11-21T12:00:00.000001Z', '2026-11-21T11:59:59.999999999Z']) {
      await instructions.save(batch({ emittedAt: e }), AT)
    }
    t.same(instructions.list().map(i => i.emittedAt), [
      '2026-11-21T11:59:59.999999999Z', '2026-11-21T12:00:00Z', '2026-11-21T12:00:00.000001Z', '2026-11-21T12:00:00.500Z',
    ])
  })

  t.test('an effective instruction sent at millisecond precision compares with sub-millisecond ones', async t => {
    const { store, instructions } = await open(t)
    const first = batch({ emittedAt: '2026-11-21T12:00:00.250Z' })
    await instructions.save(first, AT)
    t.same(store.db('instruction-effective').get(['2026-11-22', siteId(1)]), { instructionId: first.instructionId, emittedAtMs: Date.UTC(2026, 10, 21, 12, 0, 0, 250), inForce: 1 }, 'no nanoseconds field when there are none (marked as recorded in the timeline of what is in force)')
    t.equal(instructions.get(first.instructionId, siteId(1))!.emittedAt, '2026-11-21T12:00:00.250Z')
    t.same(await instructions.save(batch({ emittedAt: '2026-11-21T12:00:00.249999Z' }), AT), [false], '1 µs before it: superseded')
    t.same(await instructions.save(batch({ emittedAt: '2026-11-21T12:00:00.250Z' }), AT), [true], 'the same instant: the same instruction, re-sent')
    t.equal(instructions.effectiveId('2026-11-22', siteId(1)), first.instructionId)
    t.same(await instructions.save(batch({ emittedAt: '2026-11-21T12:00:00.250001Z' }), AT), [true], '1 µs after it: effective')
    t.equal(instructions.get(first.instructionId, siteId(1))!.state.status, 'superseded')
  })

  t.test('a record, its flag and its status sit next to each other in one tree: a save writes no other instruction tree', async t => {
    const { store, instructions } = await open(t)
    const b = batch({ sites: 2 })
    await instructions.save(b, AT, 'queued', () => {
      openInstructionFlags(store).putSync(b.instructionId, [{ siteId: siteId(1), flag: { checkedAgainst: AT, slots: [Date.parse(AT), 9, 1] } }])
    })
    const keys = [...instructionTree(store).getKeys()].filter(Array.isArray)
    t.same(keys, [
      [b.instructionId, siteId(1)], [b.instructionId, siteId(1), 'f'], [b.instructionId, siteId(1), 's'],
      [b.instructionId, siteId(2)], [b.instructionId, siteId(2), 's'],
    ], 'in key order: each record, then its flag, then its status')
    t.same(instructions.list().map(i => [i.siteId, i.state.status]), [[siteId(1), 'queued'], [siteId(2), 'queued']])
  })
})
