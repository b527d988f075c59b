import t from 'tap'
import { join } from 'node:path'
import { openInstructionFlags, type FlagFound } from '../../src/store/instruction-flags.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { flagKey, instructionTree } from '../../src/store/instruction-tree.ts'
import { seedStore } from '../helpers/seed.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

// Feasibility flags kept beside an instruction, in its tree: a whole day of flagged slots
// fits in its B-tree page (no overflow page to write in a flagged POST's commit), reads
// back to the watt, goes with its instruction at retention, and flags stored in any of
// the earlier forms (in a tree of their own) read the same and are pruned too.

const ID = 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z'
const SITE = 'SITE-1'
const start = Date.parse('2026-11-21T23:00:00Z')

/** Every slot of a 100-quarter-hour day over its available power, with kW that float32 cannot hold exactly. */
function wholeDay (): FlagFound {
  const slots: number[] = []
  for (let k = 0; k < 100; k++) slots.push(start + k * 900_000, 240.48 + k * 0.01, 123.45 + k)
  return { checkedAgainst: '2026-11-21T07:00:00Z', slots, day: { programmedKwh: 6012, needsKwh: 900, availableKwh: 3086.25 } }
}

for (const kind of storeKinds) t.test(kind, async t => {
  const { openStore } = storesOf(t, kind)

  t.test('a whole day of flagged slots is stored in under 2 KB, inside its page', async t => {
    const s = seedStore(t, await openStore(join(t.testdir(), 'store')))
    const flags = openInstructionFlags(s.store)
    await flags.put(ID, [{ siteId: SITE, flag: wholeDay() }])
    const bytes = instructionTree(s.store).get(flagKey(ID, SITE))!
    // LMDB keeps a value inline in a 4 KB page up to ~2,000 bytes with its key.
    t.ok(bytes.byteLength < 1_800, `stored as ${bytes.byteLength} bytes`)
  })

  t.test('slots read back with their instants and kW to the watt', async t => {
    const s = seedStore(t, await openStore(join(t.testdir(), 'store')))
    const flags = openInstructionFlags(s.store)
    await flags.put(ID, [{ siteId: SITE, flag: wholeDay() }])
    const read = flags.get(ID, SITE)!
    t.equal(read.infeasibleSlots.length, 100)
    t.same(read.infeasibleSlots[0], { startUtc: '2026-11-21T23:00:00Z', floorKw: 240.48, availableKw: 123.45 })
    t.same(read.infeasibleSlots[99], { startUtc: '2026-11-22T23:45:00Z', floorKw: 241.47, availableKw: 222.45 })
    t.same(read.day, { programmedKwh: 6012, needsKwh: 900, availableKwh: 3086.25 })
    t.equal(flags.get(ID, 'SITE-2'), undefined, 'a site with no flag has none')
  })

  t.test('a flag goes with its instruction when retention prunes it, and only then', async t => {
    const s = seedStore(t, await openStore(join(t.testdir(), 'store')))
    const flags = openInstructionFlags(s.store)
    const later = 'ProgrammeSoutirage-2026-11-24-rev-20261123T120000Z'
    await flags.put(ID, [{ siteId: SITE, flag: wholeDay() }])
    await flags.put(later, [{ siteId: SITE, flag: wholeDay() }])
    await openInstructions(s.store).prune('2026-11-23')
    t.equal(flags.get(ID, SITE), undefined)
    t.ok(flags.get(later, SITE))
  })
})
