/**
 * Test PKI, made at test time and memoized per process (RSA keys cost ~50 ms each).
 *
 * - `testPki()` → `{ serverCa, server, clientCa, otherCa }` (KeyPairPem each): `server`
 *   is valid for localhost and 127.0.0.1 and signed by `serverCa`; `clientCa` is the CA
 *   epx trusts for client certificates; `otherCa` is a CA epx does not trust.
 * - `clientCert(subject, ca = clientCa)` → a client certificate for a DN such as
 *   `CN=acme,O=acme`, memoized by subject and CA.
 * - `writePki(dataDir)` writes the files at epx's default config paths:
 *   `<dataDir>/pki/{ca.crt,server.crt,server.key,client-ca.crt,client-ca.key}`.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { createCa, issueCert, pkiPaths, type KeyPairPem } from '../../src/auth/pki.ts'

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

/** A client certificate with `subject`, issued by `ca` (default: the trusted client CA). */
export function clientCert (subject: string, ca: KeyPairPem = testPki().clientCa): KeyPairPem {
  const key = `${subject}\n${ca.certPem}`
  let c = clients.get(key)
  if (!c) {
    c = issueCert(ca, { subject })
    clients.set(key, c)
  }
  return c
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
