/**
 * Certificate revocation lists for tests, made at test time and signed by a test CA.
 *
 *   const pem = await makeCrl({ caCertPem, caKeyPem, revokedSerials: [serialOf(cert.certPem)], nextUpdate? })
 *   serialOf(certPem) → the serial as node prints it (`X509Certificate#serialNumber`)
 *
 * - `revokedSerials`: hex serials (any case, leading zeros or not).
 * - `thisUpdate` defaults to a minute ago (real clock); `nextUpdate` to 7 days after
 *   it (`null`: no nextUpdate at all).
 * - `signWith`: sign with another CA's key while naming `caCertPem` as issuer (a forged list).
 * Built with @peculiar/asn1-x509 and signed with node's crypto (sha256WithRSAEncryption),
 * like epx reads them (src/auth/crl.ts).
 * @module
 */
import { createPrivateKey, sign, X509Certificate } from 'node:crypto'
import { AsnConvert } from '@peculiar/asn1-schema'
import { AlgorithmIdentifier, Certificate, CertificateList, RevokedCertificate, TBSCertList, Time, Version } from '@peculiar/asn1-x509'

export interface MakeCrlOptions {
  readonly caCertPem: string
  readonly caKeyPem: string
  readonly revokedSerials: readonly string[]
  readonly thisUpdate?: Date
  readonly nextUpdate?: Date | null
  readonly signWith?: { readonly keyPem: string }
}

const SHA256_WITH_RSA = '1.2.840.113549.1.1.11'

export async function makeCrl (opts: MakeCrlOptions): Promise<string> {
  const ca = AsnConvert.parse(new X509Certificate(opts.caCertPem).raw, Certificate)
  const thisUpdate = opts.thisUpdate ?? new Date(Date.now() - 60_000)
  const nextUpdate = opts.nextUpdate === undefined ? new Date(thisUpdate.getTime() + 7 * 86_400_000) : opts.nextUpdate
  const algorithm = () => new AlgorithmIdentifier({ algorithm: SHA256_WITH_RSA, parameters: null })
  const tbs = new TBSCertList({
    version: Version.v2,
    signature: algorithm(),
    issuer: ca.tbsCertificate.subject,
    thisUpdate: new Time(thisUpdate),
    ...(nextUpdate ? { nextUpdate: new Time(nextUpdate) } : {}),
    ...(opts.revokedSerials.length > 0
      ? {
          revokedCertificates: opts.revokedSerials.map(s => new RevokedCertificate({
            userCertificate: serialBytes(s), revocationDate: new Time(thisUpdate),
          })),
        }
      : {}),
  })
  const tbsDer = Buffer.from(AsnConvert.serialize(tbs))
  const signature = sign('sha256', tbsDer, createPrivateKey(opts.signWith?.keyPem ?? opts.caKeyPem))
  const crl = new CertificateList({ tbsCertList: tbs, signatureAlgorithm: algorithm(), signature: new Uint8Array(signature).buffer })
  const b64 = Buffer.from(AsnConvert.serialize(crl)).toString('base64')
  return `-----BEGIN X509 CRL-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END X509 CRL-----\n`
}

/** The serial of a PEM certificate, as node prints it. */
export function serialOf (certPem: string): string {
  return new X509Certificate(certPem).serialNumber
}

/** A positive DER INTEGER's content bytes: a 00 in front when the high bit is set. */
function serialBytes (hex: string): ArrayBuffer {
  let h = hex.replace(/^0+(?=.)/, '')
  if (h.length % 2) h = '0' + h
  const bytes = Buffer.from(h, 'hex')
  const der = bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes
  return new Uint8Array(der).buffer
}
