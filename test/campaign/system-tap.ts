/**
 * `npm run test:system`: the system tier (docs/development.md "Test tiers"), through tap with
 * its own output (CI's `.ci/run` reads its summary line as it reads `npm test`'s): the files
 * that import test/helpers/long.ts, with their `SYSTEM_ONLY` tests, and the whole files
 * `.taprc` excludes from `npm test`. At `npm test`'s size; `EPX_LONG=1 npm run test:system`
 * at full size (the campaign's `system` row runs that, but for the door's faults, which its
 * `faults` row runs larger still). Extra arguments go to tap (`-- --jobs 2`).
 * @module
 */
import { spawnSystemTap, systemTestFiles } from './system.ts'

const child = spawnSystemTap(systemTestFiles({ ownRows: true }), { args: process.argv.slice(2), stdio: 'inherit' })
child.once('close', (code, signal) => { process.exitCode = signal ? 1 : code ?? 1 })
