/**
 * A promise and its settlers, as `Promise.withResolvers` (node 22) gives them, on node 20 too.
 * The executor is one function of this module, not a closure made per call: V8 holds a
 * function's optimized code weakly once no closure of it is alive, so an executor made per
 * request had its code collected and compiled again and again on V8's helper threads
 * (bench/README.md#closures-made-per-request).
 * @module
 */
export interface Resolvers<T> {
  readonly promise: Promise<T>
  readonly resolve: (value: T) => void
  readonly reject: (reason: unknown) => void
}

// Set by the executor, which the Promise constructor runs at once, and taken at once.
let resolveNext: ((value: never) => void) | undefined
let rejectNext: ((reason: unknown) => void) | undefined

function takeSettlers (resolve: (value: never) => void, reject: (reason: unknown) => void): void {
  resolveNext = resolve
  rejectNext = reject
}

export function withResolvers<T> (): Resolvers<T> {
  const promise = new Promise<T>(takeSettlers as (resolve: (value: T) => void, reject: (reason: unknown) => void) => void)
  const out = { promise, resolve: resolveNext as (value: T) => void, reject: rejectNext! }
  resolveNext = rejectNext = undefined
  return out
}
