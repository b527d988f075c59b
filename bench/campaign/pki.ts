/**
 * The certificates the test helpers do not make (test/helpers/certs.ts makes the valid,
 * other-CA and self-signed ones): an expired client certificate and a CRL of the client
 * CA, both signed with @peculiar/x509 over WebCrypto with the CA's own key.
 * @module
 */
import { createPrivateKey, webcrypto } from 'node:crypto'
// First: @peculiar/x509's dependency injection needs the Reflect metadata API as it loads.
import './reflect-metadata.ts'
import * as x509 from '@peculiar/x509'
import type { KeyPairPem } from '../../test/helpers/certs.ts'

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0])
/** WebCrypto's key type as @peculiar/x509 names it (no DOM lib in this project). */
type SigningKey = Parameters<typeof x509.X509CrlGenerator.create>[0]['signingKey']
const RSA = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }

/** node-forge writes PKCS#1 PEM; WebCrypto reads PKCS#8. */
async function signingKey (keyPem: string): Promise<SigningKey> {
  const der = createPrivateKey(keyPem).export({ type: 'pkcs8', format: 'der' })
  return await webcrypto.subtle.importKey('pkcs8', der, RSA, false, ['sign']) as unknown as SigningKey
}

/** The hexadecimal serial number of a PEM certificate (as a CRL lists it). */
export const serialOf = (certPem: string): string => new x509.X509Certificate(certPem).serialNumber

/** A client certificate `subject` issued by `ca` that expired a month ago. */
export async function expiredClientCert (subject: string, ca: KeyPairPem): Promise<KeyPairPem> {
  const keys = await webcrypto.subtle.generateKey({ ...RSA, modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) }, true, ['sign', 'verify']) as webcrypto.CryptoKeyPair
  const caCert = new x509.X509Certificate(ca.certPem)
  const day = 86_400_000
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '02' + Date.now().toString(16),
    subject, issuer: caCert.subjectName,
    notBefore: new Date(Date.now() - 60 * day), notAfter: new Date(Date.now() - 30 * day),
    publicKey: keys.publicKey as unknown as SigningKey, signingKey: await signingKey(ca.keyPem), signingAlgorithm: RSA,
    extensions: [
      new x509.BasicConstraintsExtension(false),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
    ],
  })
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64')
  return { certPem: cert.toString('pem'), keyPem: `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n` }
}

/** A PEM CRL of `ca` revoking `revokedSerials` (hex), valid until `nextUpdate` (default: a week). */
export async function makeCrl (o: { caCertPem: string; caKeyPem: string; revokedSerials: readonly string[]; nextUpdate?: Date }): Promise<string> {
  const caCert = new x509.X509Certificate(o.caCertPem)
  const crl = await x509.X509CrlGenerator.create({
    issuer: caCert.subjectName,
    thisUpdate: new Date(Date.now() - 60_000),
    nextUpdate: o.nextUpdate ?? new Date(Date.now() + 7 * 86_400_000),
    // A reason on each entry: without one the library writes an empty (invalid) entry
    // extension list, which OpenSSL refuses to load.
    entries: o.revokedSerials.map(serialNumber => ({ serialNumber, revocationDate: new Date(Date.now() - 60_000), reason: x509.X509CrlReason.keyCompromise })),
    signingAlgorithm: RSA, signingKey: await signingKey(o.caKeyPem),
  })
  // OpenSSL (and so node:tls's `crl` option) reads the `X509 CRL` PEM label.
  const b64 = Buffer.from(crl.rawData).toString('base64').match(/.{1,64}/g)!.join('\n')
  return `-----BEGIN X509 CRL-----\n${b64}\n-----END X509 CRL-----\n`
}
