/**
 * Row 3: the mTLS matrix. Each wrong credential × TLS 1.2/1.3 × GET/POST, on a fresh
 * handshake and again offering the session that handshake made (node:tls `session`): every
 * cell must be 403 MTLS_REQUIRED (DECISIONS.md "Authentication and tenancy", "Robustness":
 * the check must hold under resumption; a resumed session gets what its full handshake got,
 * src/http/tls-sessions.ts); the valid certificate is the control (200 / 202, resumed too).
 * Raw node:tls, so the TLS version and the offered session are the cell's own.
 *
 * Revocation is `api.tls.crlFile` (a PEM CRL of the client CA, relative to the data folder)
 * and pins are `epx company pin-cert ID FILE`: where this build lacks either, the daemon
 * starts without it and the cells say so (they then miss).
 * @module
 */
import { connect, type ConnectionOptions, type TLSSocket } from 'node:tls'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { issueCert } from '../../src/auth/pki.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { clientCert, expiredClientCert, selfSignedClientCert, testPki, type KeyPairPem } from '../helpers/certs.ts'
import { epx as runEpxCli } from '../helpers/cli.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { seedDataDir, startHost, targetDate, tempDir } from './daemon.ts'
import { makeCrl, serialOf } from '../helpers/crl.ts'
import { all, info, type Figure } from './report.ts'

type Version = 'TLSv1.2' | 'TLSv1.3'
export interface Cell {
  readonly kind: string
  readonly version: Version
  readonly method: 'GET' | 'POST'
  readonly resumed: boolean
  /** A session was there to offer (the server handed one out on the valid handshake). */
  readonly offered: boolean
  readonly status: number
  readonly code?: string
  /** The server took the offered session (TLS 1.2 sessions of a chained certificate resume). */
  readonly reused: boolean
  readonly ok: boolean
}

interface Answer { status: number; code?: string; reused: boolean; session?: Buffer }

