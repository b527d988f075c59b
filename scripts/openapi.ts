/**
 * `npm run openapi`: (re)writes openapi/epx.openapi.json and openapi/schemas/*.json from
 * the contract's schemas and a real run of the plugin (scripts/openapi/). Commit the result:
 * a test fails while the committed files differ from what this builds.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildOpenapiFiles, OPENAPI_DIR } from './openapi/build.ts'

for (const [path, text] of Object.entries(await buildOpenapiFiles())) {
  const file = fileURLToPath(new URL(path, OPENAPI_DIR))
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, text)
  console.log(`wrote openapi/${path}`)
}
