import t from 'tap'
import { decodeInstruction, encodeInstructionRecords, rangeAt, siteRecord, slotRange, supersedes } from '../../src/contract/instruction.ts'

const head = {
  instructionId: 'ProgrammeSoutirage-2026-11-22-rev-20261121T120000Z', targetDate: '2026-11-22',
  emittedAt: '2026-11-21T12:00:00Z', emittedBy: 'ops', receivedAt: '2026-11-21T12:00:01.000Z',
  companyId: 'acme', tokenId: 'tok_1', certFingerprint256: 'AB:CD', slotDurationSecs: 900,
}
const at = Date.parse('2026-11-21T23:00:00Z')

t.test('rangeAt: item i of back-to-back items runs from where item i - 1 ends (0 for the first) to its own end', async t => {
  const ends = Uint32Array.of(2, 2, 5)
  t.same([0, 1, 2].map(i => rangeAt(ends, i)), [[0, 2], [2, 2], [2, 5]], 'an empty item is an empty range')
})

t.test('a batch\'s sites: slotRange and siteRecord read back what encodeInstructionRecords wrote, site by site', async t => {
  const starts = Float64Array.of(at, at + 900_000, at)
  const kwh = Float64Array.of(1, 2, 3)
  const slotEnds = Uint32Array.of(2, 3)
  const sites = [{ siteId: 'PRM00000000000001', siteName: 'one' }, { siteId: 'PRM00000000000002', siteName: 'two' }]
  const { records, recordEnds } = encodeInstructionRecords(head, sites, starts, kwh, slotEnds)
  const batch = { records, recordEnds, slotEnds }
  t.same(slotRange(batch, 1), [2, 3])
  const second = decodeInstruction(siteRecord(batch, 1))
  t.equal(second.siteId, 'PRM00000000000002')
  t.same(second.slots, [['2026-11-21T23:00:00Z', 3]])
  t.same(decodeInstruction(siteRecord(batch, 0)).slots, [['2026-11-21T23:00:00Z', 1], ['2026-11-21T23:15:00Z', 2]])
})

t.test('supersedes: a later emitted_at takes the place of an earlier one, to the nanosecond; an equal one does not', async t => {
  const ms = Date.parse('2026-11-21T12:00:00.250Z')
  t.ok(supersedes({ emittedAtMs: ms + 1 }, { emittedAtMs: ms }))
  t.notOk(supersedes({ emittedAtMs: ms }, { emittedAtMs: ms + 1 }))
  t.ok(supersedes({ emittedAtMs: ms, emittedAtNanos: 1 }, { emittedAtMs: ms }), '1 ns later, within the millisecond')
  t.notOk(supersedes({ emittedAtMs: ms, emittedAtNanos: 0 }, { emittedAtMs: ms }), 'a record without nanoseconds is the same instant')
  t.notOk(supersedes({ emittedAtMs: ms, emittedAtNanos: 5 }, { emittedAtMs: ms, emittedAtNanos: 5 }), 'the same instant is a re-send, not a supersession')
})
