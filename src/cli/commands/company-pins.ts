/**
 * `epx company pin-cert|unpin-cert`: the SHA-256 fingerprints a company's client
 * certificate must have one of (DECISIONS.md "Authentication and tenancy", check 3).
 * Several may be pinned at once, so a renewal has no gap: pin the new certificate, let
 * the BSP switch, unpin the old one. A change applies to the next request, on open
 * connections too (the write moves the store generation).
 * @module
 */
import { X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { canonicalSubject } from '../../auth/subject.ts'
import { normalizeFingerprint, parseFingerprint256 } from '../../auth/tenancy.ts'
import { openCompanies, pinsOf, type CompanyRecord } from '../../store/companies.ts'
import { cliActor, openAudit } from '../../store/audit.ts'
import type { Store } from '../../store/open-store.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import type { Command } from '../io.ts'
import { withStore } from '../settings.ts'
import { checkCompanyId } from './companies.ts'

/** What FILE|FINGERPRINT names: a fingerprint, and the certificate's subject when a file was given. */
interface Named { readonly fingerprint: string; readonly subject?: string }

function namedCertificate (arg: string, spec: CommandSpec): Named {
  const typed = parseFingerprint256(arg)
  if (typed) return { fingerprint: typed }
  let pem: string
  try {
    pem = readFileSync(arg, 'utf8')
  } catch (err) {
    throw usageError(spec, `'${arg}' is neither a SHA-256 fingerprint (64 hex digits, colons allowed) nor a readable file: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  try {
    const x509 = new X509Certificate(pem)
    let subject: string | undefined
    try { subject = canonicalSubject(x509.toLegacyObject().subject as unknown as Record<string, string | string[]>) } catch { subject = undefined }
    return { fingerprint: x509.fingerprint256, subject }
  } catch {
    throw usageError(spec, `'${arg}' is not a PEM certificate ("-----BEGIN CERTIFICATE-----"); give the company's client certificate or its SHA-256 fingerprint`)
  }
}

const same = (a: string, b: string) => normalizeFingerprint(a) === normalizeFingerprint(b)

function describePins (pins: readonly string[]): string {
  return pins.length === 0 ? 'no pins: the bound subject alone decides' : `${pins.length} pinned: ${pins.join(', ')}`
}

const pinSpec: CommandSpec = {
  usage: 'epx company pin-cert ID FILE|FINGERPRINT',
  summary: 'pin a client certificate (SHA-256 fingerprint) to a company',
  about: [
    'Pins a client certificate to a company: once a company has pins, only a certificate',
    'with its bound subject AND one of the pinned SHA-256 fingerprints passes (else 403',
    'MTLS_REQUIRED), from the next request on. FILE: a PEM certificate; or give its',
    'fingerprint (AB:CD:… or 64 hex digits). Pin the renewed certificate before unpinning',
    'the old one: several pins may be in force at once.',
  ].join('\n'),
  positionals: ['ID', 'FILE|FINGERPRINT'],
}

const pin = defineCommand(pinSpec, async (args, io) => {
  const id = checkCompanyId(args.positionals[0]!, pinSpec)
  const named = namedCertificate(args.positionals[1]!, pinSpec)
  let already = false
  const company = await withStore(io.dataDir, async store => rebound(store, id, 'pinned', named.fingerprint, await openCompanies(store).setPins(id, pins => {
    already = pins.some(p => same(p, named.fingerprint))
    return already ? pins : [...pins, named.fingerprint]
  })))
  io.out(already ? `${named.fingerprint} was already pinned for company ${id}` : `pinned ${named.fingerprint} for company ${id}`)
  io.out(`  ${describePins(pinsOf(company))}`)
  if (named.subject !== undefined && named.subject !== canonicalOrSelf(company)) {
    io.err(`epx: warning: the certificate's subject (${named.subject}) is not the one bound to company ${id} ` +
      `(${company.certSubject}); it will be refused until the binding matches`)
  }
})

const unpinSpec: CommandSpec = {
  usage: 'epx company unpin-cert ID FILE|FINGERPRINT',
  summary: 'remove a pinned client certificate from a company',
  about: [
    'Removes a pinned certificate: it gets 403 MTLS_REQUIRED from the next request on,',
    'open connections included. With no pin left, the bound subject alone decides again.',
  ].join('\n'),
  positionals: ['ID', 'FILE|FINGERPRINT'],
}

const unpin = defineCommand(unpinSpec, async (args, io) => {
  const id = checkCompanyId(args.positionals[0]!, unpinSpec)
  const named = namedCertificate(args.positionals[1]!, unpinSpec)
  let found = false
  const company = await withStore(io.dataDir, async store => rebound(store, id, 'unpinned', named.fingerprint, await openCompanies(store).setPins(id, pins => {
    found = pins.some(p => same(p, named.fingerprint))
    return pins.filter(p => !same(p, named.fingerprint))
  })))
  io.out(found ? `unpinned ${named.fingerprint} from company ${id}` : `${named.fingerprint} was not pinned for company ${id}`)
  io.out(`  ${describePins(pinsOf(company))}`)
})

/** The audit record of a change of a company's certificate binding; returns the company. */
async function rebound (store: Store, id: string, change: 'pinned' | 'unpinned', fingerprint: string, company: CompanyRecord): Promise<CompanyRecord> {
  await openAudit(store).append({ actor: cliActor(), action: 'company.rebound', subject: id, outcome: 'ok', details: { [change]: fingerprint, pins: pinsOf(company).length } }, Date.now())
  return company
}

function canonicalOrSelf (c: CompanyRecord): string {
  try { return canonicalSubject(c.certSubject) } catch { return c.certSubject }
}

export const pinCommands: readonly Command[] = [pin, unpin]
