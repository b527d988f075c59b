/**
 * Tenancy rules (DECISIONS.md "Authentication and tenancy"): which certificate a
 * company is bound to, and which sites a caller may see and program.
 * @module
 */
import type { CompanyRecord } from '../store/companies.ts'
import { canonicalSubject } from './subject.ts'

/** The identity a TLS connection proved (see `auth/client-cert.ts`). */
export interface CertIdentity {
  readonly subject: string | null
  readonly fingerprint256: string
}

/** Why a certificate does not match a company, or undefined when it does. */
export function certificateMismatch (company: CompanyRecord, cert: CertIdentity): string | undefined {
  const bound = canonicalOrNull(company.certSubject)
  // The expected subject is not echoed: a caller learns what to fix, not another binding.
  if (bound === null || cert.subject === null || cert.subject !== bound) {
    return `the client certificate subject (${cert.subject ?? 'unusable'}) is not the one bound to company ${company.id}; ` +
      'use the certificate issued to your company, or ask the service to update the binding'
  }
  if (company.certFingerprint256 && normalizeFingerprint(company.certFingerprint256) !== normalizeFingerprint(cert.fingerprint256)) {
    return `the client certificate fingerprint does not match the one pinned for company ${company.id}; ` +
      'use the pinned certificate, or ask the service to update the pin after a renewal'
  }
  return undefined
}

/** `ab:cd…`, `ABCD…` and `AB:CD:…` are the same fingerprint. */
export function normalizeFingerprint (fp: string): string {
  return fp.replace(/:/g, '').toUpperCase()
}

/**
 * Whether a site lies in the caller's perimeter. The inbound door answers 400 for a
 * site outside it, the outbound door 404 exactly as "not published" (DECISIONS.md).
 */
export function inPerimeter (caller: { readonly perimeter: 'all' | readonly string[] }, siteId: string): boolean {
  const p = caller.perimeter
  if (p === 'all') return true
  if (p.length < 64) return p.includes(siteId)
  // A long list (a programme of 1,000 sites against a perimeter of 5,000) is indexed
  // once, for as long as the company record that holds it lives.
  let set = perimeterSets.get(p)
  if (!set) perimeterSets.set(p, set = new Set(p))
  return set.has(siteId)
}

const perimeterSets = new WeakMap<readonly string[], Set<string>>()

const canonicalCache = new Map<string, string | null>()

/** Stored subjects are few and stable; parse each spelling once. */
function canonicalOrNull (subject: string): string | null {
  let c = canonicalCache.get(subject)
  if (c === undefined) {
    try { c = canonicalSubject(subject) } catch { c = null }
    if (canonicalCache.size > 1000) canonicalCache.clear()
    canonicalCache.set(subject, c)
  }
  return c
}
