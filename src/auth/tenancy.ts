/**
 * Tenancy rules (DECISIONS.md "Authentication and tenancy"): which certificate a
 * company is bound to, and which sites a caller may see and program.
 * @module
 */
import { pinsOf, type CompanyRecord } from '../store/companies.ts'
import { canonicalSubject } from './subject.ts'
import { BoundedCache } from '../bounded-cache.ts'

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
  // With pins the subject is not enough: a leaked certificate of the right subject is
  // shut out by pinning its successor and unpinning it (DECISIONS.md, check 3).
  const pins = pinsOf(company)
  if (pins.length > 0) {
    const presented = normalizeFingerprint(cert.fingerprint256)
    if (!pins.some(p => normalizeFingerprint(p) === presented)) {
      return `the client certificate (SHA-256 fingerprint ${cert.fingerprint256}) is not one pinned for company ${company.id}; ` +
        'use a pinned certificate, or ask the service operator to pin this one (epx company pin-cert)'
    }
  }
  return undefined
}

/** `ab:cd…`, `ABCD…` and `AB:CD:…` are the same fingerprint. */
export function normalizeFingerprint (fp: string): string {
  return fp.replace(/:/g, '').toUpperCase()
}

/** A SHA-256 fingerprint typed by an operator, in node's `AB:CD:…` form; undefined if it is not one. */
export function parseFingerprint256 (text: string): string | undefined {
  const hex = text.trim().replace(/^sha256[:=]/i, '').replace(/[:\s]/g, '').toUpperCase()
  if (!/^[0-9A-F]{64}$/.test(hex)) return undefined
  return hex.match(/../g)!.join(':')
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

const canonicalCache = new BoundedCache<string, string | null>(1000)

/** Stored subjects are few and stable; parse each spelling once. */
function canonicalOrNull (subject: string): string | null {
  return canonicalCache.getOrCompute(subject, parseSubject)
}

function parseSubject (subject: string): string | null {
  try { return canonicalSubject(subject) } catch { return null }
}
