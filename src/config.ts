/**
 * The plugin configuration: one JSON Schema (config-schema.ts, published as
 * config.schema.json, which the manifest names), defaults filled in, every problem
 * reported at once, then frozen. The validator was generated at build time.
 * @module
 */
import { PASSWORD_IN_CONFIG, storeOptionProblems } from './store/options.ts'
import type { EpxConfig } from './config-schema.ts'
import validate from './generated/config-validator.js'
import { EpxError } from './errors.ts'

export type { EpxConfig, EpxConfigInput } from './config-schema.ts'

/** Validates and freezes; throws EPX_CONFIG_INVALID naming every faulty field. */
export function loadConfig (raw: unknown): Readonly<EpxConfig> {
  const candidate = structuredClone(raw ?? {})   // never mutate the host's object
  if (!validate(candidate)) {
    const reasons = (validate.errors ?? []).map(e => {
      const where = e.instancePath || '(root)'
      if (e.keyword === 'additionalProperties') {
        const key = (e.params as { additionalProperty: string }).additionalProperty
        if (where === '/store/postgres' && /^pass(word)?$/i.test(key)) return PASSWORD_IN_CONFIG
        return `${where} ${e.message} '${key}'`
      }
      return `${where} ${e.message}`
    })
    throw new EpxError('EPX_CONFIG_INVALID', [reasons.join('; ')])
  }
  const config = candidate as EpxConfig
  const problems = storeOptionProblems(config.store)
  if (problems.length) throw new EpxError('EPX_CONFIG_INVALID', [problems.join('; ')])
  return deepFreeze(config)
}

export { inDataDir } from './data-dir.ts'

function deepFreeze<T> (o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v)
    Object.freeze(o)
  }
  return o
}
