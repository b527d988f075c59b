/**
 * `epx bsp pull|push|status|realise|sites|events|receive`: the reference BSP client (src/bsp/) from the command line, for a
 * BSP trying the API and for the service's own checks. The connection options are shared
 * here; the token is read from a file or EPX_BSP_TOKEN, never from an argument (an
 * argument shows in `ps` and in shell history).
 * @module
 */
import { readFileSync } from 'node:fs'
import { createBspClient, type BspClient, type StatusAnswer } from '../../bsp/client.ts'
import type { Args, CommandSpec, OptionSpec } from '../define-command.ts'
import { usageError } from '../define-command.ts'
import { required } from '../args.ts'
import type { CliIo, Command } from '../io.ts'

export const TOKEN_ENV = 'EPX_BSP_TOKEN'

export const connectionOptions: Readonly<Record<string, OptionSpec>> = {
  url: { type: 'string', arg: 'URL', help: 'the service\'s base URL, e.g. https://localhost:8443, or with the path it is served under, e.g. https://gw.example.com/epx (required)' },
  cert: { type: 'string', arg: 'FILE', help: 'your client certificate, PEM (required)' },
  key: { type: 'string', arg: 'FILE', help: 'its private key, PEM (required)' },
  ca: { type: 'string', arg: 'FILE', help: 'the CA of the service\'s server certificate, PEM (default: the system\'s)' },
  'token-file': { type: 'string', arg: 'FILE', help: `a file holding the Bearer token (default: the ${TOKEN_ENV} environment variable)` },
}

/** The client the options describe; every unreadable file is a usage error naming it. */
export function connect (args: Args, spec: CommandSpec): BspClient {
  const url = required(args, spec, 'url')
  if (!URL.canParse(url) || !url.startsWith('https://')) throw usageError(spec, `--url ${url} is not an https:// URL`)
  const file = (name: string) => {
    const path = required(args, spec, name)
    try {
      return readFileSync(path)
    } catch (err) {
      throw usageError(spec, `cannot read --${name} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
  }
  const token = readToken(args, spec, file)
  return createBspClient({ url, cert: file('cert'), key: file('key'), ...(args.string('ca') ? { ca: file('ca') } : {}), token })
}

function readToken (args: Args, spec: CommandSpec, file: (name: string) => Buffer): string {
  const token = args.string('token-file') !== undefined ? file('token-file').toString('utf8').trim() : process.env[TOKEN_ENV]?.trim()
  if (!token) throw usageError(spec, `no token: give --token-file FILE or set ${TOKEN_ENV} (never the token itself as an argument)`)
  return token
}

export const bspSubcommands: Promise<readonly Command[]> = Promise.all([
  import('./bsp-pull.ts').then(m => m.pullCommand),
  import('./bsp-push.ts').then(m => m.pushCommand),
  import('./bsp-status.ts').then(m => m.statusCommand),
  import('./bsp-realise.ts').then(m => m.realiseCommand),
  import('./bsp-sites.ts').then(m => m.sitesCommand),
  import('./bsp-events.ts').then(m => m.eventsCommand),
  import('./bsp-receive.ts').then(m => m.receiveCommand),
])

type Failed = Extract<StatusAnswer, { kind: 'retry' | 'refused' | 'unreachable' }>
/** An answer with its document. */
type Answered<A> = Exclude<A, { kind: 'unchanged' | Failed['kind'] }>

/**
 * One read over the API (`epx bsp status`, `epx bsp realise`, `epx bsp sites`): its document goes to `show`;
 * a 304 is quiet; a retry, a refusal or a service out of reach is told, exit 1; the client
 * is closed whatever happens.
 */
export async function readOverApi<A extends { readonly kind: string }> (args: Args, spec: CommandSpec, io: CliIo,
  read: (client: BspClient) => Promise<A>, show: (answer: Answered<A>) => number): Promise<number> {
  const client = connect(args, spec)
  try {
    const answer = await read(client)
    if (answer.kind === 'unchanged') return 0
    if (answer.kind === 'retry' || answer.kind === 'refused' || answer.kind === 'unreachable') return readFailed(answer as unknown as Failed, io, args.flag('json'))
    return show(answer as Answered<A>)
  } finally {
    await client.close()
  }
}

/** A read answered without its document (the service asked to retry, refused, or was out of reach): told, exit 1. */
function readFailed (answer: Failed, io: CliIo, json: boolean): number {
  const message = answer.kind === 'retry' ? `${answer.detail}; try again in ${answer.retryAfterSecs ?? 5} s`
    : answer.kind === 'unreachable' ? `cannot reach the service: ${answer.detail}` : answer.message
  const code = answer.kind === 'unreachable' ? 'UNREACHABLE' : answer.code ?? `HTTP ${answer.status}`
  const details = answer.kind === 'refused' ? answer.details : {}
  if (json) io.out(JSON.stringify({ error: { code, message, details } }))
  else {
    io.err(`epx: ${code}: ${message}`)
    for (const [name, why] of Object.entries(details)) io.err(`  ${name}: ${why}`)
  }
  return 1
}
