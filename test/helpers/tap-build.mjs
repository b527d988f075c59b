#!/usr/bin/env node
/**
 * `npm test`'s `pretest` (and .ci/run's, after `npm ci`): builds tap's Test class with the
 * plugins .taprc names when the installed one was built with others, i.e. once after every
 * `npm install` / `npm ci` (.taprc drops @tapjs/typescript, which tap ships built in).
 *
 * tap rebuilds it by itself on that first run, but too late for that run: it has already
 * taken the test processes' loaders from the old build (tap 21, @tapjs/run `run.js`:
 * `testArgv(config)` is read before `build()`). So every test file of the first run after an
 * install started with ts-node's ESM loader beside tsx, and in type-checking mode (the
 * plugin that sets TS_NODE_TRANSPILE_ONLY is no longer in the class): a test process's start
 * went from ~1 s of CPU to ~4.5 s, and a fresh clone's `npm test` (what CI runs) from
 * under 5 minutes to 7 and more. About a second when nothing needs building.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TapConfig } from '@tapjs/config'
import { signature } from '@tapjs/test'

const config = await TapConfig.load()
if (config.pluginSignature !== signature) {
  const tapPackage = fileURLToPath(import.meta.resolve('tap/package.json'))
  const bin = JSON.parse(readFileSync(tapPackage, 'utf8')).bin.tap
  console.error('tap-build: tap was built with other plugins than .taprc names; rebuilding it before the run (tap build)')
  const r = spawnSync(process.execPath, [join(dirname(tapPackage), bin), 'build'], { stdio: 'inherit' })
  process.exit(r.status ?? 1)
}
