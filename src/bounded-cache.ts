/**
 * The one memo with a ceiling that epx's small caches share (parsed dates, formatted
 * instants, valid queries, canonical subjects, a GET's latest revision): a Map that,
 * when a new key would take it past `maxSize`, forgets everything and starts over.
 *
 * Why clear-all rather than LRU (`lru-cache`): what these caches hold is a few hot keys
 * (today's dates, the targets a BSP polls) and a long tail nobody asks twice. A clear
 * costs each hot key one miss; LRU would instead cost every hit a reordering, and the
 * hits are the hot paths (bench/README.md#latest-results: GET and POST rows). A hit here is one
 * `Map.get`.
 * @module
 */
export class BoundedCache<K, V> {
  readonly #entries = new Map<K, V>()
  readonly #maxSize: number

  constructor (maxSize: number) {
    if (!(Number.isInteger(maxSize) && maxSize > 0)) throw new RangeError(`a bounded cache holds at least one entry, got ${maxSize}`)
    this.#maxSize = maxSize
  }

  /** The remembered value, `undefined` when there is none (so never store `undefined`). */
  get (key: K): V | undefined {
    return this.#entries.get(key)
  }

  /** Remembers `value`; a new key that finds the cache full first empties it. */
  set (key: K, value: V): void {
    if (this.#entries.size >= this.#maxSize && !this.#entries.has(key)) this.#entries.clear()
    this.#entries.set(key, value)
  }

  /**
   * The value of `key`, computed by `compute(key, arg)` and remembered when there is
   * none. `arg` is for what `compute` needs besides the key: pass a function declared
   * once, not a closure made per call (a hit then allocates nothing).
   */
  getOrCompute (key: K, compute: (key: K) => V): V
  getOrCompute<A> (key: K, compute: (key: K, arg: A) => V, arg: A): V
  getOrCompute (key: K, compute: (key: K, arg?: unknown) => V, arg?: unknown): V {
    let value = this.#entries.get(key)
    if (value === undefined) {
      value = compute(key, arg)
      this.set(key, value)
    }
    return value
  }

  /** Forgets everything (what it held is no longer true). */
  clear (): void {
    this.#entries.clear()
  }

  get size (): number {
    return this.#entries.size
  }
}
