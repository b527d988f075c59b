import t from 'tap'
import { join } from 'node:path'
import { bytesText, storageQuota } from '../../src/apply/quota.ts'
import { openStore } from '../../src/store/open-store.ts'
import type { Caller } from '../../src/auth/caller.ts'

// The storage quota's rule (DECISIONS.md "Rate limits and quotas"): the day counted is the
// Paris day of reception, whatever its length; Retry-After runs to the next Paris
// midnight; a company's own quota replaces the configuration's.

const acme: Caller = { companyId: 'acme', tokenId: 't1', certFingerprint256: 'AB', perimeter: 'all' }

t.test('the day of reception is the Paris day, and Retry-After runs to its end, DST days included', async t => {
  const store = openStore(join(t.testdir(), 'store'))
  t.teardown(() => store.close())
  const quota = storageQuota(store, 100)
  const refusal = async (at: string) => {
    const err = await store.writeDurable(() => quota.charge(acme, 150, new Date(at)))
    return { retryAfter: err?.headers?.['retry-after'], message: err?.message }
  }
  // 00:30 in Paris on 29 March 2026 (23:30 UTC the day before): a day of 23 hours, ending at 22:00 UTC.
  t.equal((await refusal('2026-03-28T23:30:00Z')).retryAfter, String(22.5 * 3600), 'spring: 22 h 30 min left')
  t.match((await refusal('2026-03-28T23:30:00Z')).message, /today \(2026-03-29, Europe\/Paris\)/, 'the Paris date, not the UTC one')
  // 00:30 in Paris on 25 October 2026 (22:30 UTC the day before): 25 hours, ending at 23:00 UTC.
  t.equal((await refusal('2026-10-24T22:30:00Z')).retryAfter, String(24.5 * 3600), 'autumn: 24 h 30 min left')
  t.equal((await refusal('2026-11-21T22:59:59.500Z')).retryAfter, '1', 'half a second before midnight: 1 s at least')

  t.equal(await store.writeDurable(() => quota.charge(acme, 60, new Date('2026-11-21T12:00:00Z'))), undefined, 'under the quota: counted')
  t.equal(quota.dayOf({ id: 'acme' }, new Date('2026-11-21T22:59:00Z')).used.bytes, 60)
  t.equal(quota.dayOf({ id: 'acme' }, new Date('2026-11-21T23:00:00Z')).used.bytes, 0, 'midnight in Paris: a new day')
  t.throws(() => quota.beforeBody(acme, 41, new Date('2026-11-21T12:00:00Z')), { code: 'QUOTA_EXCEEDED' }, 'a declared length that would cross it')
  t.doesNotThrow(() => quota.beforeBody(acme, 40, new Date('2026-11-21T12:00:00Z')), 'one that lands on it')
  t.doesNotThrow(() => quota.beforeBody(acme, undefined, new Date('2026-11-21T12:00:00Z')), 'an unknown length: the save decides')
  t.doesNotThrow(() => quota.beforeBody({ ...acme, quotaBytesPerDay: 1000 }, 900, new Date('2026-11-21T12:00:00Z')), 'its own quota in place of the configuration\'s')
  t.same(quota.dayOf({ id: 'acme', quotaBytesPerDay: 1000 }, new Date('2026-11-21T12:00:00Z')),
    { date: '2026-11-21', used: { bytes: 60, programmes: 1 }, limit: 1000, own: true, resetsAtMs: Date.parse('2026-11-21T23:00:00Z') })
})

t.test('a quota that cannot be read is the store\'s failure, 503 NO_STORE (DECISIONS.md "Robustness"), never a programme let through', async t => {
  const store = openStore(join(t.testdir(), 'store'))
  t.teardown(() => store.close())
  const quota = storageQuota(store, 100)
  store.faults.unavailable = true
  t.throws(() => quota.beforeBody(acme, 10, new Date('2026-11-21T12:00:00Z')), { code: 'NO_STORE', status: 503 })
  store.faults.unavailable = false
  t.doesNotThrow(() => quota.beforeBody(acme, 10, new Date('2026-11-21T12:00:00Z')), 'read again once the store answers')
})

t.test('bytes in words: the exact count, and its unit beside it', async t => {
  t.equal(bytesText(512), '512 bytes')
  t.equal(bytesText(1536), '1536 bytes (1.5 KiB)')
  t.equal(bytesText(536870912), '536870912 bytes (512 MiB)')
  t.equal(bytesText(3 * 2 ** 30 + 1), '3221225473 bytes (3.0 GiB)')
})
