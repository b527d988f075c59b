/**
 * When the API's TLS material stops working: the server certificate's and the client
 * CA's notAfter, and the CRL's nextUpdate. Read from the configured files, again at most
 * every 10 minutes (a renewed certificate shows without a restart).
 * @module
 */
import { X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { inDataDir, type EpxConfig } from '../config.ts'
import { readRevocationList } from '../auth/crl.ts'

const REREAD_MS = 600_000

export interface Expiry { readonly what: string; readonly atMs: number }

export function watchExpiries (dataDir: string, tls: Pick<EpxConfig['api']['tls'], 'certFile' | 'clientCaFile' | 'crlFile'>, nowMs: () => number): () => readonly Expiry[] {
  let read = -Infinity
  let certs: Expiry[] = []
  let crl: Expiry | undefined
  const notAfter = (what: string, file: string): Expiry[] => {
    try {
      return [{ what, atMs: Date.parse(new X509Certificate(readFileSync(inDataDir(dataDir, file))).validTo) }]
    } catch {
      return []   // unreadable now: the API door reports it where it matters
    }
  }
  return () => {
    if (nowMs() - read >= REREAD_MS) {
      read = nowMs()
      certs = [...notAfter('server_certificate', tls.certFile), ...notAfter('client_ca', tls.clientCaFile)]
      if (tls.crlFile !== undefined) {
        // Parsed off this scrape (the ASN.1 reader loads lazily): the next scrape shows it.
        const { crlFile, clientCaFile } = tls
        Promise.resolve().then(() => readRevocationList(readFileSync(inDataDir(dataDir, crlFile), 'utf8'), readFileSync(inDataDir(dataDir, clientCaFile), 'utf8'))).then(
          list => { crl = list.nextUpdate ? { what: 'client_crl_next_update', atMs: list.nextUpdate.getTime() } : undefined },
          () => { crl = undefined },
        )
      }
    }
    return crl ? [...certs, crl] : certs
  }
}
