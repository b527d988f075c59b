/**
 * `api.maxConnections` (docs/configuration.md): node closes a connection past the cap as
 * soon as it is accepted and emits 'drop'. An operator needs to know the cap was hit,
 * but not once per refused connection (a flood would flood the log too): one `warn`
 * when an episode starts, one `info` with the count when connections are taken again.
 * @module
 */
import type { Server } from 'node:net'
import type { Logger } from '../host/contract.ts'

export function capConnections (server: Server, max: number, open: () => number, log: Logger): { onClosed(): void } {
  server.maxConnections = max
  let dropped = 0
  server.on('drop', () => {
    if (dropped++ === 0) {
      log.warn({ maxConnections: max }, 'api connection cap reached: new connections are closed until some end (api.maxConnections)')
    }
  })
  return {
    /** Call when a connection has closed. */
    onClosed () {
      if (dropped > 0 && open() < max) {
        log.info({ maxConnections: max, dropped }, 'api connections accepted again')
        dropped = 0
      }
    },
  }
}
