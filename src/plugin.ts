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
import { EpxError } from './errors.ts'

const { version } = createRequire(import.meta.url)('../package.json') as { version: string }

/** Seams for tests; not part of the public surface. */
export interface Internals {
  readonly storeFaults?: StoreFaults
  /** Hands the opened store to a test, so it can seed companies and tokens. */
  readonly onStore?: (store: Store) => void
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
  const config = loadConfig(rawConfig)
  const log = host.logger.child({ plugin: 'energy-programs-exchange' })
  const bin = new Disposer()
  try {
    const store = openStore(inDataDir(host.dataDir, config.store.path), {
      mapSizeBytes: config.store.mapSizeBytes,
      faults: internals.storeFaults,
    })
    bin.add(() => store.close())
    internals.onStore?.(store)
    const companies = openCompanies(store)
    const tokens = openTokens(store)

    const routes = [inboundRoute(), outboundRoute()]
    const api = await listenApi({ config, dataDir: host.dataDir, log, clock: host.clock, store, companies, tokens, routes })
    bin.add(() => api.close())

    log.info({ url: api.url.href, version }, 'epx activated')
    let closing: Promise<void> | undefined
    return {
      version,
      apiUrl: api.url,
      async publish () { throw new EpxError('NOT_IMPLEMENTED', ['publish']) },
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
