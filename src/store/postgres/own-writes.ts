/**
 * The seq ranges this process committed, whichever of its threads committed them: the
 * solver's thread and the API door's worker write through stores of their own into one
 * replica, followed by one change feed (the main thread's). The feed reports none of them
 * as another writer's: what this process saved, it handed to its solver itself (the
 * door's hand-over, apply/enqueue.ts), and the feed hands it only what other instances
 * saved. So a programme saved here enters this solver's queue once, not once per path.
 *
 * Shared memory (`Store.threadShare()`): each writer's (store's) counts of commits begun
 * and settled, and a ring of the last RING ranges. A writer calls `begin()` before it
 * sends a COMMIT, `note(lo, hi)` once it knows the committed range, and `settle()`
 * whatever happened; the feed, having fetched rows, waits (`settled`) for every commit
 * begun by then, so a range is noted before the feed decides whether its rows were this
 * process's.
 * @module
 */

/** Ranges kept: a feed that falls further behind than that reports the oldest as another writer's (the solver's feed hands a site and day it was last handed as it stands once, apply/enqueue.ts). */
const RING = 1024
/** Writers (stores) a process opens over its life: the main thread's, each door worker's and standby's; past that, a new one takes the slot of the oldest. */
const WRITERS = 64
/** Int32 cells: writers so far, settles so far (what a waiting feed is woken by), ranges noted; then per writer, its commits begun and settled. */
const WRITER_COUNT = 0
const SETTLES = 1
const NOTED = 2
const BEGUN = 3
const SETTLED = BEGUN + WRITERS
const CELLS = SETTLED + WRITERS
const HEADER_BYTES = Math.ceil(CELLS * 4 / 8) * 8

/** How long the feed waits for a commit to settle; past it, that commit is taken for lost (its thread ended while it committed). */
const SETTLE_WAIT_MS = 2000

type WaitAsync = (cells: Int32Array, index: number, value: number, timeoutMs: number) => { async: boolean; value: Promise<string> | string }
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync

export class OwnWrites {
  /** What another thread of this process passes to `new OwnWrites(buffer)` to note its commits here. */
  readonly buffer: SharedArrayBuffer
  readonly #cells: Int32Array
  readonly #ranges: BigInt64Array
  /** This handle's writer slot. */
  readonly #writer: number
  /** Writers taken for lost, with their counts then (begun, settled): not waited for again while those stand. */
  readonly #lost = new Map<number, readonly [number, number]>()

  constructor (buffer = new SharedArrayBuffer(HEADER_BYTES + 16 * RING)) {
    this.buffer = buffer
    this.#cells = new Int32Array(buffer, 0, CELLS)
    this.#ranges = new BigInt64Array(buffer, HEADER_BYTES, 2 * RING)
    this.#writer = mod(Atomics.add(this.#cells, WRITER_COUNT, 1), WRITERS)
    // A slot taken again was a writer's long gone: what it left unsettled is not waited for.
    Atomics.store(this.#cells, SETTLED + this.#writer, Atomics.load(this.#cells, BEGUN + this.#writer))
  }

  /** A COMMIT is about to be sent: `settle()` must follow. */
  begin (): void { Atomics.add(this.#cells, BEGUN + this.#writer, 1) }

  /** The seqs `[lo, hi]` a COMMIT wrote. */
  note (lo: number, hi: number): void {
    const slot = 2 * mod(Atomics.add(this.#cells, NOTED, 1), RING)
    // hi cleared first, set last: a reader that finds the same hi before and after reading lo read one range.
    Atomics.store(this.#ranges, slot + 1, 0n)
    Atomics.store(this.#ranges, slot, BigInt(lo))
    Atomics.store(this.#ranges, slot + 1, BigInt(hi))
  }

  /** A commit begun by this handle ended (noted, or failed): a feed waiting for it goes on. */
  settle (): void {
    Atomics.add(this.#cells, SETTLED + this.#writer, 1)
    Atomics.add(this.#cells, SETTLES, 1)
    Atomics.notify(this.#cells, SETTLES)
  }

  /**
   * Resolves once every commit begun until now, by any writer, has settled, or after
   * SETTLE_WAIT_MS: a writer whose commit is still unsettled then is taken for lost (its
   * thread ended while it committed) and not waited for again, unless it commits again.
   */
  async settled (): Promise<void> {
    const c = this.#cells
    const writers = Math.min(Atomics.load(c, WRITER_COUNT), WRITERS)
    const waiting: Array<readonly [writer: number, begun: number]> = []
    for (let w = 0; w < writers; w++) {
      const begun = Atomics.load(c, BEGUN + w)
      const settled = Atomics.load(c, SETTLED + w)
      if (((settled - begun) | 0) >= 0) continue
      const lost = this.#lost.get(w)
      if (lost && lost[0] === begun && lost[1] === settled) continue
      this.#lost.delete(w)
      waiting.push([w, begun])
    }
    const deadline = Date.now() + SETTLE_WAIT_MS
    for (;;) {
      const settles = Atomics.load(c, SETTLES)
      const left = waiting.filter(([w, begun]) => ((Atomics.load(c, SETTLED + w) - begun) | 0) < 0)
      if (left.length === 0) return
      const ms = deadline - Date.now()
      if (ms <= 0) {
        for (const [w] of left) this.#lost.set(w, [Atomics.load(c, BEGUN + w), Atomics.load(c, SETTLED + w)])
        return
      }
      const wait = waitAsync(c, SETTLES, settles, ms)
      if (!wait.async) continue
      // A timer of the event loop's own: V8's wait alone keeps nothing alive to time it out.
      let timer: NodeJS.Timeout | undefined
      await Promise.race([wait.value, new Promise(resolve => { timer = setTimeout(resolve, ms) })])
      clearTimeout(timer)
    }
  }

  /**
   * Which of `seqs` (increasing) this process wrote, among the ranges noted above `after`:
   * a predicate to call in increasing seq order.
   */
  mineAbove (after: number): (seq: number) => boolean {
    const ranges: Array<readonly [number, number]> = []
    for (let slot = 0; slot < 2 * RING; slot += 2) {
      const hi = Atomics.load(this.#ranges, slot + 1)
      if (hi === 0n || Number(hi) <= after) continue
      const lo = Atomics.load(this.#ranges, slot)
      if (Atomics.load(this.#ranges, slot + 1) !== hi || lo > hi) continue   // rewritten meanwhile: its new range is past what was fetched
      ranges.push([Number(lo), Number(hi)])
    }
    ranges.sort((a, b) => a[0] - b[0])
    let k = 0
    return seq => {
      while (k < ranges.length && ranges[k]![1] < seq) k++
      return k < ranges.length && ranges[k]![0] <= seq
    }
  }
}

function mod (n: number, m: number): number {
  return ((n % m) + m) % m
}
