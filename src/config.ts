/**
 * The plugin configuration: one JSON Schema (config-schema.ts, published as
 * config.schema.json, which the manifest names), defaults filled in, every problem
 * reported at once, then frozen. The validator was generated at build time.
 * @module
 */
import { isAbsolute, resolve } from 'node:path'
import type { FromSchema } from 'json-schema-to-ts'
import type { configSchema } from './config-schema.ts'
import validate from './generated/config-validator.js'
import { EpxError } from './errors.ts'

/**
 * The configuration as the plugin uses it: ajv has written every default, so a key with
 * a default is present (json-schema-to-ts counts it required); only `api.publicBaseUrl`
 * and `api.tls.crlFile`, which have none, are optional.
 */
export type EpxConfig = DeepReadonly<FromSchema<typeof configSchema>>

/** The configuration as a host passes it: every key optional. */
export type EpxConfigInput = FromSchema<typeof configSchema, { keepDefaultedPropertiesOptional: true }>

type DeepReadonly<T> = T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T

/** Validates and freezes; throws EPX_CONFIG_INVALID naming every faulty field. */
export function loadConfig (raw: unknown): Readonly<EpxConfig> {
  const candidate = structuredClone(raw ?? {})   // never mutate the host's object
  if (!validate(candidate)) {
    const reasons = (validate.errors ?? []).map(e => {
      const where = e.instancePath || '(root)'
      const extra = e.keyword === 'additionalProperties'
        ? ` '${(e.params as { additionalProperty: string }).additionalProperty}'`
        : ''
      return `${where} ${e.message}${extra}`
    })
    throw new EpxError('EPX_CONFIG_INVALID', [reasons.join('; ')])
  }
  return deepFreeze(candidate as EpxConfig)
}

/** A configured path, resolved against the data folder when relative. */
export function inDataDir (dataDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(dataDir, path)
}

function deepFreeze<T> (o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v)
    Object.freeze(o)
  }
  return o
}
