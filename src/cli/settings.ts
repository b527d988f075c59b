/**
 * `<data>/epx.config.json`, the file `epx init` writes: the plugin configuration
 * (config.schema.json, defaults applied by the plugin) and the reference host's own
 * settings. Every command but `init` and `demo` needs it, so a mistyped `--data` is
 * an error instead of a silently created second store.
 * @module
 */
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import sjson from 'secure-json-parse'
import { inDataDir, loadConfig, type EpxConfig, type EpxConfigInput } from '../config.ts'
import { EpxError } from '../errors.ts'
import { folderToCreate, openConfiguredStore, type Store } from '../store/open-store.ts'
import type { Logger } from '../host/contract.ts'
import { processLines } from './io.ts'

const SETTINGS_FILE = 'epx.config.json'

/** Settings of the reference host (not the plugin's: the plugin never sees them). */
export interface HostSettings {
  /** How many simulated sites the reference solver manages. */
  readonly sites: number
  /** Seconds between two solver cycles. */
  readonly cycleSeconds: number
}

export interface Settings {
  readonly file: string
  readonly host: HostSettings
  /** The plugin configuration exactly as written, handed to the plugin as is. */
  readonly plugin: Record<string, unknown>
  /** The same, validated with defaults applied (for the CLI's own use: store path, TLS files). */
  readonly config: Readonly<EpxConfig>
}

const DEFAULT_HOST_SETTINGS: HostSettings = { sites: 5, cycleSeconds: 10 }

/**
 * What `epx init` writes: small and explicit; every other key takes its schema default
 * (typed by the schema, so it cannot name a key the plugin would refuse).
 */
export function initialSettings (): { host: HostSettings; plugin: EpxConfigInput } {
  return {
    host: { ...DEFAULT_HOST_SETTINGS },
    plugin: {
      api: {
        host: '127.0.0.1',
        port: 8443,
        tls: { certFile: 'pki/server.crt', keyFile: 'pki/server.key', clientCaFile: 'pki/client-ca.crt' },
      },
      publish: { emittedBy: 'epx', schedule: true },
      store: { path: 'epx.lmdb' },
    },
  }
}

export function settingsPath (dataDir: string): string {
  return join(dataDir, SETTINGS_FILE)
}

/** Reads and checks the settings; EPX_NOT_FOUND when the folder was never initialized. */
export function readSettings (dataDir: string): Settings {
  const file = settingsPath(dataDir)
  if (!existsSync(file)) {
    throw new EpxError('EPX_NOT_FOUND', [`${dataDir} is not an epx data folder (no ${SETTINGS_FILE}); run \`epx init --data ${dataDir}\` first`])
  }
  let raw: unknown
  try {
    raw = sjson.parse(readFileSync(file, 'utf8'), undefined, { protoAction: 'remove', constructorAction: 'remove' })
  } catch (err) {
    throw new EpxError('EPX_CONFIG_INVALID', [`${file} is not valid JSON: ${(err as Error).message}`])
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new EpxError('EPX_CONFIG_INVALID', [`${file} must hold an object { "host": {...}, "plugin": {...} }`])
  }
  const { host = {}, plugin = {}, ...rest } = raw as Record<string, unknown>
  const unknown = Object.keys(rest).filter(k => k !== '$comment')
  if (unknown.length) {
    throw new EpxError('EPX_CONFIG_INVALID', [`${file}: unknown key(s) ${unknown.join(', ')}; expected "host" and "plugin"`])
  }
  let config: Readonly<EpxConfig>
  try {
    config = loadConfig(plugin)
  } catch (err) {
    throw new EpxError('EPX_CONFIG_INVALID', [`${file} "plugin": ${(err as Error).message.replace(/^invalid configuration: /, '')}`])
  }
  return { file, host: checkHost(file, host), plugin: plugin as Record<string, unknown>, config }
}

function checkHost (file: string, host: unknown): HostSettings {
  if (typeof host !== 'object' || host === null || Array.isArray(host)) {
    throw new EpxError('EPX_CONFIG_INVALID', [`${file} "host" must be an object`])
  }
  const h = { ...DEFAULT_HOST_SETTINGS, ...(host as Partial<HostSettings>) }
  if (!Number.isInteger(h.sites) || h.sites < 1 || h.sites > 10_000) {
    throw new EpxError('EPX_CONFIG_INVALID', [`${file} "host.sites" must be an integer from 1 to 10000`])
  }
  if (typeof h.cycleSeconds !== 'number' || !(h.cycleSeconds >= 1)) {
    throw new EpxError('EPX_CONFIG_INVALID', [`${file} "host.cycleSeconds" must be a number of seconds >= 1`])
  }
  return { sites: h.sites, cycleSeconds: h.cycleSeconds }
}

/**
 * Runs `fn` on the plugin's store (the path its configuration names). LMDB is
 * multi-process, so this works while `epx start` runs; the store is always closed.
 */
export async function withStore<T> (dataDir: string, fn: (store: Store, settings: Settings) => Promise<T> | T): Promise<T> {
  const settings = readSettings(dataDir)
  const path = inDataDir(dataDir, settings.config.store.path)
  const created = folderToCreate(path)
  const store = openConfiguredStore(settings.config.store, { dataDir, path, log: stderrLog })
  let refused = false
  try {
    await store.opened.catch((err: unknown) => { refused = true; throw err })
    return await fn(store, settings)
  } finally {
    await store.close()
    // A store refused (a database without the schema, unreachable) leaves no new folder.
    if (refused && created) rmSync(created, { recursive: true, force: true })
  }
}

/** The store's warnings and faults in a command: `epx: <message>` on stderr, like the CLI's errors. */
const stderrLog: Logger = {
  debug () {},
  info () {},
  warn (obj, msg) { processLines('stderr')(`epx: ${msg ?? ''}${'cause' in obj ? ` (${String(obj.cause)})` : ''}`) },
  error (obj, msg) { processLines('stderr')(`epx: ${msg ?? ''}${'cause' in obj ? ` (${String(obj.cause)})` : ''}`) },
  child () { return stderrLog },
}
