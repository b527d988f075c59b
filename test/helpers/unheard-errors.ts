/**
 * An 'error' event emitted on a node-postgres client that nobody listens to: Node throws
 * it, an uncaught exception that ends the process. Recorded here instead (and not thrown)
 * while `hearUnheard` is on, for a test that must tell it apart from its own property.
 * @module
 */
import pg from 'pg'

export interface Unheard {
  /** Each unheard error: its message and the client's application_name. */
  readonly errors: Array<{ message: string; application: string | undefined }>
  restore(): void
}

export function hearUnheard (): Unheard {
  const proto = pg.Client.prototype as unknown as { emit: (this: pg.Client, event: string | symbol, ...args: unknown[]) => boolean }
  const emit = proto.emit
  const errors: Unheard['errors'] = []
  proto.emit = function (event, ...args) {
    if (event === 'error' && this.listenerCount('error') === 0) {
      errors.push({ message: String((args[0] as Error)?.message), application: (this as unknown as { connectionParameters?: { application_name?: string } }).connectionParameters?.application_name })
      return false
    }
    return emit.call(this, event, ...args)
  }
  return { errors, restore: () => { proto.emit = emit } }
}
