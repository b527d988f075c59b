/**
 * Waiting, in a test, for what another thread, process, connection or timer makes true:
 * one polling loop, in two shapes.
 * @module
 */

export interface Patience {
  /** How long to wait at most (default 10 s: a bound for a loaded machine, not a figure). */
  readonly ms?: number
  /** Between two reads (default 10 ms). */
  readonly everyMs?: number
}

/**
 * Reads until `ok` holds or `ms` have passed, and resolves to the last value read either
 * way: the caller's assertion on it shows what was there instead.
 */
export async function eventually<T> (read: () => T | Promise<T>, ok: (v: T) => boolean, { ms = 10_000, everyMs = 10 }: Patience = {}): Promise<T> {
  const end = Date.now() + ms
  let v = await read()
  while (!ok(v) && Date.now() < end) {
    await new Promise(resolve => setTimeout(resolve, everyMs))
    v = await read()
  }
  return v
}

/** Waits until `cond` holds; resolves to the ms it took, rejects naming `what` after `ms`. */
export async function until (what: string, cond: () => boolean | Promise<boolean>, patience: Patience = {}): Promise<number> {
  const start = Date.now()
  if (!await eventually(cond, held => held, patience)) throw new Error(`${what}: not within ${patience.ms ?? 10_000} ms`)
  return Date.now() - start
}
