/**
 * The shell every `epx` command shares, written once: `defineCommand(spec, run)` parses
 * argv against the spec on top of node's `util.parseArgs`, answers `-h`/`--help` with
 * the spec's help text, turns every mistake into an EPX_USAGE error (exit 2) that names
 * what to fix, and calls `run` with the parsed arguments. `commandGroup` does the same
 * for a command made of subcommands (`epx company add|list|...`), loading them on use.
 * @module
 */
import { parseArgs } from 'node:util'
import { catalogue, EpxError } from '../errors.ts'
import type { CliIo, Command } from './io.ts'

export interface OptionSpec {
  readonly type: 'string' | 'boolean'
  readonly multiple?: boolean
  readonly short?: string
  /** Placeholder shown in the help, e.g. `ID`. */
  readonly arg?: string
  readonly help: string
}

export interface CommandSpec {
  /**
   * `epx company add ID --name NAME [...]`: the first line of `--help` and of usage
   * errors; its last plain word (`add`) is the command's name.
   */
  readonly usage: string
  /** One line for the listing of its group (`epx company --help`); top-level commands have theirs in main.ts. */
  readonly summary?: string
  /** What the command does, for `--help`. */
  readonly about: string
  readonly options?: Readonly<Record<string, OptionSpec>>
  /** Names of the required positionals, in order (`['ID']`); no others are accepted. */
  readonly positionals?: readonly string[]
  /** False for a command that reads no data folder (`epx bsp ...`): its help offers no `--data`. */
  readonly dataDir?: boolean
}

/** Parsed arguments with typed getters. */
export class Args {
  constructor (
    readonly positionals: readonly string[],
    readonly values: Readonly<Record<string, string | boolean | Array<string | boolean> | undefined>>,
  ) {}

  string (name: string): string | undefined {
    const v = this.values[name]
    return typeof v === 'string' ? v : undefined
  }

  strings (name: string): string[] {
    const v = this.values[name]
    if (v === undefined) return []
    return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string')
  }

  flag (name: string): boolean {
    return this.values[name] === true
  }
}

/**
 * A command: `run` gets the checked arguments and resolves to the exit code (nothing
 * means 0); any EpxError it throws is rendered by main.ts.
 */
export function defineCommand (spec: CommandSpec, run: (args: Args, io: CliIo) => Promise<number | void>): Command {
  const words = commandOf(spec).split(' ')
  return {
    name: words[words.length - 1]!,
    summary: spec.summary ?? '',
    async run (argv, io) {
      const args = parseCommand(argv, spec, io)
      if (!args) return 0
      return (await run(args, io)) ?? 0
    },
  }
}

/** The text of `--help` for a spec. */
function helpText (spec: CommandSpec): string {
  const rows: Array<[string, string]> = []
  for (const [name, o] of Object.entries(spec.options ?? {})) {
    const flag = (o.short ? `-${o.short}, ` : '') + `--${name}` + (o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : '')
    rows.push([flag, o.help + (o.multiple ? ' (repeatable)' : '')])
  }
  if (spec.dataDir !== false) rows.push(['--data DIR', 'data folder (default ./var/epx)'])
  rows.push(['-h, --help', 'show this help'])
  const width = Math.max(...rows.map(r => r[0].length)) + 2
  return [
    `Usage: ${spec.usage}`,
    '',
    spec.about,
    '',
    'Options:',
    ...rows.map(([f, h]) => `  ${f.padEnd(width)}${h}`),
  ].join('\n')
}

export function usageError (spec: CommandSpec, problem: string): EpxError {
  return new EpxError('EPX_USAGE', [`${problem}\nusage: ${spec.usage}\n(see '${commandOf(spec)} --help')`])
}

/** The words of the usage line before the first placeholder or option: `epx company add`. */
function commandOf (spec: CommandSpec): string {
  const words: string[] = []
  for (const w of spec.usage.split(' ')) {
    if (!/^[a-z][a-z-]*$/.test(w)) break
    words.push(w)
  }
  return words.join(' ')
}

/**
 * Parses `argv` against `spec`; prints the help and returns undefined on `-h`/`--help`.
 * Throws EPX_USAGE on an unknown option, a missing value, a missing or extra positional.
 */
function parseCommand (argv: readonly string[], spec: CommandSpec, io: CliIo): Args | undefined {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(helpText(spec))
    return undefined
  }
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {}
  for (const [name, o] of Object.entries(spec.options ?? {})) {
    options[name] = { type: o.type, ...(o.multiple ? { multiple: true } : {}), ...(o.short ? { short: o.short } : {}) }
  }
  let parsed: { values: Record<string, unknown>; positionals: string[] }
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true })
  } catch (err) {
    // parseArgs messages name the option ("Unknown option '--nme'", "Option '--name <value>' argument missing").
    const message = (err as Error).message.split('. To specify')[0]!.replace(/\.$/, '')
    throw usageError(spec, message.charAt(0).toLowerCase() + message.slice(1))
  }
  const names = spec.positionals ?? []
  if (parsed.positionals.length < names.length) {
    throw usageError(spec, `missing ${names.slice(parsed.positionals.length).join(' ')}`)
  }
  if (parsed.positionals.length > names.length) {
    throw usageError(spec, `unexpected argument '${parsed.positionals[names.length]}'`)
  }
  return new Args(parsed.positionals, parsed.values as Args['values'])
}

/**
 * A top-level command whose code is loaded when it runs: `epx --help` and the other
 * commands never load its dependencies (node-forge, lmdb, pino, ... cost a tenth of a
 * second each to import).
 */
export function lazyCommand (name: string, summary: string, load: () => Promise<Command>): Command {
  return { name, summary, run: async (argv, io) => (await load()).run(argv, io) }
}

/**
 * A command made of subcommands (`epx company add|list|...`), loaded on use:
 * `epx company` and `epx company --help` list them; an unknown one is a usage error.
 */
export function commandGroup (name: string, summary: string, load: () => Promise<readonly Command[]>): Command {
  const listing = (subcommands: readonly Command[]): string => {
    const width = Math.max(...subcommands.map(c => c.name.length)) + 2
    return [
      `Usage: epx ${name} <subcommand> [options]`,
      '',
      summary,
      '',
      'Subcommands:',
      ...subcommands.map(c => `  ${c.name.padEnd(width)}${c.summary}`),
      '',
      `Run 'epx ${name} <subcommand> --help' for the options of each.`,
    ].join('\n')
  }
  return {
    name,
    summary,
    async run (argv, io) {
      const subcommands = await load()
      const [sub, ...rest] = argv
      if (sub === undefined) {
        io.err(listing(subcommands))
        return catalogue.EPX_USAGE.exit
      }
      if (sub === '--help' || sub === '-h' || sub === 'help') {
        io.out(listing(subcommands))
        return 0
      }
      const found = subcommands.find(c => c.name === sub)
      if (!found) {
        throw new EpxError('EPX_USAGE', [
          `unknown subcommand 'epx ${name} ${sub}'; expected one of: ${subcommands.map(c => c.name).join(', ')}`,
        ])
      }
      return found.run(rest, io)
    },
  }
}
