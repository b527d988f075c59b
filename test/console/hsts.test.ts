import t from 'tap'
import { buildConsole, isLoopbackHost } from '../../src/console/server.ts'
import { loadConfig } from '../../src/config.ts'
import { startEpx } from '../helpers/epx.ts'
import { openStore } from '../../src/store/open-store.ts'
import { join } from 'node:path'

// HSTS (RFC 6797) only when the console is reachable beyond loopback: on localhost it would
// pin every service of that host name to HTTPS. Nothing listens here (Fastify's inject).

t.test('loopback names and addresses', async t => {
  for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) t.ok(isLoopbackHost(h), h)
  for (const h of ['0.0.0.0', '::', '192.168.1.10', 'console.example.com', '10.0.0.1']) t.notOk(isLoopbackHost(h), h)
})

t.test('a console bound beyond loopback sends Strict-Transport-Security; on loopback it does not', async t => {
  const epx = await startEpx(t)
  const store = openStore(join(epx.dataDir, 'hsts-store'))
  t.teardown(() => store.close())
  for (const [host, hsts] of [['0.0.0.0', true], ['127.0.0.1', false]] as const) {
    const config = loadConfig({ console: { enabled: true, host } })
    const app = await buildConsole({ config, dataDir: epx.dataDir, deps: { store } as never })
    t.teardown(() => app.close())
    const r = await app.inject({ method: 'GET', url: '/login' })
    const header = r.headers['strict-transport-security']
    if (hsts) t.match(header, /^max-age=31536000/, `${host}: HSTS`)
    else t.equal(header, undefined, `${host}: no HSTS`)
    const icon = await app.inject({ method: 'GET', url: '/favicon.ico' })
    t.match(icon, { statusCode: 301, headers: { location: '/assets/favicon.svg' } }, 'the favicon is found (no 404 in every page\'s console)')
  }
})
