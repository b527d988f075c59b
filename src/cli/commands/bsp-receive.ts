/**
 * `epx bsp receive`: an endpoint for the service's webhooks (DECISIONS.md "Events for BSPs"),
 * src/bsp/receiver.ts on a port: each verified event printed as a JSON line on stdout, each
 * refusal told on stderr, until SIGINT or SIGTERM. For trying the webhooks, and for a BSP
 * whose own program reads events from a pipe. The secret is read from a file or
 * EPX_BSP_WEBHOOK_SECRET, never from an argument (it would show in `ps`).
 * @module
 */
import { readFileSync } from 'node:fs'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createHttpServer } from '../../node-http.ts'
import type { AddressInfo } from 'node:net'
import { seenIds, webhookReceiver } from '../../bsp/receiver.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import { required } from '../args.ts'

export const SECRET_ENV = 'EPX_BSP_WEBHOOK_SECRET'

const spec: CommandSpec = {
  usage: 'epx bsp receive --port PORT [--host ADDRESS] [--secret-file FILE] [--tls-cert FILE --tls-key FILE] [--tolerance SECONDS]',
  dataDir: false,
  summary: 'receive the service\'s webhooks: each verified event printed as a JSON line',
  about: [
    'Listens for the webhooks the service sends to an endpoint registered for your company (in the',
    'console, or by the operator: epx webhook add COMPANY URL): answers the registration check (GET ?echo=VALUE), verifies',
    'each delivery\'s signature and timestamp (Standard Webhooks), prints each event once as a JSON line',
    'on stdout (a delivery sent again is acknowledged, not printed), and tells each refusal on stderr.',
    'The service calls https:// URLs only: give --tls-cert and --tls-key, or put it behind your TLS front.',
    'The secret (whsec_..., shown once at registration) comes from --secret-file or ' + SECRET_ENV + ';',
    'during a rotation, the file holds both, one a line. Stops on Ctrl+C.',
  ].join('\n'),
  options: {
    port: { type: 'string', arg: 'PORT', help: 'the port to listen on (0: any free port, told on stderr) (required)' },
    host: { type: 'string', arg: 'ADDRESS', help: 'the address to listen on (default 127.0.0.1)' },
    'secret-file': { type: 'string', arg: 'FILE', help: `the endpoint's secret, or one a line during a rotation (default: the ${SECRET_ENV} environment variable)` },
    'tls-cert': { type: 'string', arg: 'FILE', help: 'serve https with this certificate, PEM (with --tls-key)' },
    'tls-key': { type: 'string', arg: 'FILE', help: 'its private key, PEM' },
    tolerance: { type: 'string', arg: 'SECONDS', help: 'how far a delivery\'s timestamp may be from this clock (default 300)' },
  },
}

export const receiveCommand = defineCommand(spec, async (args, io) => {
  const portText = required(args, spec, 'port')
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) throw usageError(spec, `--port ${portText} is not a port number (0 to 65535)`)
  const tolerance = args.string('tolerance')
  if (tolerance !== undefined && !/^\d{1,6}$/.test(tolerance)) throw usageError(spec, `--tolerance ${tolerance} is not a whole number of seconds`)
  if ((args.string('tls-cert') === undefined) !== (args.string('tls-key') === undefined)) throw usageError(spec, '--tls-cert and --tls-key go together')
  const read = (name: string) => {
    const path = required(args, spec, name)
    try {
      return readFileSync(path, 'utf8')
    } catch (err) {
      throw usageError(spec, `cannot read --${name} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
  }
  const secretsIn = (text: string): string[] => {
    const secrets = text.split(/\s+/).filter(Boolean)
    const bad = secrets.find(s => !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(s))
    if (bad) throw usageError(spec, `a secret is whsec_ followed by base64, as the service showed it; got one starting ${JSON.stringify(bad.slice(0, 8))}`)
    return secrets
  }
  const file = args.string('secret-file')
  // The file is read again at each delivery: a rotation rewrites it with no restart, and it
  // may be empty at the start, when the endpoint is registered after the receiver answers
  // the registration check (`epx webhook add ... | tail -1 > FILE`).
  const fileSecrets = (): string[] => {
    try {
      return secretsIn(readFileSync(file!, 'utf8'))
    } catch (err) {
      io.err(`epx: cannot use --secret-file ${file}: ${(err as Error).message}`)
      return []
    }
  }
  let secret: string[] | (() => string[])
  if (file !== undefined) {
    const first = secretsIn(read('secret-file'))
    if (first.length === 0) io.err(`epx: ${file} holds no secret yet: the registration check is answered, deliveries are refused until it does`)
    secret = fileSecrets
  } else {
    secret = secretsIn(process.env[SECRET_ENV] ?? '')
    if (secret.length === 0) throw usageError(spec, `no secret: give --secret-file FILE or set ${SECRET_ENV} (never the secret itself as an argument)`)
  }
  const tls = args.string('tls-cert') !== undefined ? { cert: read('tls-cert'), key: read('tls-key') } : undefined

  const receiver = webhookReceiver({
    secret, seen: seenIds(),
    ...(tolerance !== undefined ? { toleranceSeconds: Number(tolerance) } : {}),
    onEvent: event => { io.out(JSON.stringify(event)) },
    onRefused: r => { io.err(`epx: refused ${r.method} ${r.url}: ${r.status} ${r.reason}`) },
  })
  const server = tls ? createHttpsServer(tls, receiver) : createHttpServer(receiver)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(Number(portText), args.string('host') ?? '127.0.0.1', resolve)
  })
  const { address, port } = server.address() as AddressInfo
  io.err(`epx: listening on ${tls ? 'https' : 'http'}://${address.includes(':') ? `[${address}]` : address}:${port}`)
  await new Promise<void>(resolve => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  server.closeAllConnections()
  await new Promise(resolve => server.close(resolve))
  return 0
})
