/**
 * The files of openapi/, as text: the description and the two JSON Schemas it refers
 * to. `npm run openapi` writes them; test/openapi.test.ts checks the committed ones equal these.
 * @module
 */
import { readFileSync } from 'node:fs'
import { loadConfig } from '../../src/config.ts'
import { describeApi } from './describe.ts'
import { recordExamples } from './record.ts'

export const OPENAPI_DIR = new URL('../../openapi/', import.meta.url)
export const DESCRIPTION_FILE = 'epx.openapi.json'

/** Relative path under openapi/ → file text. */
export async function buildOpenapiFiles (): Promise<Record<string, string>> {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  const { document, schemas } = describeApi(await recordExamples(), {
    version: pkg.version,
    // The server's default; a service configured otherwise says so to its BSPs.
    maxSites: loadConfig({}).inbound.maxSites,
  })
  const text = (v: unknown) => JSON.stringify(v, null, 2) + '\n'
  return { [DESCRIPTION_FILE]: text(document), ...Object.fromEntries(Object.entries(schemas).map(([p, s]) => [p, text(s)])) }
}
