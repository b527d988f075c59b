/**
 * Test PKI, made at test time and memoized per process and per tap run: an RSA key costs
 * 0.2 to 0.7 s of CPU and a forge signature ~0.1 s, so the PKI alone was ~1.5 s of every
 * test process's start (about 60 of them in `npm test`). The first process of a run to
 * need a piece makes it and leaves it in the temp folder under the run's name (see
 * `runFolder`); the others read it. The first one written wins, so every process of a run
 * holds the same PKI. Outside tap (a file run with plain node), each process makes its own.
 *
 * - `testPki()` → `{ serverCa, server, clientCa, otherCa }` (KeyPairPem each): `server`
 *   is valid for localhost and 127.0.0.1 and signed by `serverCa`; `clientCa` is the CA
 *   epx trusts for client certificates; `otherCa` is a CA epx does not trust.
 * - `clientCert(subject, ca = clientCa)` → a client certificate for a DN such as
 *   `CN=acme,O=acme`, memoized by subject and CA.
 * - `selfSignedClientCert(subject)` → a self-signed client certificate (no CA at all).
 * - `expiredClientCert(subject)` → issued by the client CA, expired a month ago.
 *   Client certificates share one RSA key per run: certificates (and so their
 *   fingerprints) differ by subject and issuer.
 * - `writePki(dataDir)` writes the files at epx's default config paths:
 *   `<dataDir>/pki/{ca.crt,server.crt,server.key,client-ca.crt,client-ca.key}`.
 * @module
 */
import { linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { createHash, randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
  pki ??= sharedInRun('pki', () => {
    const serverCa = createCa('epx test server CA')
    return {
      serverCa,
      server: issueCert(serverCa, { subject: 'CN=localhost,O=epx', dnsNames: ['localhost'], ips: ['127.0.0.1', '::1'] }),
      clientCa: createCa('epx test client CA'),
      otherCa: createCa('some other client CA'),
    }
  })
  return pki
}

/**
 * This tap run's folder of shared PKI pieces, or undefined outside tap. A test process is
 * the tap runner's child: the runner's pid and start time name the run (Linux's /proc),
 * and the name goes on to the test's own children through the environment.
 */
function runFolder (): string | undefined {
  if (process.env.TAP !== '1') return undefined
  let run = process.env.EPX_TEST_PKI_RUN
  if (!run) {
    try {
      const stat = readFileSync(`/proc/${process.ppid}/stat`, 'utf8')
      const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
      if (!startTime) return undefined
      run = `${process.ppid}-${startTime}`
    } catch {
      return undefined
    }
    process.env.EPX_TEST_PKI_RUN = run
  }
  return join(tmpdir(), `epx-test-pki-${run}`)
}

/** `make()`'s JSON value, made once per tap run (see the module's doc). */
function sharedInRun<T> (name: string, make: () => T): T {
  const dir = runFolder()
  if (!dir) return make()
  const file = join(dir, `${name}.json`)
  const read = (): T | undefined => {
    try { return JSON.parse(readFileSync(file, 'utf8')) as T } catch { return undefined }
  }
  const found = read()
  if (found !== undefined) return found
  const value = make()
  if (mkdirSync(dir, { recursive: true, mode: 0o700 }) !== undefined) removeOldRunFolders(dir)
  // Written whole under a name of its own, then linked into place: a reader never sees half
  // a file, and of two processes making it at once, the second reads the first's.
  const draft = `${file}.${process.pid}`
  writeFileSync(draft, JSON.stringify(value), { mode: 0o600 })
  try { linkSync(draft, file) } catch { /* another process linked it first */ } finally { unlinkSync(draft) }
  return read() ?? value
}

/** Earlier runs' folders, a day old: a run that ends leaves its folder behind. */
function removeOldRunFolders (current: string): void {
  for (const name of readdirSync(tmpdir())) {
    const dir = join(tmpdir(), name)
    if (!name.startsWith('epx-test-pki-') || dir === current) continue
    try {
      if (Date.now() - statSync(dir).mtimeMs > 86_400_000) rmSync(dir, { recursive: true, force: true })
    } catch { /* removed by another run meanwhile */ }
  }
}

const clients = new Map<string, KeyPairPem>()
let leafKeys: forge.pki.rsa.KeyPair | undefined

/** A client certificate with `subject`, issued by `ca` (default: the trusted client CA). */
export function clientCert (subject: string, ca: KeyPairPem = testPki().clientCa): KeyPairPem {
  const key = `${subject}\n${ca.certPem}`
  let c = clients.get(key)
  if (!c) {
    c = sharedInRun(`client-${createHash('sha256').update(key).digest('hex').slice(0, 32)}`, () => signLeaf(subject, ca))
    clients.set(key, c)
  }
  return c
}

/** The key pair every client certificate of the run shares. */
function leafKeyPair (): forge.pki.rsa.KeyPair {
  if (!leafKeys) {
    const privateKey = forge.pki.privateKeyFromPem(sharedInRun('leaf-key', () => forge.pki.privateKeyToPem(forge.pki.rsa.generateKeyPair({ bits: 2048 }).privateKey))) as forge.pki.rsa.PrivateKey
    leafKeys = { privateKey, publicKey: forge.pki.setRsaPublicKey(privateKey.n, privateKey.e) }
  }
  return leafKeys
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

/** A certificate of the trusted client CA that stops being valid `validForMs` from now (whole seconds). */
export function shortLivedClientCert (subject: string, validForMs: number): KeyPairPem & { notAfter: Date } {
  const notAfter = new Date(Math.floor((Date.now() + validForMs) / 1000) * 1000)
  return { ...signLeaf(subject, testPki().clientCa, { notBefore: new Date(Date.now() - 60_000), notAfter }), notAfter }
}

/** Like `issueCert` for a client, with the shared leaf key. */
function signLeaf (subject: string, ca: KeyPairPem, validity = { notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + 30 * DAY_MS) }): KeyPairPem {
  const leafKeys = leafKeyPair()
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
