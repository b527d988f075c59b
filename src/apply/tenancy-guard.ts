/**
 * A programme read against a perimeter that changed before it was saved (DECISIONS.md
 * "Tenure: who holds a site, and when"): the door checked the caller's perimeter as it
 * stood when the request arrived; the operator may narrow it, or give a site to another
 * company, before the save commits. Inside the save's write the store generation is read
 * (one small read); only if it moved is the company's record read again, and a site it no
 * longer holds refuses the programme, as the door would have.
 * @module
 */
import { EpxError } from '../errors.ts'
import type { InstructionBatch } from '../contract/instruction.ts'
import type { Store } from '../store/open-store.ts'
import { openCompanies } from '../store/companies.ts'
import { openGeneration } from '../store/generation.ts'

export interface TenancyGuard {
  /** Before the programme is read: what the save's check compares with. */
  begin(): number
  /** Inside the save's write: the refusal if the company no longer holds a site of `batch`. */
  refusal(since: number, companyId: string, batch: Pick<InstructionBatch, 'siteIds'>): EpxError | undefined
}

export function tenancyGuard (store: Store): TenancyGuard {
  const generation = openGeneration(store)
  const companies = openCompanies(store)
  return {
    begin: () => generation.read(),
    refusal (since, companyId, batch) {
      if (generation.read() === since) return undefined
      const c = companies.get(companyId)
      if (!c) return undefined   // no record to check against (a caller the tests make up)
      const held = c?.status === 'active' ? (c.perimeter === 'all' ? undefined : new Set(c.perimeter)) : new Set<string>()
      if (held === undefined) return undefined
      const details: Record<string, string> = {}
      batch.siteIds.forEach((siteId, i) => {
        if (!held.has(siteId)) details[`/sites/${i}/site_id`] = `site ${siteId} left your company's perimeter while the programme was received; remove it`
      })
      const n = Object.keys(details).length
      if (n === 0) return undefined
      return new EpxError('INVALID_PROGRAMME_SOUTIRAGE_REQUEST', [`${n} site(s) of the programme left your company's perimeter while it was received; nothing was stored`], { details })
    },
  }
}
