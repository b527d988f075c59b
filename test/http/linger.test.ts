// The lingering close's bounds (linger.ts): a refused client cannot make the door read
// without end, neither by sending more than the byte bound nor by stalling.
import t, { type Test } from 'tap'
import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { lingerAfterRefusal, lingerMaxBytes } from '../../src/http/linger.ts'

/**
 * A plain server that refuses every request before its body, lingering within the
 * bounds given; `closed` resolves with the bytes the server read once it has closed.
 */
async function refusingServer (t: Test, maxBytes: number, maxMs: number): Promise<{ port: number; closed: Promise<number> }> {
  let serverClosed!: (bytesRead: number) => void
  const closed = new Promise<number>(resolve => { serverClosed = resolve })
  const server = http.createServer((req, res) => {
    const socket = req.socket
    socket.once('close', () => serverClosed(socket.bytesRead))
    lingerAfterRefusal(req, maxBytes, maxMs)
    res.writeHead(401, { connection: 'close', 'content-length': 0 })
    res.end()
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.closeAllConnections(); server.close() })
  return { port: (server.address() as AddressInfo).port, closed }
}

/** Announces `declared` bytes, sends `send` of them (as fast as it can), then waits; resolves with what it got so far. */
function upload (port: number, declared: number, send: number): Promise<{ response: string; written: number }> {
  return new Promise(resolve => {
    // allowHalfOpen: the client does not answer the server's FIN by closing its own side.
    const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true })
    let response = ''
    let written = 0
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    s.setEncoding('latin1')
    s.on('data', d => { response += d })
    s.on('error', () => {})
    s.on('end', () => resolve({ response, written }))   // the server's half-close: the answer is complete
    s.on('close', () => resolve({ response, written }))
    const pump = () => {
      while (written < send && !s.destroyed) {
        written += chunk.length
        if (!s.write(chunk)) return void s.once('drain', pump)
      }
    }
    s.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-length: ${declared}\r\n\r\n`, pump)
  })
}

t.test('a refused body is read and dropped up to the byte bound, then the connection is cut', async t => {
  const { port, closed } = await refusingServer(t, 256 * 1024, 60_000)
  const { response } = await upload(port, 64 * 1024 * 1024, 64 * 1024 * 1024)
  t.match(response, /^HTTP\/1\.1 401 /, 'the refusal went out first')
  const read = await closed
  t.ok(read < 256 * 1024 + 1024 * 1024, `the server read ${read} bytes of the 64 MiB announced, then closed`)
})

t.test('a client that stalls after a refusal is closed by the time bound', async t => {
  const { port, closed } = await refusingServer(t, 64 * 1024 * 1024, 200)
  const { response } = await upload(port, 1024 * 1024, 1024)   // then silence
  t.match(response, /^HTTP\/1\.1 401 /)
  await closed
  t.pass('the server closed the connection (else this test times out)')
})

t.test('the byte bound is the inbound limit, at least 16 MiB', async t => {
  t.equal(lingerMaxBytes(1024), 16 * 1024 * 1024)
  t.equal(lingerMaxBytes(64 * 1024 * 1024), 64 * 1024 * 1024)
})
