/**
 * The files of openapi/, as text: the description and the two JSON Schemas it refers
 * to. `npm run openapi` writes them; test/openapi.test.ts checks the committed ones equal these.
 * @module
 */
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { loadConfig } from '../../src/config.ts'
import { describeApi } from './describe.ts'
import { recordExamples } from './record.ts'

export const OPENAPI_DIR = new URL('../../openapi/', import.meta.url)
/** The API's version, the one its paths name (`/api/v0.5/`): not the gateway's release. */
export const API_VERSION = /\/api\/v([0-9.]+)\//.exec(OUTBOUND_PATH)![1]!
export const DESCRIPTION_FILE = 'epx.openapi.json'

/** Relative path under openapi/ → file text. */
export async function buildOpenapiFiles (): Promise<Record<string, string>> {
  const { document, schemas } = describeApi(await recordExamples(), {
    version: API_VERSION,
    // The server's default; a service configured otherwise says so to its BSPs.
    maxSites: loadConfig({}).inbound.maxSites,
  })
  const text = (v: unknown) => JSON.stringify(v, null, 2) + '\n'
  return { [DESCRIPTION_FILE]: text(document), ...Object.fromEntries(Object.entries(schemas).map(([p, s]) => [p, text(s)])) }
}
