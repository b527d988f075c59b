/**
 * The admin forms' refusals in French. The rules are `auth/company-rules.ts`'s (shared
 * with `epx company`, which words them in English for a terminal); this door words
 * each problem as its own, from the same checks.
 * @module
 */
import { companyIdProblem, readCertSubject, readPerimeter } from '../../auth/company-rules.ts'
import type { CompanyRecord } from '../../store/companies.ts'
import { isPrm } from '../../contract/ids.ts'
import type { Site } from '../../host/contract.ts'

export function companyIdProblemFr (id: string): string | undefined {
  return companyIdProblem(id) === undefined
    ? undefined
    : `Identifiant « ${id} » invalide : de 2 à 63 caractères, minuscules, chiffres ou « - », en commençant par une lettre ou un chiffre.`
}

/** The perimeter a form field gives, or the problem with it in French. */
export function readPerimeterFr (values: readonly string[]): { perimeter: CompanyRecord['perimeter'] } | { problem: string } {
  const read = readPerimeter(values)
  if (!('problem' in read)) return read
  const items = values.flatMap(v => v.split(/[\s,]+/)).filter(Boolean)
  const bad = items.filter(s => s !== 'all' && !isPrm(s))
  if (items.includes('all')) return { problem: 'Périmètre invalide : « all » (tous les sites) ou une liste d\'identifiants PRM, pas les deux.' }
  if (items.length === 0) return { problem: 'Périmètre invalide : indiquez « all » ou au moins un identifiant PRM.' }
  if (bad.length) {
    const many = bad.length > 1
    return { problem: `Périmètre invalide : ${bad.map(s => `« ${s} »`).join(', ')} ${many ? 'ne sont pas des identifiants' : "n'est pas un identifiant"} de site (PRM suivi de 14 chiffres).` }
  }
  return { problem: 'Périmètre invalide.' }
}

/** The certificate subject a form field gives, or the problem with it in French. */
export function readCertSubjectFr (given: string | undefined, id: string, name: string): { subject: string } | { problem: string } {
  const read = readCertSubject(given, id, name)
  return 'problem' in read
    ? { problem: `Sujet de certificat invalide : attendu « CLÉ=valeur » séparés par des virgules, avec CLÉ parmi CN, O, OU, C, L, ST (par exemple CN=${id || 'acme-bsp'},O=ACME).` }
    : read
}

/** A warning for perimeter sites the solver does not manage (kept: the solver may add them later). */
export function unmanagedWarning (perimeter: CompanyRecord['perimeter'], managed: readonly Site[]): string | undefined {
  if (perimeter === 'all') return undefined
  const known = new Set(managed.map(s => s.site_id))
  const unknown = perimeter.filter(id => !known.has(id))
  if (unknown.length === 0) return undefined
  const many = unknown.length > 1
  return `Attention : le solveur ne gère pas ${many ? 'les sites' : 'le site'} ${unknown.join(', ')}. ` +
    `${many ? 'Ils restent' : 'Il reste'} dans le périmètre, mais aucun besoin n'y sera publié tant que le solveur ne ${many ? 'les' : 'le'} gère pas : vérifiez l'identifiant.`
}
