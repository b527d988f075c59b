/**
 * The seq ranges this process committed, whichever of its threads committed them: the
 * solver's thread and the API door's worker write through stores of their own into one
 * replica, followed by one change feed (the main thread's). The feed reports none of them
 * as another writer's: what this process saved, it handed to its solver itself (the
 * door's hand-over, apply/enqueue.ts), and the feed hands it only what other instances
 * saved. So a programme saved here enters this solver's queue once, not once per path.
 *
 * Shared memory (`Store.threadShare()`): three counters and a ring of the last RING
 * ranges. A writer calls `begin()` before it sends a COMMIT, `note(lo, hi)` once it knows
 * the committed range, and `settle()` whatever happened; the feed, having fetched rows,
 * waits (`settled`) for every commit begun by then, so a range is noted before the feed
 * decides whether its rows were this process's.
 * @module
 */

/** Ranges kept: a feed that falls further behind than that reports the oldest as another writer's (the solver's feed hands a site and day it was last handed as it stands once, apply/enqueue.ts). */
const RING = 1024
/** Int32 cells: commits begun, commits settled (noted or failed), ranges noted. */
const BEGUN = 0
const SETTLED = 1
const NOTED = 2
const HEADER_BYTES = 16

/** How long the feed waits for a commit to settle; past it, that commit is taken for lost (its thread ended while it committed). */
const SETTLE_WAIT_MS = 2000

type WaitAsync = (cells: Int32Array, index: number, value: number, timeoutMs: number) => { async: boolean; value: Promise<string> | string }
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync

export class OwnWrites {
  /** What another thread of this process passes to `new OwnWrites(buffer)` to note its commits here. */
  readonly buffer: SharedArrayBuffer
  readonly #counts: Int32Array
  readonly #ranges: BigInt64Array
  /** Commits begun that never settled (their thread ended mid-commit): not waited for again. */
  #lost = 0

  constructor (buffer = new SharedArrayBuffer(HEADER_BYTES + 16 * RING)) {
    this.buffer = buffer
    this.#counts = new Int32Array(buffer, 0, 3)
    this.#ranges = new BigInt64Array(buffer, HEADER_BYTES, 2 * RING)
  }

  /** A COMMIT is about to be sent: `settle()` must follow. */
  begin (): void { Atomics.add(this.#counts, BEGUN, 1) }

  /** The seqs `[lo, hi]` a COMMIT wrote. */
  note (lo: number, hi: number): void {
    const slot = 2 * mod(Atomics.add(this.#counts, NOTED, 1), RING)
    // hi cleared first, set last: a reader that finds the same hi before and after reading lo read one range.
    Atomics.store(this.#ranges, slot + 1, 0n)
    Atomics.store(this.#ranges, slot, BigInt(lo))
    Atomics.store(this.#ranges, slot + 1, BigInt(hi))
  }

  /** The commit begun last ended (noted, or failed): a feed waiting for it goes on. */
  settle (): void {
    Atomics.add(this.#counts, SETTLED, 1)
    Atomics.notify(this.#counts, SETTLED)
  }

  /**
   * Resolves once every commit begun until now has settled, or after SETTLE_WAIT_MS: a
   * commit still unsettled then is taken for lost (its thread ended while it committed)
   * and not waited for again, unless it settles after all.
   */
  async settled (): Promise<void> {
    const begun = Atomics.load(this.#counts, BEGUN)
    // A commit taken for lost that settled after all: waited for again next time.
    this.#lost = Math.max(0, Math.min(this.#lost, (begun - Atomics.load(this.#counts, SETTLED)) | 0))
    const target = (begun - this.#lost) | 0
    const deadline = Date.now() + SETTLE_WAIT_MS
    for (;;) {
      const now = Atomics.load(this.#counts, SETTLED)
      if (((now - target) | 0) >= 0) return
      const left = deadline - Date.now()
      if (left <= 0) {
        this.#lost += (target - now) | 0
        return
      }
      const wait = waitAsync(this.#counts, SETTLED, now, left)
      if (wait.async) await wait.value
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