/** One request on its own TLS connection; collects the session the server hands out, if any. */
function once (port: number, version: Version, cert: KeyPairPem | undefined, req: { method: string; path: string; token: string; body?: string }, session?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const opts: ConnectionOptions = {
      host: '127.0.0.1', port, servername: 'localhost', ca: testPki().serverCa.certPem,
      minVersion: version, maxVersion: version, ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}), ...(session ? { session } : {}),
    }
    const socket: TLSSocket = connect(opts)
    let got: Buffer | undefined
    const chunks: Buffer[] = []
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no answer within 15 s (${version} ${req.method})`)) }, 15_000)
    socket.on('session', s => { got = s })
    let reused = false
    socket.once('secureConnect', () => {
      // Asked once the socket has closed, node answers null: a resumption would never show.
      reused = socket.isSessionReused()
      const body = req.body ?? ''
      socket.write(`${req.method} ${req.path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${req.token}\r\nConnection: close\r\n` +
        (req.body !== undefined ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : '') + `\r\n${body}`)
    })
    socket.on('data', d => chunks.push(d))
    socket.on('error', err => { clearTimeout(timer); reject(err) })
    socket.on('close', () => {
      clearTimeout(timer)
      const text = Buffer.concat(chunks).toString('utf8')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)
      const payload = text.slice(text.indexOf('\r\n\r\n') + 4)
      let code: string | undefined
      // A chunked body still carries the JSON whole between its size lines.
      const json = /\{[\s\S]*\}/.exec(payload)?.[0]
      try { const b = JSON.parse(json ?? ''); code = b?.error?.code ?? b?.code } catch { /* not JSON: no code */ }
      resolve({ status, code, reused, session: got ?? socket.getSession() })
    })
  })
}

export interface MtlsResult {
  readonly cells: readonly Cell[]
  readonly notes: readonly string[]
}

export async function mtlsMatrix (): Promise<MtlsResult> {
  const dataDir = tempDir('mtls')
  const notes: string[] = []
  const seeded = await seedDataDir(dataDir, [{ id: 'acme' }, { id: 'other' }, { id: 'revoked' }, { id: 'pinned' }])
  const { clientCa, otherCa } = testPki()
  const acmeSubject = 'CN=acme,O=acme'

  // Pin the helpers' certificate of `pinned`; a second certificate of the same CA and subject is the unpinned one.
  mkdirSync(join(dataDir, 'campaign'), { recursive: true })
  const pinFile = join(dataDir, 'campaign/pinned.crt')
  writeFileSync(pinFile, seeded.pinned!.cert.certPem)
  const pin = await runEpxCli(dataDir, 'company', 'pin-cert', 'pinned', pinFile).catch((err: Error) => ({ code: 1, err: err.message, out: '' }))
  if (pin.code !== 0) notes.push(`epx company pin-cert failed (${pin.code}): ${(pin.err || pin.out).split('\n')[0]}`)

  writeFileSync(join(dataDir, 'pki/client-crl.pem'), await makeCrl({ caCertPem: clientCa.certPem, caKeyPem: clientCa.keyPem, revokedSerials: [serialOf(seeded.revoked!.cert.certPem)] }))
  const day = targetDate()
  const publish = { targetDate: day, siteIds: [siteId(1)] }
  let host
  try {
    host = await startHost({ dataDir, sites: 3, publish, config: { api: { host: '127.0.0.1', port: 0, tls: { crlFile: 'pki/client-crl.pem' } } } })
  } catch (err) {
    notes.push(`api.tls.crlFile refused: ${(err as Error).message.split('\n')[0]!.slice(0, 200)}`)
    host = await startHost({ dataDir, sites: 3, publish })
  }

  const acme = seeded.acme!
  const kinds: Array<{ kind: string; cert: KeyPairPem | undefined; company: string }> = [
    { kind: 'no certificate', cert: undefined, company: 'acme' },
    { kind: "another company's certificate", cert: seeded.other!.cert, company: 'acme' },
    { kind: 'self-signed, right subject', cert: selfSignedClientCert(acmeSubject), company: 'acme' },
    { kind: 'untrusted CA, right subject', cert: clientCert(acmeSubject, otherCa), company: 'acme' },
    { kind: 'expired', cert: expiredClientCert(acmeSubject), company: 'acme' },
    { kind: 'revoked by the CRL', cert: seeded.revoked!.cert, company: 'revoked' },
    { kind: 'right subject, not pinned', cert: issueCert(clientCa, { subject: 'CN=pinned,O=pinned' }), company: 'pinned' },
  ]
  const requestOf = (method: 'GET' | 'POST', company: string) => {
    const c = seeded[company]!
    return method === 'GET'
      ? { method, path: `${OUTBOUND_PATH}?site_id=${siteId(1)}&target_date=${day}`, token: c.outbound }
      : { method, path: INBOUND_PATH, token: c.inbound, body: JSON.stringify(programme({ targetDate: day, sites: 1, slots: 4 })) }
  }

  const cells: Cell[] = []
  try {
    for (const version of ['TLSv1.2', 'TLSv1.3'] as const) {
      for (const method of ['GET', 'POST'] as const) {
        const control = await once(host.port, version, acme.cert, requestOf(method, 'acme'))
        const expect = method === 'GET' ? 200 : 202
        const offered = control.session !== undefined
        cells.push({ kind: 'valid (control)', version, method, resumed: false, offered: false, status: control.status, code: control.code, reused: false, ok: control.status === expect })
        const again = await once(host.port, version, acme.cert, requestOf(method, 'acme'), control.session)
        cells.push({ kind: 'valid (control)', version, method, resumed: true, offered, status: again.status, code: again.code, reused: again.reused, ok: again.status === expect })
        for (const k of kinds) {
          // Fresh, then offering the session that fresh handshake made: a resumption gets no
          // more than the handshake it resumes.
          let session: Buffer | undefined
          for (const resumed of [false, true]) {
            const a = await once(host.port, version, k.cert, requestOf(method, k.company), resumed ? session : undefined)
            session ??= a.session
            cells.push({ kind: k.kind, version, method, resumed, offered: resumed && session !== undefined, status: a.status, code: a.code, reused: a.reused, ok: a.status === 403 && a.code === 'MTLS_REQUIRED' })
          }
        }
      }
    }
  } finally {
    await host.child.stop()
  }
  return { cells, notes }
}

export function mtlsFigures (r: MtlsResult): Figure[] {
  const byKind = new Map<string, Cell[]>()
  for (const c of r.cells) byKind.set(c.kind, [...(byKind.get(c.kind) ?? []), c])
  const figures: Figure[] = []
  for (const [kind, cells] of byKind) {
    const control = kind.startsWith('valid')
    const bad = cells.filter(c => !c.ok).map(c => `${c.version} ${c.method}${c.resumed ? ' with session' : ''}: ${c.status} ${c.code ?? ''}`.trim())
    figures.push({ ...all(kind, cells.filter(c => c.ok).length, cells.length), target: control ? 'all 200/202' : 'all 403 MTLS' })
    if (bad.length) figures.push(info('  wrong cells', bad.slice(0, 3).join('; ') + (bad.length > 3 ? '; …' : '')))
  }
  figures.unshift(info('cells per credential', 'TLS 1.2/1.3 × GET/POST × fresh/offering its own session'))
  figures.push(info('handshakes offering a session / resumed by the server (TLS 1.2, chained certificates only)', `${r.cells.filter(c => c.offered).length} / ${r.cells.filter(c => c.reused).length}`))
  for (const n of r.notes) figures.push(info('note', n))
  return figures
}
