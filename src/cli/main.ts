/**
 * `epx`, the operator's command line: global options, dispatch to a command, and the
 * door's rendering of the error catalogue (`epx: <message>`, exit code = the code's
 * `exit` in the catalogue; never a stack for an expected error).
 * @module
 */
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { catalogue } from '../errors.ts'
import { DEFAULT_DATA_DIR, processLines, type CliIo, type Command } from './io.ts'
import { commandGroup, lazyCommand } from './define-command.ts'
import { renderError } from './render-error.ts'

/**
 * Every command, with the line `epx --help` shows for it. Each is imported when it runs
 * (`import()`: esbuild gives each its own chunk of dist/), so a command loads only the
 * packages it uses and `epx --help` none.
 */
export const commands: readonly Command[] = [
  lazyCommand('init', 'create the data folder, a development PKI and epx.config.json (idempotent)',
    async () => (await import('./commands/init.ts')).initCommand),
  commandGroup('company', 'BSP companies: certificate binding, perimeter, status',
    async () => (await import('./commands/companies.ts')).companySubcommands),
  commandGroup('cert', 'client certificates from the development PKI',
    async () => (await import('./commands/certs.ts')).certSubcommands),
  commandGroup('token', 'Bearer tokens: create (secret shown once), list, revoke',
    async () => (await import('./commands/tokens.ts')).tokenSubcommands),
  commandGroup('user', 'web console accounts: add (password shown once), list, disable, reset-password',
    async () => (await import('./commands/users.ts')).userSubcommands),
  commandGroup('sites', 'the sites the solver manages',
    async () => (await import('./commands/sites.ts')).sitesSubcommands),
  lazyCommand('publish', 'publish Besoins_Agreges for a day now (all sites or --site)',
    async () => (await import('./commands/publish.ts')).publishCommand),
  commandGroup('revisions', 'the kept Besoins_Agreges revisions',
    async () => (await import('./commands/publish.ts')).revisionsSubcommands),
  commandGroup('instructions', 'instructions received from BSPs, their status and kW periods',
    async () => (await import('./commands/instructions.ts')).instructionsSubcommands),
  commandGroup('audit', 'the audit trail: who sent, published, created or revoked what, and when',
    async () => (await import('./commands/audit.ts')).auditSubcommands),
  commandGroup('webhook', 'webhook endpoints of a company\'s events: add (echo check, secret shown once), list, log, remove, rotate-secret, redeliver',
    async () => (await import('./commands/webhooks.ts')).webhookSubcommands),
  lazyCommand('deliveries', 'per company, which sites fetched the latest Besoins_Agreges of a day',
    async () => (await import('./commands/deliveries.ts')).deliveriesCommand),
  lazyCommand('realise', 'programme against delivery: per site of a day, programmed and metered energy, verdicts',
    async () => (await import('./commands/realise.ts')).realiseCommand),
  commandGroup('store', 'back up the store (see `epx store backup --help` to restore); migrate its PostgreSQL schema; copy an LMDB store into PostgreSQL; verify a replica against it',
    async () => (await import('./commands/store.ts')).storeSubcommands),
  lazyCommand('start', 'run the reference solver host with the epx plugin (Ctrl+C stops it)',
    async () => (await import('./commands/start.ts')).startCommand),
  commandGroup('bsp', 'the reference BSP client: pull Besoins_Agreges, push a Programme_Soutirage, read what became of it and what was delivered, receive webhooks',
    async () => (await import('./commands/bsp.ts')).bspSubcommands),
  lazyCommand('demo', 'the demo of npm start: init, demo company, certificate, tokens, then start',
    async () => (await import('./commands/demo.ts')).demoCommand),
]

