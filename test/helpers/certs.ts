/**
 * Test PKI, made at test time and memoized per process (RSA keys cost ~50 ms each).
 *
 * - `testPki()` → `{ serverCa, server, clientCa, otherCa }` (KeyPairPem each): `server`
 *   is valid for localhost and 127.0.0.1 and signed by `serverCa`; `clientCa` is the CA
 *   epx trusts for client certificates; `otherCa` is a CA epx does not trust.
 * - `clientCert(subject, ca = clientCa)` → a client certificate for a DN such as
 *   `CN=acme,O=acme`, memoized by subject and CA.
 * - `selfSignedClientCert(subject)` → a self-signed client certificate (no CA at all).
 * - `expiredClientCert(subject)` → issued by the client CA, expired a month ago.
 *   Client certificates share one RSA key per process: certificates (and so their
 *   fingerprints) differ, and a test file issues a dozen of them in milliseconds.
 * - `writePki(dataDir)` writes the files at epx's default config paths:
 *   `<dataDir>/pki/{ca.crt,server.crt,server.key,client-ca.crt,client-ca.key}`.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import forge from 'node-forge'
import { createCa, issueCert, pkiPaths, type KeyPairPem } from '../../src/auth/pki.ts'
import { parseDn } from '../../src/auth/subject.ts'

export type { KeyPairPem }

export interface TestPki {
  readonly serverCa: KeyPairPem
  readonly server: KeyPairPem
  readonly clientCa: KeyPairPem
  readonly otherCa: KeyPairPem
}

let pki: TestPki | undefined

export function testPki (): TestPki {
  if (!pki) {
    const serverCa = createCa('epx test server CA')
    pki = {
      serverCa,
      server: issueCert(serverCa, { subject: 'CN=localhost,O=epx', dnsNames: ['localhost'], ips: ['127.0.0.1', '::1'] }),
      clientCa: createCa('epx test client CA'),
      otherCa: createCa('some other client CA'),
    }
  }
  return pki
}

const clients = new Map<string, KeyPairPem>()
let leafKeys: forge.pki.rsa.KeyPair | undefined

/** A client certificate with `subject`, issued by `ca` (default: the trusted client CA). */
export function clientCert (subject: string, ca: KeyPairPem = testPki().clientCa): KeyPairPem {
  const key = `${subject}\n${ca.certPem}`
  let c = clients.get(key)
  if (!c) {
    c = signLeaf(subject, ca)
    clients.set(key, c)
  }
  return c
}

/** A client certificate signed by its own key: the right subject from no trusted issuer. */
export function selfSignedClientCert (subject: string): KeyPairPem {
  return clientCert(subject, SELF)
}

const SELF: KeyPairPem = { certPem: 'self-signed', keyPem: 'self-signed' }

const DAY_MS = 86_400_000

/** A certificate of the trusted client CA whose validity ended a month ago. */
export function expiredClientCert (subject: string): KeyPairPem {
  return signLeaf(subject, testPki().clientCa, { notBefore: new Date(Date.now() - 60 * DAY_MS), notAfter: new Date(Date.now() - 30 * DAY_MS) })
}

/** Like `issueCert` for a client, with the shared leaf key. */
function signLeaf (subject: string, ca: KeyPairPem, validity = { notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + 30 * DAY_MS) }): KeyPairPem {
  leafKeys ??= forge.pki.rsa.generateKeyPair({ bits: 2048 })
  const cert = forge.pki.createCertificate()
  cert.publicKey = leafKeys.publicKey
  cert.serialNumber = '01' + randomBytes(15).toString('hex')
  cert.validity.notBefore = validity.notBefore
  cert.validity.notAfter = validity.notAfter
  cert.setSubject(parseDn(subject).map(a => ({ shortName: a.shortName, value: a.value })))
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', clientAuth: true },
  ])
  if (ca === SELF) {
    cert.setIssuer(cert.subject.attributes)
    cert.sign(leafKeys.privateKey, forge.md.sha256.create())
  } else {
    cert.setIssuer(forge.pki.certificateFromPem(ca.certPem).subject.attributes)
    cert.sign(forge.pki.privateKeyFromPem(ca.keyPem), forge.md.sha256.create())
  }
  return { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(leafKeys.privateKey) }
}

/** Writes the test PKI where epx's default configuration looks for it. */
export function writePki (dataDir: string): void {
  const { serverCa, server, clientCa } = testPki()
  const p = pkiPaths(dataDir)
  mkdirSync(p.dir, { recursive: true })
  writeFileSync(p.caCert, serverCa.certPem)
  writeFileSync(p.serverCert, server.certPem)
  writeFileSync(p.serverKey, server.keyPem, { mode: 0o600 })
  writeFileSync(p.clientCaCert, clientCa.certPem)
  writeFileSync(p.clientCaKey, clientCa.keyPem, { mode: 0o600 })
}
