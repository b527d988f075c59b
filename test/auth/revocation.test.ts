import t, { type Test } from 'tap'
import { mkdirSync, renameSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createEpx } from '../../src/plugin.ts'
import { createReferenceHost } from '../../src/host/reference-host.ts'
import { INBOUND_PATH, OUTBOUND_PATH } from '../../src/http/route.ts'
import { SCOPES } from '../../src/contract/scopes.ts'
import { clientCert, testPki, writePki } from '../helpers/certs.ts'
import { makeCrl, serialOf } from '../helpers/crl.ts'
import { startEpx, TEST_DOOR_IN_WORKER, type TestEpx } from '../helpers/epx.ts'
import { keepAliveConnection } from '../helpers/keep-alive.ts'
import { eventually, until } from '../helpers/eventually.ts'

// DECISIONS.md "Authentication and tenancy", check 1: a certificate the client CA has
// revoked (api.tls.crlFile, re-read when it changes) is 403 MTLS_REQUIRED, on new
// connections and on the next request of connections already open.

// Each test has its own epx and data folder, and most of their time is spent waiting for
// the CRL file's next poll (about every second): they run side by side.
t.jobs = 5

const CRL_FILE = 'pki/client.crl'
const GET_PATH = `${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=2026-11-22`
const acmeCert = () => clientCert('CN=acme,O=acme')
const betaCert = () => clientCert('CN=beta,O=beta')

const crlRevoking = (certs: ReadonlyArray<{ certPem: string }>, opts: { nextUpdate?: Date | null; thisUpdate?: Date } = {}) =>
  makeCrl({ caCertPem: testPki().clientCa.certPem, caKeyPem: testPki().clientCa.keyPem, revokedSerials: certs.map(c => serialOf(c.certPem)), ...opts })

/** Replaces the file the way an operator's tooling does: write beside it, then rename. */
function replaceFile (path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text)
  renameSync(`${path}.tmp`, path)
}

interface World { epx: TestEpx; crlPath: string; tokens: { acme: string; beta: string } }

async function world (t: Test, crlPem: string): Promise<World> {
  const dataDir = t.testdir()
  mkdirSync(join(dataDir, 'pki'), { recursive: true })
  const crlPath = join(dataDir, CRL_FILE)
  writeFileSync(crlPath, crlPem)
  const epx = await startEpx(t, { dataDir, config: { api: { tls: { crlFile: CRL_FILE } } } })
  await epx.addCompany('acme')
  await epx.addCompany('beta')
  const tokens = { acme: (await epx.addToken('acme', SCOPES)).secret, beta: (await epx.addToken('beta', SCOPES)).secret }
  return { epx, crlPath, tokens }
}

const passed = (status: number) => ![401, 403, 503].includes(status)

t.test('a revoked certificate gets 403 MTLS_REQUIRED on both doors, saying it was revoked and what to do', async t => {
  const w = await world(t, await crlRevoking([acmeCert()]))
  const get = await w.epx.request({ path: GET_PATH, cert: acmeCert(), token: w.tokens.acme })
  t.equal(get.status, 403)
  t.equal(get.json().code, 'MTLS_REQUIRED')
  t.match(get.json().detail, /revoked by its CA.*ask your CA or the service operator for a new certificate/)
  const post = await w.epx.request({ method: 'POST', path: INBOUND_PATH, body: {}, cert: acmeCert(), token: w.tokens.acme })
  t.equal(post.status, 403)
  t.equal(post.json().error.code, 'MTLS_REQUIRED')
  t.match(post.json().error.message, /revoked/)
  t.ok(passed((await w.epx.request({ path: GET_PATH, cert: betaCert(), token: w.tokens.beta })).status), 'a certificate the CRL does not list passes')
  t.match(w.epx.logs().find(l => l.msg === 'client CRL loaded'), { revoked: 1, crlFile: /client\.crl$/ })
})

t.test('a CRL replaced on disk applies without a restart: to a connection already open, and to new ones', async t => {
  const w = await world(t, await crlRevoking([]))
  const conn = await keepAliveConnection(w.epx.url, acmeCert())
  t.teardown(() => conn.close())
  t.ok(passed((await conn.get(GET_PATH, w.tokens.acme)).status), 'passes before the revocation')

  replaceFile(w.crlPath, await crlRevoking([acmeCert()]))
  const refused = await eventually(() => conn.get(GET_PATH, w.tokens.acme), r => r.status === 403, { ms: 15_000, everyMs: 100 })
  t.equal(refused.status, 403, 'the open connection is refused')
  t.match(JSON.parse(refused.body), { code: 'MTLS_REQUIRED', detail: /revoked/ })
  t.notOk(conn.closed, 'on the connection opened before the new CRL')
  t.equal((await w.epx.request({ path: GET_PATH, cert: acmeCert(), token: w.tokens.acme })).status, 403, 'a new connection too')
  t.ok(passed((await w.epx.request({ path: GET_PATH, cert: betaCert(), token: w.tokens.beta })).status), 'others still pass')
  t.ok(w.epx.logs().some(l => l.msg === 'client CRL reloaded' && l.revoked === 1), 'the reload is logged')

  // A certificate taken off the list (a hold lifted) passes again on the same connection.
  replaceFile(w.crlPath, await crlRevoking([]))
  await until('the connection to pass again', async () => passed((await conn.get(GET_PATH, w.tokens.acme)).status), { ms: 15_000, everyMs: 100 })
  t.notOk(conn.closed)
})

