import t from 'tap'
import { connect } from 'node:net'
import { join } from 'node:path'
import { prepareConsole } from '../../src/console/server.ts'
import { loadConfig } from '../../src/config.ts'
import { startEpx } from '../helpers/epx.ts'
import { openStore } from '../../src/store/open-store.ts'

// A door's thread about to die (door/worker.ts) aborts its console: no request may reach
// it after that, or it would be answered by a console whose store is closing (a 503, or
// worse). Node's closeAllConnections() knows only the connections past their TLS handshake.

t.test('abort() closes the console\'s port at once and cuts its connections, those still in their TLS handshake too', async t => {
  const epx = await startEpx(t)
  const store = openStore(join(epx.dataDir, 'abort-store'))
  t.teardown(() => store.close())
  const config = loadConfig({ console: { enabled: true, host: '127.0.0.1', port: 0 } })
  const prepared = await prepareConsole({ config, dataDir: epx.dataDir, deps: { store } as never })
  const running = await prepared.listen()
  t.teardown(() => running.close())
  const port = Number(running.url.port)
  // A TCP connection that never starts its handshake: what a client mid-handshake is to the server.
  const socket = connect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const closed = new Promise<number>(resolve => socket.once('close', () => resolve(Date.now())))
  socket.on('error', () => {})
  await new Promise(resolve => setTimeout(resolve, 50))
  const at = Date.now()
  running.abort()
  const after = await Promise.race([closed, new Promise<number>(resolve => setTimeout(() => resolve(-1), 3000))])
  t.ok(after >= 0 && after - at < 1000, `the handshaking connection was cut (${after < 0 ? 'still open after 3 s' : `${after - at} ms`})`)
  const refused = await new Promise<string>(resolve => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => { s.destroy(); resolve('accepted') })
    s.once('error', err => resolve((err as NodeJS.ErrnoException).code ?? 'error'))
  })
  t.equal(refused, 'ECONNREFUSED', 'no new connection is accepted after abort()')
})
