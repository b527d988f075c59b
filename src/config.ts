/**
 * The plugin configuration: one JSON Schema (config.schema.json, also named by the
 * manifest), defaults filled in, every problem reported at once, then frozen.
 * @module
 */
import { createRequire } from 'node:module'
import { isAbsolute, resolve } from 'node:path'
import { Ajv } from 'ajv'
import { EpxError } from './errors.ts'

const require = createRequire(import.meta.url)
export const configSchema = require('../config.schema.json') as object

export interface EpxConfig {
  readonly api: {
    readonly host: string
    readonly port: number
    readonly publicBaseUrl?: string
    readonly tls: { readonly certFile: string; readonly keyFile: string; readonly clientCaFile: string; readonly crlFile?: string
      readonly sessionCacheSize: number; readonly sessionTimeoutSeconds: number }
    readonly handshakeTimeoutMs: number
    readonly headersTimeoutMs: number
    readonly requestTimeoutMs: number
    readonly keepAliveTimeoutMs: number
    readonly maxHeaderSize: number
    readonly maxConnections: number
    readonly maxRequestsPerSocket: number
    readonly logRequests: boolean
  }
  readonly inbound: { readonly maxBodyBytes: number; readonly maxSites: number; readonly requireContiguous: boolean; readonly retentionDays: number }
  readonly publish: {
    readonly emittedBy: string
    readonly schedule: boolean
    readonly dailyCron: string
    readonly weekendCron: string
    readonly timezone: string
    readonly retentionDays: number
  }
  readonly audit: { readonly retentionDays: number }
  readonly metrics: { readonly enabled: boolean; readonly host: string; readonly port: number }
  readonly store: { readonly path: string; readonly mapSizeBytes: number }
  readonly console: {
    readonly enabled: boolean
    readonly host: string
    readonly port: number
    readonly sessionIdleMinutes: number
    readonly sessionMaxHours: number
  }
}

const validate = new Ajv({ allErrors: true, useDefaults: true, strict: true, strictTypes: false })
  .compile(configSchema)

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