function mainHelp (): string {
  const width = Math.max(...commands.map(c => c.name.length)) + 2
  return [
    'Usage: epx [--data DIR] <command> [options]',
    '',
    'epx, the Energy Programs eXchange gateway: operate the BSP-facing API of the solver.',
    '',
    'Commands:',
    ...commands.map(c => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    'Global options:',
    `  --data DIR     data folder: configuration, PKI, store (default ${DEFAULT_DATA_DIR})`,
    '  -h, --help     show this help; `epx <command> --help` for a command',
    '  --version      print the version',
    '',
    'Backups: `epx store backup DIR` copies the store while epx runs. To restore: stop epx,',
    'move <data>/epx.lmdb aside, copy the backup folder in its place, start epx.',
  ].join('\n')
}

const USAGE_EXIT = catalogue.EPX_USAGE.exit

/** Pulls `--data DIR` / `--data=DIR` out of argv wherever it is (before a `--`). */
function takeDataOption (argv: readonly string[]): { data?: string; rest: string[]; problem?: string } {
  const rest: string[] = []
  let data: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--') { rest.push(...argv.slice(i)); break }
    if (a === '--data') {
      const v = argv[i + 1]
      if (v === undefined || v.startsWith('-')) return { rest, problem: "option '--data DIR' needs a folder" }
      data = v
      i++
    } else if (a.startsWith('--data=')) {
      data = a.slice('--data='.length)
      if (!data) return { rest, problem: "option '--data DIR' needs a folder" }
    } else {
      rest.push(a)
    }
  }
  return { data, rest }
}

/**
 * Runs one `epx` invocation and resolves to its exit code. Tests call it in-process
 * with their own `io`; `bin/epx.js` (and so `npm start`) reaches it through `main()`.
 */
export async function runCli (argv: readonly string[], given: Partial<CliIo> = {}): Promise<number> {
  const out = given.out ?? processLines('stdout')
  const err = given.err ?? processLines('stderr')
  const { data, rest, problem } = takeDataOption(argv)
  if (problem) { err(`epx: ${problem}`); return USAGE_EXIT }
  const io: CliIo = { out, err, dataDir: resolve(data ?? given.dataDir ?? DEFAULT_DATA_DIR) }

  // Global options come before the command name; parseArgs with tokens tells where it is.
  const { tokens } = parseArgs({
    args: rest, strict: false, allowPositionals: true, tokens: true,
    options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } },
  })
  const first = tokens.find(t => t.kind === 'positional' || t.kind === 'option-terminator')
  const globals = tokens.filter(t => t.kind === 'option' && (!first || t.index < first.index))
  for (const g of globals) {
    if (g.kind !== 'option') continue
    if (g.name === 'help') { out(mainHelp()); return 0 }
    if (g.name === 'version') { out((await import('../../package.json', { with: { type: 'json' } })).default.version); return 0 }
    err(`epx: unknown option '${g.rawName}' before the command; see 'epx --help'`)
    return USAGE_EXIT
  }
  if (!first || first.kind !== 'positional') {
    err(mainHelp())
    return USAGE_EXIT
  }
  const name = first.value
  const args = rest.slice(first.index + 1)
  if (name === 'help') return args[0] ? runCli([args[0], '--help'], io) : (out(mainHelp()), 0)
  const command = commands.find(c => c.name === name)
  if (!command) {
    err(`epx: unknown command '${name}'; the commands are: ${commands.map(c => c.name).join(', ')} (see 'epx --help')`)
    return USAGE_EXIT
  }
  // The BSP's client works on no data folder: --data there is a mistake, not an option to ignore.
  if (data !== undefined && command.name === 'bsp') {
    err(`epx: --data is not an option of 'epx bsp' (it reads no data folder: give --url, --cert, --key, --ca and --token-file)`)
    return USAGE_EXIT
  }
  try {
    return await command.run(args, io)
  } catch (e) {
    return renderError(e, err)
  }
}

/** Entry point: runs with the process's argv and sets its exit code (bin/epx.js calls it). */
export async function main (): Promise<void> {
  process.exitCode = await runCli(process.argv.slice(2))
}
