/**
 * Certificate revocation lists (RFC 5280 §5): parse a PEM CRL file and check it was
 * issued and signed by a CA of the client CA file, so a forged or foreign list can
 * neither shut companies out nor let a revoked certificate back in.
 *
 * Parsing is @peculiar/asn1-x509 (the ASN.1 layer of @peculiar/x509); the signature is
 * checked by node's crypto. Not @peculiar/x509 itself: it needs a global
 * `Reflect.getMetadata` polyfill (tsyringe) that a plugin must not install in its host.
 * @module
 */
import { X509Certificate, verify as verifySignature } from 'node:crypto'
import type { CertificateList } from '@peculiar/asn1-x509'
import { canonicalSubject } from './subject.ts'

/**
 * The ASN.1 parser, loaded on first use: a service without `api.tls.crlFile` never
 * loads it (the built plugin's static imports stay what every daemon needs).
 */
let asn1: Promise<{
  AsnConvert: typeof import('@peculiar/asn1-schema').AsnConvert
  Certificate: typeof import('@peculiar/asn1-x509').Certificate
  CertificateList: typeof import('@peculiar/asn1-x509').CertificateList
}> | undefined
const loadAsn1 = () => asn1 ??= Promise.all([import('@peculiar/asn1-schema'), import('@peculiar/asn1-x509')])
  .then(([schema, x509]) => ({ AsnConvert: schema.AsnConvert, Certificate: x509.Certificate, CertificateList: x509.CertificateList }))

/** What one verified CRL file says. */
export interface RevocationList {
  /** `<issuer key>\n<serial>` of every revoked certificate (`revocationKey`). */
  readonly revoked: ReadonlySet<string>
  readonly count: number
  /** Earliest nextUpdate of the file's CRLs (undefined: none stated). */
  readonly nextUpdate?: Date
}

/** Signature algorithms a CRL may use → node's digest name (null: the key decides, Ed25519). */
const SIGNATURE_ALGORITHMS: Readonly<Record<string, string | null>> = {
  '1.2.840.113549.1.1.11': 'sha256', '1.2.840.113549.1.1.12': 'sha384', '1.2.840.113549.1.1.13': 'sha512',
  '1.2.840.10045.4.3.2': 'sha256', '1.2.840.10045.4.3.3': 'sha384', '1.2.840.10045.4.3.4': 'sha512',
  '1.3.101.112': null,
}

const PEM_BLOCK = (label: string) => new RegExp(`-----BEGIN ${label}-----[\\s\\S]+?-----END ${label}-----`, 'g')

/** Serials compare as node prints them, without leading zeros (DER may add a 00 byte). */
export function normalizeSerial (hex: string): string {
  return hex.toUpperCase().replace(/^0+(?=.)/, '')
}

/** The key a revoked certificate is found by: its issuer (canonical DN) and its serial. */
export function revocationKey (issuer: string, serialHex: string): string {
  return `${issuer}\n${normalizeSerial(serialHex)}`
}

interface TrustedCa { readonly name: Buffer; readonly key: X509Certificate['publicKey']; readonly issuerKey: string }

/**
 * Parses and verifies every CRL of `crlPem` against the CAs of `caPem`; throws an Error
 * whose message says what is wrong (the caller names the file).
 */
export async function readRevocationList (crlPem: string, caPem: string): Promise<RevocationList> {
  const { AsnConvert, Certificate, CertificateList } = await loadAsn1()
  const cas = trustedCas(caPem, AsnConvert, Certificate)
  const blocks = crlPem.match(PEM_BLOCK('X509 CRL')) ?? []
  if (blocks.length === 0) throw new Error('no "-----BEGIN X509 CRL-----" block found; the file must be a PEM CRL')
  const revoked = new Set<string>()
  let nextUpdate: Date | undefined
  for (const [i, block] of blocks.entries()) {
    const where = blocks.length > 1 ? `CRL #${i + 1}: ` : ''
    let crl: CertificateList
    try {
      crl = AsnConvert.parse(pemBody(block), CertificateList)
    } catch (err) {
      throw new Error(`${where}not a valid X.509 CRL (${(err as Error).message})`)
    }
    const tbs = crl.tbsCertList
    const issuerDer = Buffer.from(AsnConvert.serialize(tbs.issuer))
    const ca = cas.find(c => c.name.equals(issuerDer))
    if (!ca) throw new Error(`${where}its issuer is not a CA of the client CA file; use the CRL that this client CA publishes`)
    const algorithm = crl.signatureAlgorithm.algorithm
    if (!(algorithm in SIGNATURE_ALGORITHMS) || tbs.signature.algorithm !== algorithm) {
      throw new Error(`${where}unsupported signature algorithm ${algorithm} (RSA or ECDSA with SHA-256/384/512, or Ed25519)`)
    }
    const signed = Buffer.from(crl.tbsCertListRaw ?? AsnConvert.serialize(tbs))
    let valid = false
    try {
      valid = verifySignature(SIGNATURE_ALGORITHMS[algorithm]!, signed, ca.key, Buffer.from(crl.signature))
    } catch { valid = false }
    if (!valid) throw new Error(`${where}its signature does not verify with the client CA's key; the file is damaged or was not signed by this CA`)
    for (const entry of tbs.revokedCertificates ?? []) {
      revoked.add(revocationKey(ca.issuerKey, Buffer.from(entry.userCertificate).toString('hex')))
    }
    const next = tbs.nextUpdate?.getTime()
    if (next && (!nextUpdate || next < nextUpdate)) nextUpdate = next
  }
  return { revoked, count: revoked.size, ...(nextUpdate ? { nextUpdate } : {}) }
}

function trustedCas (caPem: string, AsnConvert: typeof import('@peculiar/asn1-schema').AsnConvert,
  Certificate: typeof import('@peculiar/asn1-x509').Certificate): TrustedCa[] {
  return (caPem.match(PEM_BLOCK('CERTIFICATE')) ?? []).map(block => {
    const x509 = new X509Certificate(block)
    const parsed = AsnConvert.parse(x509.raw, Certificate)
    return {
      name: Buffer.from(AsnConvert.serialize(parsed.tbsCertificate.subject)),
      key: x509.publicKey,
      // Spelled as a peer certificate's issuer will be (`getPeerCertificate().issuer`).
      issuerKey: canonicalSubject(x509.toLegacyObject().subject as unknown as Record<string, string | string[]>),
    }
  })
}

function pemBody (block: string): Buffer {
  return Buffer.from(block.replace(/-----(BEGIN|END) X509 CRL-----/g, '').replace(/\s+/g, ''), 'base64')
}
