// engines.node is enforced by activate too, for hosts that import the entry themselves.
import t from 'tap'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { createEpx } from '../../src/plugin.ts'
import { createReferenceHost } from '../../src/host/reference-host.ts'
import { checkNodeVersion } from '../../src/host/node-version.ts'
import { writePki } from '../helpers/certs.ts'

t.test('activate on a Node.js older than engines.node is refused before it opens anything', async t => {
  const dataDir = t.testdir()
  writePki(dataDir)
  const ref = createReferenceHost({ dataDir })
  t.teardown(() => ref.close())
  await t.rejects(createEpx(ref.host, { api: { port: 0 }, publish: { schedule: false } }, { nodeVersion: '20.20.1' }), {
    code: 'EPX_NODE_UNSUPPORTED',
    message: 'epx needs Node.js >=20.20.2, and this process runs Node.js 20.20.1: run the host on a Node.js in that range (older ones lack HTTP and TLS fixes epx relies on)',
  })
  t.notOk(existsSync(join(dataDir, 'epx.lmdb')), 'no store was opened')
})

t.test('the check reads a semver range: the minimum itself and newer lines pass, older ones do not', async t => {
  t.doesNotThrow(() => checkNodeVersion('>=20.20.2', '20.20.2'))
  t.doesNotThrow(() => checkNodeVersion('>=20.20.2', '24.1.0'))
  t.throws(() => checkNodeVersion('>=20.20.2', '20.9.0'), { code: 'EPX_NODE_UNSUPPORTED' })
  t.doesNotThrow(() => checkNodeVersion('>=20.20.2'), 'this process')
})
