/**
 * `epx start`: the reference host with the plugin loaded through its manifest, as a
 * solver daemon would load it. The CLI owns the process (the plugin never touches
 * it): on SIGINT or SIGTERM it closes the plugin, then the host, and exits 0.
 * @module
 */
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pino from 'pino'
import type { EpxHandle, Logger } from '../../host/contract.ts'
import { loadPlugin } from '../../host/load-plugin.ts'
import { createReferenceHost, type ReferenceHost } from '../../host/reference-host.ts'
import { defineCommand, usageError, type Args, type CommandSpec } from '../define-command.ts'
import type { CliIo } from '../io.ts'
import { readSettings } from '../settings.ts'

/**
 * The folder holding plugin.manifest.json: the project root, found upwards from this
 * module, which is src/cli/commands/start.ts in the sources and dist/cli.js once built.
 */
function projectRoot (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'plugin.manifest.json')) && dirname(dir) !== dir) dir = dirname(dir)
  return dir
}

/** A shutdown that hangs (a stuck socket) must not keep the process forever. */
const SHUTDOWN_GRACE_MS = 15_000

export const serveOptions = {
  port: { type: 'string', arg: 'N', help: 'API port (0 picks a free one; default: api.port of epx.config.json)' },
  host: { type: 'string', arg: 'H', help: 'API address to listen on (default: api.host, 127.0.0.1)' },
  cycle: { type: 'string', arg: 'SECONDS', help: 'seconds between two solver cycles (default: host.cycleSeconds)' },
  'console-port': { type: 'string', arg: 'N', help: 'web console port (0 picks a free one; default: console.port, 8444)' },
} as const

const spec: CommandSpec = {
  usage: 'epx start [--port N] [--host H] [--cycle SECONDS] [--console-port N]',
  about: [
    'Runs the reference solver host with the epx plugin loaded through plugin.manifest.json,',
    'using <data>/epx.config.json. Logs (JSON lines, pino) go to stdout. Stops cleanly on',
    'Ctrl+C (SIGINT) or SIGTERM.',
  ].join('\n'),
  options: serveOptions,
}

export interface ServeOverrides {
  readonly port?: number
  readonly host?: string
  readonly cycleSeconds?: number
  readonly consolePort?: number
  /** Open the web console whatever `console.enabled` says (the demo). */
  readonly console?: boolean
  /** Serve metrics whatever `metrics.enabled` says (the demo): on `metrics.port` when configured, else a free port. */
  readonly metrics?: boolean
}

/** `--port`, `--host`, `--cycle` → overrides, or EPX_USAGE naming the bad one. */
export function serveOverrides (args: Args, cmd: CommandSpec): ServeOverrides {
  const out: { port?: number; host?: string; cycleSeconds?: number; consolePort?: number } = {}
  for (const [option, key] of [['port', 'port'], ['console-port', 'consolePort']] as const) {
    const port = args.string(option)
    if (port === undefined) continue
    if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) throw usageError(cmd, `invalid --${option} '${port}': use an integer from 0 to 65535`)
    out[key] = Number(port)
  }
  const host = args.string('host')
  if (host !== undefined) {
    if (!host.trim()) throw usageError(cmd, '--host must not be empty')
    out.host = host.trim()
  }
  const cycle = args.string('cycle')
  if (cycle !== undefined) {
    if (!/^\d+(\.\d+)?$/.test(cycle) || Number(cycle) < 1) throw usageError(cmd, `invalid --cycle '${cycle}': use a number of seconds >= 1`)
    out.cycleSeconds = Number(cycle)
  }
  return out
}

/** A loopback URL as a browser should open it: the server certificate names localhost. */
export function browserUrl (url: URL): string {
  const shown = new URL(url.href)
  if (['127.0.0.1', '[::1]', '0.0.0.0', '[::]'].includes(shown.hostname)) shown.hostname = 'localhost'
  return shown.href
}

export interface Running { readonly handle: EpxHandle; readonly reference: ReferenceHost; readonly logger: Logger }

/**
 * Starts host and plugin, calls `ready`, then waits for SIGINT/SIGTERM and tears
 * everything down in reverse order. Resolves to the exit code.
 */
export async function serve (io: CliIo, overrides: ServeOverrides, ready?: (r: Running) => Promise<void>): Promise<number> {
  const settings = readSettings(io.dataDir)
  const plugin = structuredClone(settings.plugin) as { api?: Record<string, unknown>; console?: Record<string, unknown> }
  plugin.api = { ...plugin.api }
  if (overrides.port !== undefined) plugin.api.port = overrides.port
  if (overrides.host !== undefined) plugin.api.host = overrides.host
  plugin.console = { ...plugin.console }
  if (overrides.console) plugin.console.enabled = true
  if (overrides.consolePort !== undefined) plugin.console.port = overrides.consolePort
  // The demo serves metrics too: on metrics.port when configured, else on a free port.
  if (overrides.metrics) Object.assign(plugin, { metrics: { port: 0, ...(plugin as { metrics?: object }).metrics, enabled: true } })
  // The host's own logger; secrets never reach a log line (DECISIONS.md), belt and braces.
  const logger = pino({
    name: 'epx-reference-host',
    redact: { paths: ['authorization', '*.authorization', '*.headers.authorization', '*.headers.cookie', 'token', 'secret', 'password'], censor: '[redacted]' },
  }) as unknown as Logger
  const reference = createReferenceHost({
    dataDir: io.dataDir,
    logger,
    sites: settings.host.sites,
    cycleSeconds: overrides.cycleSeconds ?? settings.host.cycleSeconds,
  })
  let handle: EpxHandle
  try {
    handle = (await loadPlugin(projectRoot(), reference.host, plugin)).handle
  } catch (err) {
    await reference.close()
    throw err
  }
  // Host API 1.1: the simulated meters report each quarter-hour as it closes.
  const loaded = handle
  reference.meterInto(readings => loaded.reportMetering(readings))
  reference.start()

  let stop!: (signal: string) => void
  const stopped = new Promise<string>(resolve => { stop = resolve })
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      io.err(`epx: ${signal} again; exiting without waiting for a clean shutdown`)
      process.exit(1)
    }
    stopping = true
    stop(signal)
  }
  let stopping = false
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  try {
    io.out(`epx API listening on ${handle.apiUrl.href} (${reference.sites.length} sites, solver cycle every ${overrides.cycleSeconds ?? settings.host.cycleSeconds} s; Ctrl+C to stop)`)
    if (handle.consoleUrl) io.out(`epx web console on ${browserUrl(handle.consoleUrl)}`)
    if (handle.metricsUrl) io.out(`metrics, health and readiness on ${handle.metricsUrl.href}metrics, /healthz, /readyz`)
    await ready?.({ handle, reference, logger })
    const signal = await stopped
    logger.info({ signal }, 'stopping')
    const grace = setTimeout(() => {
      io.err(`epx: shutdown took more than ${SHUTDOWN_GRACE_MS / 1000} s; exiting`)
      process.exit(1)
    }, SHUTDOWN_GRACE_MS)
    grace.unref()
    try {
      await handle.close()
      await reference.close()
    } finally {
      clearTimeout(grace)
    }
    io.out('epx stopped')
    return 0
  } catch (err) {
    // A failure in `ready` (demo): leave nothing running behind the error.
    await handle.close().catch(() => {})
    await reference.close().catch(() => {})
    throw err
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

export const startCommand = defineCommand(spec, async (args, io) => {
  return serve(io, serveOverrides(args, spec))
})
