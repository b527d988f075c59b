/**
 * The event bell: how a reader of the events feed (DECISIONS.md "Events for BSPs") waiting
 * for a company's next event learns, at once and at no cost while it waits, that events
 * were written. One 32-bit counter in shared memory per process: every thread that writes
 * events (the solver's: publications, applied cycles, meter values; the door's: programmes,
 * the console's perimeters) rings it once its write is durable (`Store.afterDurable`), and
 * the main thread rings it when the change feed brings another instance's events
 * (plugin.ts). A waiting thread sleeps in `Atomics.waitAsync`: no timer, no poll.
 *
 * A ring says "read again", never what changed: a waiter that finds nothing new for its
 * company waits again. The console rings it after a change of webhooks too, for the
 * deliverer (webhooks/deliverer.ts), which waits on it in its own thread. Another process writing to an LMDB store (the CLI) rings nothing: a
 * waiting read sees its events at the end of its wait, when it reads again anyway.
 * @module
 */

/** `Atomics.waitAsync` (Node >= 16; ES2024, past this build's `lib`). */
type WaitAsync = (a: Int32Array, index: number, value: number) => { async: false; value: string } | { async: true; value: Promise<string> }
const waitAsync: WaitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync

export interface EventBell {
  /** The shared counter: passed to the door's worker, which makes its own bell of it. */
  readonly cell: SharedArrayBuffer
  /** Events were written (and are durable): every waiter of every thread reads again. */
  ring(): void
  /** How many times it rang: read before what a wait would miss (`wait`'s `since`). */
  count(): number
  /**
   * Resolves when the bell rings after `count()` was `since` (at once if it has already),
   * when `ms` have passed, or when `release` is called; `release` also drops the wait (a
   * waiting request that ends otherwise).
   */
  wait(ms: number, since: number): { readonly rung: Promise<void>; release(): void }
  /** Every wait of this thread ends now (the door closes). */
  releaseAll(): void
}

/**
 * A bell over `cell` (a new one without it). `latest`: the thread's store read afresh
 * (`Store.latest`) before a waiter is told of a ring, so it reads what the ring announces.
 */
export function openEventBell (cell: SharedArrayBuffer = new SharedArrayBuffer(4), latest: () => void = () => {}): EventBell {
  const count = new Int32Array(cell)
  /** Each waiter of this thread, with the count it last saw. */
  const waiters = new Map<() => void, number>()
  /** One `waitAsync` for all this thread's waiters, armed while there are any. */
  let armed = false

  const wake = (): void => {
    latest()
    const all = [...waiters.keys()]
    waiters.clear()
    for (const w of all) w()
  }
  const arm = (): void => {
    if (armed || waiters.size === 0) return
    const seen = Atomics.load(count, 0)
    // A ring between a waiter's look and this one: it is told now, not at the next ring.
    for (const [w, since] of waiters) if (since !== seen) { latest(); w() }
    if (waiters.size === 0) return
    armed = true
    const result = waitAsync(count, 0, seen)
    const settled = (): void => {
      armed = false
      if (Atomics.load(count, 0) !== seen) wake()
      arm()
    }
    if (result.async) void result.value.then(settled)
    else settled()
  }

  return {
    cell,
    ring () {
      Atomics.add(count, 0, 1)
      Atomics.notify(count, 0)
    },
    count: () => Atomics.load(count, 0),
    wait (ms, since) {
      if (Atomics.load(count, 0) !== since) { latest(); return { rung: Promise.resolve(), release: () => {} } }
      let release = (): void => {}
      const rung = new Promise<void>(resolve => {
        const timer = setTimeout(() => done(), ms)
        const done = (): void => {
          clearTimeout(timer)
          waiters.delete(done)
          resolve()
        }
        release = done
        waiters.set(done, since)
      })
      arm()
      return { rung, release }
    },
    releaseAll () {
      wake()
      // The armed wait settles too (nothing is left to re-arm it): none outlives the door.
      // Other threads' waits wake with it, find the counter unchanged and wait again.
      if (armed) Atomics.notify(count, 0)
    },
  }
}
