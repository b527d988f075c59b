import t, { type Test } from 'tap'
import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { SCOPES } from '../../src/contract/scopes.ts'
import { EventEmitter } from 'node:events'
import { keepSessionVerdicts, sessionFields } from '../../src/http/tls-sessions.ts'
import { selfSignedClientCert, testPki, type KeyPairPem } from '../helpers/certs.ts'
import { makeCrl, serialOf } from '../helpers/crl.ts'
import { startEpx, type TestEpx } from '../helpers/epx.ts'
import { keepAliveConnection } from '../helpers/keep-alive.ts'
import { tlsGet, type TlsAnswer, type TlsGetOptions } from '../helpers/tls-request.ts'

// TLS session resumption keeps the certificate verdict of the full handshake
// (src/http/tls-sessions.ts): a resumed session never gets more than its full handshake
// got. TLS 1.2 sessions whose certificate chained resume; TLS 1.3 always gets a full
// handshake (no tickets, and node's session callbacks never see a TLS 1.3 PSK identity).

const PATH = `${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-22`
const CRL_FILE = 'pki/client.crl'
const VERSIONS = ['TLSv1.2', 'TLSv1.3'] as const

interface Answer extends TlsAnswer { code?: string }

/** One GET on its own TLS connection; `session` offers a session to resume. */
async function once (url: URL, opts: TlsGetOptions, token: string): Promise<Answer> {
  const a = await tlsGet(url, opts, PATH, token)
  return { ...a, code: a.status >= 400 ? JSON.parse(a.body).code : undefined }
}

interface World { epx: TestEpx; crlPath: string; acme: KeyPairPem; beta: KeyPairPem; token: string }

async function world (t: Test, tlsConfig: Record<string, unknown> = {}): Promise<World> {
  const dataDir = t.testdir()
  mkdirSync(join(dataDir, 'pki'), { recursive: true })
  const crlPath = join(dataDir, CRL_FILE)
  writeFileSync(crlPath, await crl([]))
  const epx = await startEpx(t, { dataDir, config: { api: { tls: { crlFile: CRL_FILE, ...tlsConfig } } } })
  const acme = (await epx.addCompany('acme')).cert
  const beta = (await epx.addCompany('beta')).cert
  return { epx, crlPath, acme, beta, token: (await epx.addToken('acme', SCOPES)).secret }
}

const crl = (revoked: KeyPairPem[]) =>
  makeCrl({ caCertPem: testPki().clientCa.certPem, caKeyPem: testPki().clientCa.keyPem, revokedSerials: revoked.map(c => serialOf(c.certPem)) })

/** The new list is in force once its reload is logged (the file is polled about every second). */
async function reloaded (w: World): Promise<void> {
  const deadline = Date.now() + 15_000
  while (!w.epx.logs().some(l => l.msg === 'client CRL reloaded')) {
    if (Date.now() > deadline) throw new Error('the CRL was not reloaded within 15 s')
    await new Promise(r => setTimeout(r, 100))
  }
}

const passed = (a: { status: number }) => ![401, 403, 503].includes(a.status)

t.test('the resumption matrix: a resumed session gets exactly what its full handshake got', async t => {
  const w = await world(t)
  const cells: Array<{ name: string; cert?: KeyPairPem; resumes: boolean }> = [
    { name: 'company A\'s certificate', cert: w.acme, resumes: true },
    { name: 'no certificate', resumes: false },
    { name: 'the other company\'s certificate', cert: w.beta, resumes: true },
    { name: 'a self-signed certificate with A\'s subject', cert: selfSignedClientCert('CN=acme,O=acme'), resumes: false },
  ]
  for (const maxVersion of VERSIONS) {
    for (const cell of cells) {
      const what = `${maxVersion}, ${cell.name}`
      const full = await once(w.epx.url, { maxVersion, cert: cell.cert }, w.token)
      t.equal(full.reused, false, `${what}: the first connection is a full handshake`)
      t.ok(full.session, `${what}: the client got a session to offer`)
      // The second connection presents no certificate: all it has is the session.
      const again = await once(w.epx.url, { maxVersion, session: full.session }, w.token)
      const resumes = cell.resumes && maxVersion === 'TLSv1.2'
      t.equal(again.reused, resumes, `${what}: ${resumes ? 'resumed' : 'not resumed (full handshake)'}`)
      if (resumes) {
        t.equal(again.status, full.status, `${what}: resumed, the same answer as the full handshake (${full.status})`)
        t.equal(again.code, full.code)
      } else {
        t.equal(again.status, 403, `${what}: a full handshake without a certificate is 403`)
        t.equal(again.code, 'MTLS_REQUIRED')
      }
      t.notOk(passed(again) && !passed(full), `${what}: never more than the full handshake`)
    }
  }
  t.ok(passed(await once(w.epx.url, { maxVersion: 'TLSv1.2', cert: w.acme }, w.token)), 'control: A\'s certificate passes')
  t.equal((await once(w.epx.url, { maxVersion: 'TLSv1.2', cert: w.beta }, w.token)).code, 'MTLS_REQUIRED', 'control: B\'s certificate with A\'s token is refused')
})

t.test('a session whose certificate was revoked after its full handshake is not resumed, and gets 403', async t => {
  const w = await world(t)
  const full = await once(w.epx.url, { maxVersion: 'TLSv1.2', cert: w.acme }, w.token)
  t.ok(passed(full))
  t.equal((await once(w.epx.url, { maxVersion: 'TLSv1.2', session: full.session }, w.token)).reused, true, 'resumes before the revocation')

  writeFileSync(`${w.crlPath}.tmp`, await crl([w.acme]))
  renameSync(`${w.crlPath}.tmp`, w.crlPath)
  await reloaded(w)

  const again = await once(w.epx.url, { maxVersion: 'TLSv1.2', session: full.session }, w.token)
  t.equal(again.reused, false, 'the session is refused: a full handshake')
  t.equal(again.status, 403)
  t.equal(again.code, 'MTLS_REQUIRED')
})

