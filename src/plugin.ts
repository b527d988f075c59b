/**
 * `activate(host, config)`: the composition root. Everything started is registered in
 * a Disposer and torn down in reverse; a failed activation leaves nothing behind.
 * @module
 */
import { createRequire } from 'node:module'
import type { Activate, EpxHandle, Host } from './host/contract.ts'
import { inDataDir, loadConfig } from './config.ts'
import { openStore, type Store, type StoreFaults } from './store/open-store.ts'
import { openCompanies } from './store/companies.ts'
import { openTokens } from './store/tokens.ts'
import { listenApi } from './http/listener.ts'
import { inboundRoute } from './http/inbound-route.ts'
import { outboundRoute } from './http/outbound-route.ts'
import { openPublication } from './publish/open-publication.ts'
import { startSchedule } from './publish/schedule.ts'
import { addDays, parisDateOf } from './contract/paris-day.ts'
import { openInbound } from './apply/receive-programme.ts'
import { checkNodeVersion } from './host/node-version.ts'

const { version, engines } = createRequire(import.meta.url)('../package.json') as { version: string; engines: { node: string } }

/** Seams for tests; not part of the public surface. */
export interface Internals {
  readonly storeFaults?: StoreFaults
  /** Hands the opened store to a test, so it can seed companies and tokens. */
  readonly onStore?: (store: Store) => void
  /** The Node.js version checked against `engines.node` (default: this process's). */
  readonly nodeVersion?: string
}

class Disposer {
  #stack: Array<() => Promise<void> | void> = []
  add (fn: () => Promise<void> | void): void { this.#stack.push(fn) }
  async dispose (): Promise<void> {
    const errors: unknown[] = []
    while (this.#stack.length) {
      try { await this.#stack.pop()!() } catch (e) { errors.push(e) }
    }
    if (errors.length) throw new AggregateError(errors, 'epx: teardown incomplete')
  }
}

export async function createEpx (host: Host, rawConfig: unknown, internals: Internals = {}): Promise<EpxHandle> {
  // Here too, not only in loadPlugin: a host may import the entry and call activate itself.
  checkNodeVersion(engines.node, internals.nodeVersion)
  const config = loadConfig(rawConfig)
  const log = host.logger.child({ plugin: 'energy-programs-exchange' })
  const bin = new Disposer()
  try {
    const store = openStore(inDataDir(host.dataDir, config.store.path), {
      mapSizeBytes: config.store.mapSizeBytes,
      faults: internals.storeFaults,
      log: log.child({ area: 'store' }),
    })
    bin.add(() => store.close())
    internals.onStore?.(store)
    const companies = openCompanies(store)
    const tokens = openTokens(store)

    const publication = openPublication(store, config.publish, { solver: host.solver, clock: host.clock, log: log.child({ area: 'publish' }) })
    bin.add(() => publication.close())
    const { revisions, publisher } = publication

    // Before the API listens, so no newer programme can be overtaken by an old one.
    const inbound = await openInbound({ store, solver: host.solver, clock: host.clock, log: log.child({ area: 'inbound' }), options: config.inbound })
    bin.add(() => inbound.close())

    const routes = [inboundRoute({ maxBodyBytes: config.inbound.maxBodyBytes, inbound }), outboundRoute({ revisions })]
    const api = await listenApi({ config, dataDir: host.dataDir, log, clock: host.clock, store, companies, tokens, routes })
    bin.add(() => api.close())
    if (config.publish.schedule) {
      const schedule = startSchedule({ config: config.publish, publisher, revisions, solver: host.solver, clock: host.clock, log: log.child({ area: 'schedule' }) })
      bin.add(() => schedule.stop())
    }

    log.info({ url: api.url.href, version }, 'epx activated')
    let closing: Promise<void> | undefined
    return {
      version,
      apiUrl: api.url,
      // Default target: tomorrow in Paris by the host clock; default sites: all of them.
      publish: (request = {}) => publisher.publish({
        targetDate: request.targetDate ?? addDays(parisDateOf(host.clock.now()), 1),
        siteIds: request.siteIds,
      }),
      close () {
        closing ??= bin.dispose().then(() => log.info({}, 'epx closed'))
        return closing
      },
    }
  } catch (err) {
    await bin.dispose().catch(() => {})   // no half-activated plugin
    throw err
  }
}

export const activate: Activate = (host, config) => createEpx(host, config)
