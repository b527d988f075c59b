/**
 * `epx-bsp pull|push|status|realise|sites|events|receive`: the bin of the BSP client package (packages/epx-bsp/), the
 * same commands as `epx bsp ...` without the service's side: a BSP installs the client
 * alone, and `npx epx-bsp` runs it. Help and usage lines name `epx-bsp`.
 * @module
 */
import { commandGroup } from './define-command.ts'
import { processLines } from './io.ts'
import { renderError } from './render-error.ts'

const BIN = 'epx-bsp'

/** Runs one `epx-bsp` invocation; resolves to its exit code. */
export async function runBspCli (argv: readonly string[], io: { out(line: string): void; err(line: string): void } = {
  out: processLines('stdout'),
  err: processLines('stderr'),
}): Promise<number> {
  const named = (line: string) => line.replaceAll('epx bsp', BIN)
  const out = (line: string) => io.out(named(line))
  // Every message on stderr starts with the program's name: `epx-bsp: UNKNOWN_PATH: ...`.
  const err = (line: string) => io.err(named(line).replace(/^epx: /, `${BIN}: `))
  if (argv[0] === '--version') {
    out(process.env.EPX_BSP_VERSION ?? 'unknown')
    return 0
  }
  const group = commandGroup('bsp', 'the reference BSP client of the Energy Programs eXchange: pull Besoins_Agreges, push a Programme_Soutirage, read what became of it, receive its webhooks',
    async () => (await import('./commands/bsp.ts')).bspSubcommands)
  try {
    // No data folder: dataDir is never read by these commands.
    return await group.run([...argv], { out, err, dataDir: process.cwd() })
  } catch (e) {
    return renderError(e, err)
  }
}

export async function main (): Promise<void> {
  process.exitCode = await runBspCli(process.argv.slice(2))
}
