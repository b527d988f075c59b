/**
 * New connections, in the load process: `total` TLS connections, `concurrency` at a time,
 * one GET each (`Connection: close`), as a BSP's shell loop of curl or a Python script
 * without a `Session` does. Raw node:tls, so each connection is its own handshake and the
 * TLS version and the offered session are chosen here: with `resume`, every connection
 * offers the session of the first (a client that keeps its TLS sessions), and the result
 * counts the ones the server took.
 * @module
 */
import { connect, type SecureVersion } from 'node:tls'

export interface ChurnSpec {
  readonly type: 'churn'
  readonly port: number
  readonly tls: { readonly ca: string; readonly cert: string; readonly key: string }
  readonly path: string
  readonly headers: Record<string, string>
  readonly expect: number
  readonly total: number
  readonly concurrency: number
  /** Offer the first connection's session on every later one. */
  readonly resume: boolean
  readonly maxVersion?: SecureVersion
}

export interface ChurnResult {
  readonly type: 'churnResult'
  readonly connections: number
  /** Connections whose session the server resumed. */
  readonly resumed: number
  readonly errors: number
  readonly unexpected: number
  readonly firstProblem?: string
  readonly elapsedMs: number
}

interface One { status: number; reused: boolean; session?: Buffer; head: string }

function once (s: ChurnSpec, session: Buffer | undefined): Promise<One> {
  return new Promise((resolve, reject) => {
    let reused = false
    let got: Buffer | undefined
    const chunks: Buffer[] = []
    const socket = connect({
      host: '127.0.0.1', port: s.port, servername: 'localhost', ca: s.tls.ca, cert: s.tls.cert, key: s.tls.key,
      ...(s.maxVersion ? { maxVersion: s.maxVersion } : {}), ...(session ? { session } : {}),
    })
    const timer = setTimeout(() => { socket.destroy(); reject(new Error('no answer within 30 s')) }, 30_000)
    socket.on('session', x => { got = x })
    socket.once('secureConnect', () => {
      reused = socket.isSessionReused()   // null once closed
      const headers = Object.entries(s.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
      socket.write(`GET ${s.path} HTTP/1.1\r\nHost: localhost\r\n${headers}Connection: close\r\n\r\n`)
    })
    socket.on('data', d => chunks.push(d))
    socket.on('error', err => { clearTimeout(timer); reject(err) })
    socket.on('close', () => {
      clearTimeout(timer)
      const head = Buffer.concat(chunks).subarray(0, 200).toString('latin1')
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), reused, session: got, head })
    })
  })
}

/** The first connection's session (when resuming), taken before the measured run. */
export async function churnSession (s: ChurnSpec): Promise<Buffer | undefined> {
  if (!s.resume) return undefined
  const first = await once(s, undefined)
  if (first.status !== s.expect) throw new Error(`the first connection answered ${first.status}: ${first.head}`)
  return first.session
}

export async function churn (s: ChurnSpec, session: Buffer | undefined, total = s.total): Promise<ChurnResult> {
  let started = 0
  let resumed = 0
  let errors = 0
  let unexpected = 0
  let firstProblem: string | undefined
  const t0 = performance.now()
  const worker = async () => {
    while (started < total && errors < 20) {
      started++
      try {
        const r = await once(s, session)
        if (r.reused) resumed++
        if (r.status !== s.expect) { unexpected++; firstProblem ??= r.head }
      } catch (err) {
        errors++
        firstProblem ??= (err as Error).message
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(s.concurrency, total) }, worker))
  return { type: 'churnResult', connections: started, resumed, errors, unexpected, firstProblem, elapsedMs: performance.now() - t0 }
}
