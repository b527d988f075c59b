/**
 * What makes a company record valid when an operator writes one: the id, the perimeter
 * text and the certificate subject. The one home of these rules, shared by
 * `epx company ...` and the console's admin pages; each door words the problem as its
 * own (a usage error, a form message).
 * @module
 */
import { isPrm } from '../contract/ids.ts'
import { COMPANY_ID, type CompanyRecord } from '../store/companies.ts'
import { canonicalSubject } from './subject.ts'

export function companyIdProblem (id: string): string | undefined {
  return COMPANY_ID.test(id)
    ? undefined
    : `invalid company id '${id}': use 2 to 63 lowercase letters, digits or "-", starting with a letter or digit`
}

/** Perimeter text ("all", or PRM ids separated by commas or spaces; deduplicated, in order), or the problem with it. */
export function readPerimeter (values: readonly string[]): { perimeter: CompanyRecord['perimeter'] } | { problem: string } {
  const items = values.flatMap(v => v.split(/[\s,]+/)).filter(Boolean)
  if (items.length === 0 && values.length === 0) return { perimeter: 'all' }
  if (items.length === 1 && items[0] === 'all') return { perimeter: 'all' }
  if (items.includes('all')) return { problem: 'the perimeter is either "all" or a list of PRM ids, not both' }
  if (items.length === 0) return { problem: 'the perimeter needs "all" or at least one PRM id' }
  const bad = items.filter(s => !isPrm(s))
  if (bad.length) return { problem: `invalid site id(s) ${bad.map(s => `'${s}'`).join(', ')}: a site id is PRM followed by 14 digits` }
  return { perimeter: [...new Set(items)] }
}

/** The canonical subject a company's certificate must carry (default `CN=<id>,O=<name>`), or the problem with it. */
export function readCertSubject (given: string | undefined, id: string, name: string): { subject: string } | { problem: string } {
  try {
    return { subject: canonicalSubject(given ?? `CN=${id},O=${name}`) }
  } catch (err) {
    return { problem: (err as Error).message }
  }
}
