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
 *
 * A ring slot is written under a tag (a seqlock): the note's index, cleared before its
 * range is written and set after, so a reader knows a slot it reads is the note it wants,
 * whole. Each reader copies the slots noted since its last read into a mirror of its own,
 * so a catch-up reads the few ranges noted since, not the whole ring's BigInts (~16 µs a
 * catch-up once the ring is full, on the solver's thread: bench/README.md#e-pg-the-postgresql-store).
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
/** Then a tag per slot (Int32), then the ranges (BigInt64 pairs). */
const TAGS_BYTES = 4 * RING

/** How long the feed waits for a commit to settle; past it, that commit is taken for lost (its thread ended while it committed). */
const SETTLE_WAIT_MS = 2000

type WaitAsync = (cells: Int32Array, index: number, value: number, timeoutMs: number) => { async: boolean; value: Promise<string> | string }
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync

export class OwnWrites {
  /** What another thread of this process passes to `new OwnWrites(buffer)` to note its commits here. */
  readonly buffer: SharedArrayBuffer
  readonly #cells: Int32Array
  readonly #tags: Int32Array
  readonly #ranges: BigInt64Array
  /** This handle's writer slot. */
  readonly #writer: number
  /** Writers taken for lost, with their counts then (begun, settled): not waited for again while those stand. */
  readonly #lost = new Map<number, readonly [number, number]>()
  /** The ranges this handle has read, by slot (`mineAbove`): lo, hi; hi 0 for none. */
  readonly #mirror = new Float64Array(2 * RING)
  /** The index of the first note not yet copied to the mirror (Int32, wrapping as NOTED does). */
  #unread = 0

  constructor (buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(HEADER_BYTES + TAGS_BYTES + 16 * RING)
    this.#cells = new Int32Array(this.buffer, 0, CELLS)
    this.#tags = new Int32Array(this.buffer, HEADER_BYTES, RING)
    this.#ranges = new BigInt64Array(this.buffer, HEADER_BYTES + TAGS_BYTES, 2 * RING)
    // A new ring's slots hold, as it were, the notes of the lap before the first (hi 0: no range).
    if (!buffer) for (let slot = 0; slot < RING; slot++) this.#tags[slot] = slot - RING
    this.#writer = mod(Atomics.add(this.#cells, WRITER_COUNT, 1), WRITERS)
    // A slot taken again was a writer's long gone: what it left unsettled is not waited for.
    Atomics.store(this.#cells, SETTLED + this.#writer, Atomics.load(this.#cells, BEGUN + this.#writer))
  }

  /** A COMMIT is about to be sent: `settle()` must follow. */
  begin (): void { Atomics.add(this.#cells, BEGUN + this.#writer, 1) }

  /** The seqs `[lo, hi]` a COMMIT wrote. */
  note (lo: number, hi: number): void {
    const index = Atomics.add(this.#cells, NOTED, 1)
    const slot = mod(index, RING)
    // The tag cleared first (to no index a reader looks for), set last.
    Atomics.store(this.#tags, slot, ~index)
    Atomics.store(this.#ranges, 2 * slot, BigInt(lo))
    Atomics.store(this.#ranges, 2 * slot + 1, BigInt(hi))
    Atomics.store(this.#tags, slot, index)
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
    const ranges = this.#rangesAbove(after)
    let k = 0
    return seq => {
      while (k < ranges.length && ranges[k]![1] < seq) k++
      return k < ranges.length && ranges[k]![0] <= seq
    }
  }

  /**
   * Whether every seq of `(after, upTo]` lies in a range noted here: then every row there
   * is this process's (a sequence's gap, or a range not noted yet, says no).
   */
  coverAll (after: number, upTo: number): boolean {
    const ranges = this.#rangesAbove(after)
    let next = after + 1
    for (const [lo, hi] of ranges) {
      if (lo > next) return false
      if (hi >= next) next = hi + 1
      if (next > upTo) return true
    }
    return next > upTo
  }

  /** The ranges noted that end past `after`, by their start. */
  #rangesAbove (after: number): Array<readonly [number, number]> {
    this.#readNotes()
    const mirror = this.#mirror
    const ranges: Array<readonly [number, number]> = []
    for (let slot = 0; slot < 2 * RING; slot += 2) {
      const hi = mirror[slot + 1]!
      if (hi > after && hi > 0 && mirror[slot]! <= hi) ranges.push([mirror[slot]!, hi])
    }
    ranges.sort((a, b) => a[0] - b[0])
    return ranges
  }

  /**
   * Copies to the mirror the notes made since the last read, of the last RING. A note
   * still being written is read again next time (those after it are read now); one
   * written over meanwhile is forgotten, as the ring forgets.
   */
  #readNotes (): void {
    const noted = Atomics.load(this.#cells, NOTED)
    let from = this.#unread
    if (((noted - from) | 0) > RING) from = (noted - RING) | 0
    let next = noted
    for (let index = from; index !== noted; index = (index + 1) | 0) {
      const slot = mod(index, RING)
      const tag = Atomics.load(this.#tags, slot)
      if (tag === index) {
        const lo = Atomics.load(this.#ranges, 2 * slot)
        const hi = Atomics.load(this.#ranges, 2 * slot + 1)
        if (Atomics.load(this.#tags, slot) === index) {
          this.#mirror[2 * slot] = Number(lo)
          this.#mirror[2 * slot + 1] = Number(hi)
          continue
        }
      }
      // Not yet written (the tag a former note's, or cleared for this one): read it again.
      if (next === noted && (tag === ~index || tag === ((index - RING) | 0) || tag === ~((index - RING) | 0))) next = index
    }
    this.#unread = next
  }
}

function mod (n: number, m: number): number {
  return ((n % m) + m) % m
}
