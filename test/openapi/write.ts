/**
 * `npm run openapi`: (re)writes openapi/epx.openapi.json and openapi/schemas/*.json from
 * the contract's schemas and a real run of the plugin through the tests' harness
 * (test/openapi/, beside test/openapi.test.ts, which fails while the committed files differ
 * from what this builds). Commit the result.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildOpenapiFiles, OPENAPI_DIR } from './build.ts'

for (const [path, text] of Object.entries(await buildOpenapiFiles())) {
  const file = fileURLToPath(new URL(path, OPENAPI_DIR))
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, text)
  console.log(`wrote openapi/${path}`)
}
