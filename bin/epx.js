#!/usr/bin/env node
// `epx` runs the CLI built by `npm run build` (dist/cli.js, plain JavaScript): no
// TypeScript loader, so a command answers in about a tenth of a second.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const cli = new URL('../dist/cli.js', import.meta.url)
if (!existsSync(cli)) {
  // The error catalogue lives in the build that is missing, so this one message is
  // written here; its exit code is EPX_MANIFEST_INVALID's, the plugin's same complaint.
  process.stderr.write(`epx: ${fileURLToPath(cli)} does not exist; build epx first: npm run build (in ${fileURLToPath(new URL('..', import.meta.url))})\n`)
  process.exitCode = 1
} else {
  const { main } = await import(cli.href)
  await main()
}
