/**
 * How the reference host loads a plugin: read and check its manifest, check the host
 * API range (semver) and the configuration against the plugin's own schema, then
 * import the entry and call its activate export.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Ajv } from 'ajv'
import semver from 'semver'
import { EpxError } from '../errors.ts'
import type { EpxHandle, Host } from './contract.ts'
import { checkNodeVersion } from './node-version.ts'
// Imported, not read at run time: esbuild inlines it in dist/cli.js, wherever that lies.
import manifestSchema from '../../plugin.manifest.schema.json' with { type: 'json' }


export interface Manifest {
  readonly id: string
  readonly name: string
  readonly version: string
  readonly entry: string
  readonly export: string
  readonly engines: { readonly host: string; readonly node?: string }
  readonly configSchema: string
  readonly capabilities: Readonly<Record<string, unknown>>
  readonly contributes?: Readonly<Record<string, unknown>>
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false })
const validateManifest = ajv.compile<Manifest>(manifestSchema)

const explain = (errors: typeof validateManifest.errors) =>
  (errors ?? []).map(e => `${e.instancePath || '(root)'} ${e.message}`).join('; ')

function readJson (path: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch (err) {
    throw new EpxError('EPX_MANIFEST_INVALID', [path, `cannot read ${what}: ${(err as Error).message}`])
  }
}

/** Reads `<pluginDir>/plugin.manifest.json`, schema-checked. */
export function readManifest (pluginDir: string): Manifest {
  const path = resolve(pluginDir, 'plugin.manifest.json')
  const manifest = readJson(path, 'the manifest')
  if (!validateManifest(manifest)) throw new EpxError('EPX_MANIFEST_INVALID', [path, explain(validateManifest.errors)])
  return manifest
}

export interface LoadOptions {
  /** The Node.js version checked against `engines.node` (default: this process's; a test seam). */
  readonly nodeVersion?: string
}

export async function loadPlugin (pluginDir: string, host: Host, config: unknown, opts: LoadOptions = {}): Promise<{ manifest: Manifest; handle: EpxHandle }> {
  const manifest = readManifest(pluginDir)
  if (!semver.satisfies(host.apiVersion, manifest.engines.host)) {
    throw new EpxError('EPX_HOST_API_MISMATCH', [host.apiVersion, manifest.engines.host])
  }
  if (manifest.engines.node) checkNodeVersion(manifest.engines.node, opts.nodeVersion)
  // Checked here too, so a bad configuration is refused before any plugin code runs;
  // the plugin checks again inside activate, as it must for any other host.
  const configSchema = readJson(resolve(pluginDir, manifest.configSchema), 'the configuration schema') as object
  const validateConfig = new Ajv({ allErrors: true, strict: false }).compile(configSchema)
  if (!validateConfig(structuredClone(config ?? {}))) {
    throw new EpxError('EPX_CONFIG_INVALID', [explain(validateConfig.errors)])
  }
  const entry = resolve(pluginDir, manifest.entry)
  // A plugin that ships a build names the built file: from a source checkout, say how to make it.
  if (!existsSync(entry)) throw new EpxError('EPX_MANIFEST_INVALID', [manifest.entry, `${entry} does not exist; build the plugin first (epx: npm run build)`])
  const mod = await import(pathToFileURL(entry).href) as Record<string, unknown>
  const activate = mod[manifest.export]
  if (typeof activate !== 'function') {
    throw new EpxError('EPX_MANIFEST_INVALID', [manifest.entry, `exports no function '${manifest.export}'`])
  }
  const handle = await (activate as (h: Host, c: unknown) => Promise<EpxHandle>)(host, config)
  return { manifest, handle }
}