t.test('a resumed connection is checked against a new revocation list on its next request, as an open connection is', async t => {
  const w = await world(t)
  const full = await once(w.epx.url, { maxVersion: 'TLSv1.2', cert: w.acme }, w.token)
  const conn = await keepAliveConnection(w.epx.url, null, { session: full.session, maxVersion: 'TLSv1.2' })
  t.teardown(() => conn.close())
  t.equal(conn.reused, true, 'the connection resumed, without presenting a certificate')
  t.ok(passed(await conn.get(PATH, w.token)), 'it passes as its full handshake did')

  writeFileSync(`${w.crlPath}.tmp`, await crl([w.acme]))
  renameSync(`${w.crlPath}.tmp`, w.crlPath)
  await reloaded(w)
  const refused = await conn.get(PATH, w.token)
  t.equal(refused.status, 403, 'the same connection, after the new list')
  t.match(JSON.parse(refused.body), { code: 'MTLS_REQUIRED', detail: /revoked/ })
})

t.test('a session is resumed only within api.tls.sessionTimeoutSeconds', async t => {
  const w = await world(t, { sessionTimeoutSeconds: 60 })
  const full = await once(w.epx.url, { maxVersion: 'TLSv1.2', cert: w.acme }, w.token)
  t.equal((await once(w.epx.url, { maxVersion: 'TLSv1.2', session: full.session }, w.token)).reused, true)
  w.epx.clock.advance(60_000)
  const late = await once(w.epx.url, { maxVersion: 'TLSv1.2', session: full.session }, w.token)
  t.equal(late.reused, false, 'past the timeout: a full handshake')
  t.equal(late.status, 403, 'and without a certificate, 403')
})

t.test('api.tls.sessionCacheSize bounds the sessions kept, oldest out first; 0 turns resumption off', async t => {
  const w = await world(t, { sessionCacheSize: 1 })
  const first = await once(w.epx.url, { maxVersion: 'TLSv1.2', cert: w.acme }, w.token)
  const second = await once(w.epx.url, { maxVersion: 'TLSv1.2', cert: w.acme }, w.token)
  t.equal((await once(w.epx.url, { maxVersion: 'TLSv1.2', session: first.session }, w.token)).reused, false, 'the oldest was dropped')
  t.equal((await once(w.epx.url, { maxVersion: 'TLSv1.2', session: second.session }, w.token)).reused, true, 'the newest resumes')

  const off = await world(t, { sessionCacheSize: 0 })
  const s = await once(off.epx.url, { maxVersion: 'TLSv1.2', cert: off.acme }, off.token)
  t.equal((await once(off.epx.url, { maxVersion: 'TLSv1.2', session: s.session }, off.token)).reused, false, 'size 0: never resumed')
})

t.test('the session encoding is read defensively: anything unexpected is no session', async t => {
  const id = Buffer.alloc(32, 7)
  const good = Buffer.concat([Buffer.from([0x30, 0x2d, 0x02, 0x01, 0x01, 0x02, 0x02, 0x03, 0x03, 0x04, 0x02, 0xc0, 0x2f, 0x04, 0x20]), id])
  t.same(sessionFields(good), { version: 0x0303, id })
  const long = Buffer.concat([Buffer.from([0x30, 0x81, 0x2d]), good.subarray(2)])
  t.same(sessionFields(long), { version: 0x0303, id }, 'a long-form length')
  for (const [name, der] of [
    ['nothing', undefined], ['empty', Buffer.alloc(0)], ['not a SEQUENCE', Buffer.from([0x31, 0x00])],
    ['truncated', good.subarray(0, 20)], ['a length of 0x80', Buffer.from([0x30, 0x80])],
    ['a length over 3 bytes', Buffer.from([0x30, 0x84, 0, 0, 0, 1])], ['an empty version', Buffer.from([0x30, 0x0b, 0x02, 0x01, 0x01, 0x02, 0x00, 0x04, 0x02, 0xc0, 0x2f, 0x04, 0x00])],
    ['no session id', good.subarray(0, 13)],
  ] as const) {
    t.equal(sessionFields(der as Buffer | undefined), undefined, name)
  }
})

t.test('a resumed connection whose verdict cannot be recovered is closed: its session left the cache during the handshake, or it is not TLS 1.2', async t => {
  // Node resumes with what 'resumeSession' gave; the cache can drop that session (bounded,
  // oldest out) before the handshake ends. A server stand-in drives the same events.
  const server = new EventEmitter()
  const stats = keepSessionVerdicts(server as never, { size: 1, timeoutSeconds: 60, clock: { now: () => new Date() } }, undefined)
  const id = Buffer.alloc(32, 9)
  const der = Buffer.concat([Buffer.from([0x30, 0x2d, 0x02, 0x01, 0x01, 0x02, 0x02, 0x03, 0x03, 0x04, 0x02, 0xc0, 0x2f, 0x04, 0x20]), id])
  let destroyed = false
  const socket = { getProtocol: () => 'TLSv1.2', getSession: () => der, isSessionReused: () => true, destroy: () => { destroyed = true } }
  server.emit('secureConnection', socket)
  t.equal(destroyed, true)
  t.same(stats, { kept: 0, resumed: 0, refused: 1 })
  // Nor is a TLS 1.3 connection that reports a resumption: this cache never resumes one.
  destroyed = false
  server.emit('secureConnection', { ...socket, getProtocol: () => 'TLSv1.3' })
  t.equal(destroyed, true)
})
