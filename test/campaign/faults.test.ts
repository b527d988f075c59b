// The system tier's slice of the campaign's mTLS and disk-full rows (the same functions
// `npm run campaign` runs; test/campaign/). The revoked and unpinned cells need
// `api.tls.crlFile` and `epx company pin-cert`. The campaign's damaged-store row is not
// repeated here: test/store/damaged-store.test.ts checks the same (every damage refused
// with EPX_STORE_OPEN_FAILED, the process alive) in one child process.
import t from 'tap'
import { buildHost, removeTempDirs } from './daemon.ts'
import { mtlsMatrix } from './mtls.ts'
import { diskFull } from './disk-full.ts'

t.before(() => buildHost({ plugin: false }))
t.teardown(removeTempDirs)

t.test('mTLS matrix: every wrong credential is 403 MTLS_REQUIRED on TLS 1.2 and 1.3, GET and POST, fresh or resuming its own session', async t => {
  const { cells, notes } = await mtlsMatrix()
  t.equal(cells.length, 8 * 8, '8 credentials (the valid control included) × 8 cells')
  for (const c of cells) {
    const name = `${c.kind}, ${c.version} ${c.method}${c.resumed ? ', offering a session' : ''}: ${c.status} ${c.code ?? ''}`
    t.ok(c.ok, name, { notes })
  }
  const reused = cells.filter(c => c.reused)
  t.ok(reused.every(c => c.version === 'TLSv1.2' && c.resumed), 'only TLS 1.2 sessions resume')
  t.equal(reused.filter(c => c.kind === 'valid (control)').length, 2, 'the valid certificate\'s TLS 1.2 sessions resume (GET, POST)')
  // Only a certificate that chained leaves a session to resume; a revoked one is refused.
  t.same([...new Set(reused.map(c => c.kind))].sort(), ["another company's certificate", 'right subject, not pinned', 'valid (control)'])
})

t.test('a full disk: 503 NO_STORE, the host lives on, no unhandled rejection', async t => {
  const r = await diskFull()
  t.equal(r.bigStatus, 503)
  t.equal(r.bigCode, 'NO_STORE')
  t.ok(r.alive, 'host alive')
  t.equal(r.unhandled, 0, `nothing unhandled on stderr: ${r.stderr.slice(-300)}`)
})
