/**
 * The development PKI of `epx init` and of the tests: a server CA, a server
 * certificate for localhost and 127.0.0.1, and a client CA that signs each company's
 * client certificate. Certificates are made with node-forge; keys by node's crypto.
 * @module
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import forge from 'node-forge'
import { parseDn, type DnAttribute } from './subject.ts'

export interface KeyPairPem { readonly certPem: string; readonly keyPem: string }

function newKeys (): forge.pki.rsa.KeyPair {
  // forge hands RSA key generation to node's native crypto when it is there.
  return forge.pki.rsa.generateKeyPair({ bits: 2048 })
}

function baseCert (keys: forge.pki.rsa.KeyPair, subject: DnAttribute[], days: number): forge.pki.Certificate {
  const cert = forge.pki.createCertificate()
  cert.publicKey = keys.publicKey
  cert.serialNumber = '01' + randomBytes(15).toString('hex')
  const now = Date.now()
  cert.validity.notBefore = new Date(now - 60_000)
  cert.validity.notAfter = new Date(now + days * 86_400_000)
  cert.setSubject(subject.map(a => ({ shortName: a.shortName, value: a.value })))
  return cert
}

function toPem (cert: forge.pki.Certificate, keys: forge.pki.rsa.KeyPair): KeyPairPem {
  return { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) }
}

/** A self-signed CA. */
export function createCa (commonName: string, days = 3650): KeyPairPem {
  const keys = newKeys()
  const cert = baseCert(keys, [{ shortName: 'CN', value: commonName }, { shortName: 'O', value: 'epx development PKI' }], days)
  cert.setIssuer(cert.subject.attributes)
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ])
  cert.sign(keys.privateKey, forge.md.sha256.create())
  return toPem(cert, keys)
}

export interface IssueOptions {
  readonly subject: string | DnAttribute[]
  /** Server certificate: DNS names and IP addresses for subjectAltName. */
  readonly dnsNames?: readonly string[]
  readonly ips?: readonly string[]
  readonly days?: number
}

/** A leaf certificate signed by `ca` (server when it has names, client otherwise). */
export function issueCert (ca: KeyPairPem, opts: IssueOptions): KeyPairPem {
  const caCert = forge.pki.certificateFromPem(ca.certPem)
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem)
  const keys = newKeys()
  const subject = typeof opts.subject === 'string' ? parseDn(opts.subject) : opts.subject
  const cert = baseCert(keys, subject, opts.days ?? 825)
  cert.setIssuer(caCert.subject.attributes)
  const server = Boolean(opts.dnsNames?.length || opts.ips?.length)
  const altNames = [
    ...(opts.dnsNames ?? []).map(value => ({ type: 2, value })),
    ...(opts.ips ?? []).map(ip => ({ type: 7, ip })),
  ]
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: server, clientAuth: !server },
    ...(server ? [{ name: 'subjectAltName', altNames }] : []),
  ])
  cert.sign(caKey, forge.md.sha256.create())
  return toPem(cert, keys)
}

/** Paths of the development PKI inside `<dataDir>/pki`. */
export function pkiPaths (dataDir: string) {
  const dir = join(dataDir, 'pki')
  return {
    dir,
    caCert: join(dir, 'ca.crt'), caKey: join(dir, 'ca.key'),
    serverCert: join(dir, 'server.crt'), serverKey: join(dir, 'server.key'),
    clientCaCert: join(dir, 'client-ca.crt'), clientCaKey: join(dir, 'client-ca.key'),
  }
}

function readPair (cert: string, key: string): KeyPairPem | undefined {
  return existsSync(cert) && existsSync(key)
    ? { certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') }
    : undefined
}

function writePair (cert: string, key: string, pair: KeyPairPem): void {
  writeFileSync(cert, pair.certPem)
  writeFileSync(key, pair.keyPem, { mode: 0o600 })
}

/** Creates what is missing of the development PKI; returns what it created. Idempotent. */
export function ensureDevPki (dataDir: string): string[] {
  const p = pkiPaths(dataDir)
  mkdirSync(p.dir, { recursive: true })
  const created: string[] = []
  let ca = readPair(p.caCert, p.caKey)
  if (!ca) { ca = createCa('epx development server CA'); writePair(p.caCert, p.caKey, ca); created.push(p.caCert) }
  if (!readPair(p.serverCert, p.serverKey)) {
    writePair(p.serverCert, p.serverKey, issueCert(ca, { subject: 'CN=localhost,O=epx', dnsNames: ['localhost'], ips: ['127.0.0.1', '::1'] }))
    created.push(p.serverCert)
  }
  if (!readPair(p.clientCaCert, p.clientCaKey)) {
    writePair(p.clientCaCert, p.clientCaKey, createCa('epx development client CA'))
    created.push(p.clientCaCert)
  }
  return created
}

/** Reads the client CA of the development PKI (for `epx cert issue`). */
export function readClientCa (dataDir: string): KeyPairPem | undefined {
  const p = pkiPaths(dataDir)
  return readPair(p.clientCaCert, p.clientCaKey)
}
