/**
 * `npm run test:system`: the system tier (docs/development.md "Test tiers"), through tap with
 * its own output (CI's `.ci/run` reads its summary line as it reads `npm test`'s): the files
 * that import test/helpers/long.ts, with their `SYSTEM_ONLY` tests, and the whole files
 * `.taprc` excludes from `npm test`. At `npm test`'s size; `EPX_LONG=1 npm run test:system`
 * at full size (the campaign's `system` row runs that, but for the door's faults, which its
 * `faults` row runs larger still). Extra arguments go to tap (`-- --jobs 2`).
 * @module
 */
import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { systemTestFiles } from './system.ts'

const root = resolve(import.meta.dirname, '../..')
const files = systemTestFiles({ ownRows: true })
const child = spawn(process.execPath, [join(root, 'node_modules/tap/dist/esm/run.mjs'), '--disable-coverage', '--allow-incomplete-coverage', ...process.argv.slice(2), ...files], {
  cwd: root, stdio: 'inherit', env: { ...process.env, EPX_SYSTEM: '1' },
})
child.once('close', (code, signal) => { process.exitCode = signal ? 1 : code ?? 1 })
