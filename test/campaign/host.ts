/**
 * The campaign's solver daemon: a child process that loads the built plugin through its
 * manifest (`dist/index.js`, as a solver loads it) with the reference host, on a
 * data folder the parent prepared. Built to plain JavaScript (test-output/campaign/campaign-host.js)
 * so that a `kill -9` cycle costs a Node start, not a TypeScript loader.
 *
 * `CAMPAIGN_HOST` (JSON): `{ dataDir, sites, config?, publish?: { targetDate, siteIds } }`.
 * Messages out: `activation { ok, code?, message? }` (a refused activation leaves the
 * process up, as a solver would), then `ready { port }` when serving; `memory` (after GC).
 * Messages in: `memory`, `exit`. Dies with its parent and on a deadline (`CAMPAIGN_HOST_DEADLINE_MS`,
 * 20 minutes by default): a campaign that died never leaves a daemon behind.
 * @module
 */
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import pino from 'pino'
import { createReferenceHost } from '../../src/host/reference-host.ts'
import { loadPlugin } from '../../src/host/load-plugin.ts'
import type { Logger } from '../../src/host/contract.ts'

export interface HostOptions {
  readonly dataDir: string
  readonly sites: number
  readonly config?: Record<string, unknown>
  readonly publish?: { readonly targetDate: string; readonly siteIds: readonly string[] }
  /** Seconds between the reference solver's cycles (0: none, the default). */
  readonly cycleSeconds?: number
}

const repoRoot = resolve(fileURLToPath(import.meta.url), '../../..')

// Node ignores SIGXFSZ, so a write past the file size limit (the disk-full row's
// `prlimit --fsize`) fails with EFBIG and the store answers 503, as in a solver daemon.
// Under tap, a child process also runs signal-exit (tap's process-info hook), which
// catches SIGXFSZ and raises it again when nobody else listens: the daemon would die
// of a signal no real daemon receives. A listener of our own keeps node's behaviour.
process.on('SIGXFSZ', () => {})

/** Anonymous resident memory (the process's own, without LMDB's file-backed map); Linux only. */
function rssAnon (): number | undefined {
  try {
    const m = /^RssAnon:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))
    return m ? Number(m[1]) * 1024 : undefined
  } catch {
    return undefined
  }
}

function send (msg: object): void {
  if (process.send) process.send(msg)
}

/** Exits on `exit`, with the parent, and at the deadline; answers the other messages with `on`. */
function control (on: (msg: { type: string }) => Promise<void>): void {
  const deadlineMs = Number(process.env.CAMPAIGN_HOST_DEADLINE_MS ?? 20 * 60_000)
  setTimeout(() => { console.error(`campaign-host: deadline reached, exiting`); process.exit(3) }, deadlineMs).unref()
  process.on('disconnect', () => process.exit(0))
  process.on('message', (msg: { type: string }) => {
    if (msg.type === 'exit') process.exit(0)
    on(msg).catch(err => send({ type: 'failed', message: String((err as Error)?.stack ?? err) }))
  })
}

async function main (): Promise<void> {
  const o = JSON.parse(process.env.CAMPAIGN_HOST ?? '{}') as HostOptions
  const logger = pino({ level: 'info' }, pino.destination({ dest: join(o.dataDir, 'epx.log'), sync: true })) as unknown as Logger
  const ref = createReferenceHost({ dataDir: o.dataDir, logger, sites: o.sites, cycleSeconds: o.cycleSeconds ?? 0 })
  control(async msg => {
    if (msg.type !== 'memory') return
    const gc = (globalThis as { gc?: () => void }).gc
    for (let i = 0; i < 3; i++) { gc?.(); await new Promise(r => setTimeout(r, 100)) }
    const m = process.memoryUsage()
    send({ type: 'memory', heapUsed: m.heapUsed, rss: m.rss, rssAnon: rssAnon(), gcExposed: Boolean(gc) })
  })
  // The campaign's clients are one company each, as fast as they can: no request budget in their way.
  const config = { publish: { schedule: false }, inbound: { maxBytesPerCompanyPerDay: 2 ** 50 }, ...o.config, api: { host: '127.0.0.1', port: 0, rateLimit: { get: { perSecond: 1_000_000, burst: 1_000_000 }, post: { perSecond: 1_000_000, burst: 1_000_000 } }, ...(o.config?.api as object | undefined) } }
  let handle
  try {
    ({ handle } = await loadPlugin(repoRoot, ref.host, config))
  } catch (err) {
    // A solver logs a refused plugin and carries on: so does this host, until told to exit.
    send({ type: 'activation', ok: false, message: (err as Error).message, code: (err as { code?: string }).code })
    return
  }
  send({ type: 'activation', ok: true })
  ref.start()   // the solver's cycles, when cycleSeconds asks for them
  if (o.publish) {
    const report = await handle.publish({ targetDate: o.publish.targetDate, siteIds: [...o.publish.siteIds] })
    if (report.failed.length) throw new Error(`publication failed: ${report.failed[0]!.reason}`)
  }
  process.on('SIGTERM', () => { void handle.close().finally(() => process.exit(0)) })
  send({ type: 'ready', port: Number(handle.apiUrl.port) })
}

main().catch(err => {
  send({ type: 'failed', message: String((err as Error)?.stack ?? err) })
})