t.test('a bad CRL at reload is refused with an error line; the previous list stays in force', async t => {
  const w = await world(t, await crlRevoking([acmeCert()]))
  const errors = () => w.epx.logs().filter(l => l.level === 50 && l.msg.startsWith('client CRL refused'))
  const forged = await makeCrl({
    caCertPem: testPki().clientCa.certPem, caKeyPem: testPki().clientCa.keyPem, revokedSerials: [], signWith: testPki().otherCa,
  })
  const cases: Array<[string, string, RegExp]> = [
    ['not a CRL', 'garbage\n', /no "-----BEGIN X509 CRL-----" block/],
    ['signed by another key', forged, /signature does not verify/],
    ['from another CA', await makeCrl({ caCertPem: testPki().otherCa.certPem, caKeyPem: testPki().otherCa.keyPem, revokedSerials: [] }), /issuer is not a CA of the client CA file/],
  ]
  for (const [name, text, reason] of cases) {
    const before = errors().length
    replaceFile(w.crlPath, text)
    await until(`the refusal of a CRL ${name}`, () => errors().length > before, { ms: 15_000, everyMs: 100 })
    t.match(errors().at(-1), { reason, crlFile: w.crlPath }, `${name}: the error line says why`)
    t.equal((await w.epx.request({ path: GET_PATH, cert: acmeCert(), token: w.tokens.acme })).status, 403, `${name}: still revoked`)
    t.ok(passed((await w.epx.request({ path: GET_PATH, cert: betaCert(), token: w.tokens.beta })).status), `${name}: others still pass`)
  }
  // The file removed altogether (a botched deploy): the same.
  unlinkSync(w.crlPath)
  await until('the refusal of a missing CRL', () => errors().length > 3, { ms: 15_000, everyMs: 100 })
  t.match(errors().at(-1), { reason: /ENOENT/ })
  t.equal((await w.epx.request({ path: GET_PATH, cert: acmeCert(), token: w.tokens.acme })).status, 403, 'missing file: still revoked')
  await new Promise(resolve => setTimeout(resolve, 1500))   // more polls of the same missing file
  t.equal(errors().length, 4, 'one error line per bad file, not one per poll')
})

t.test('a CRL past its nextUpdate is still enforced, and a warn says so once', async t => {
  // The ManualClock reads 2026-11-21T12:30Z; this CRL expired the day before.
  const w = await world(t, await crlRevoking([acmeCert()], { thisUpdate: new Date('2026-11-13T00:00:00Z'), nextUpdate: new Date('2026-11-20T00:00:00Z') }))
  t.equal((await w.epx.request({ path: GET_PATH, cert: acmeCert(), token: w.tokens.acme })).status, 403, 'still enforced')
  t.ok(passed((await w.epx.request({ path: GET_PATH, cert: betaCert(), token: w.tokens.beta })).status), 'nobody else is locked out')
  await new Promise(resolve => setTimeout(resolve, 2500))   // a few polls
  const warns = w.epx.logs().filter(l => l.level === 40 && /past its nextUpdate/.test(l.msg))
  t.equal(warns.length, 1, 'warned once')
  t.equal(warns[0]?.nextUpdate, '2026-11-20T00:00:00.000Z')
})

t.test('activation refuses a CRL that is missing, unparsable or not the client CA\'s, with EPX_CRL_INVALID', async t => {
  const forged = await makeCrl({ caCertPem: testPki().clientCa.certPem, caKeyPem: testPki().clientCa.keyPem, revokedSerials: [], signWith: testPki().otherCa })
  const cases: Array<[string, string | undefined, RegExp]> = [
    ['missing', undefined, /client\.crl.*ENOENT/],
    ['garbage', 'not a crl', /the file must be a PEM CRL/],
    ['truncated', '-----BEGIN X509 CRL-----\nMIIB\n-----END X509 CRL-----\n', /not a valid X\.509 CRL/],
    ['forged', forged, /signature does not verify/],
  ]
  for (const [name, text, message] of cases) {
    const dataDir = t.testdir()
    writePki(dataDir)
    if (text !== undefined) writeFileSync(join(dataDir, CRL_FILE), text)
    const ref = createReferenceHost({ dataDir })
    await t.rejects(createEpx(ref.host, { api: { host: '127.0.0.1', port: 0, inWorker: TEST_DOOR_IN_WORKER, tls: { crlFile: CRL_FILE } }, publish: { schedule: false } }),
      { code: 'EPX_CRL_INVALID', message }, name)
    await ref.close()
  }
})
