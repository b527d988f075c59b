/**
 * What a listener has in flight, its requests and its connections, as a list threaded
 * through them, so close() can reach each one.
 *
 * Not a `Set`: V8 rehashes a hash table that entries keep entering and leaving (every few
 * requests or connections), and the table it leaves keeps its entries, with a link to the new one, for
 * iterators. Once such a table lives in the old generation, each table after it is made
 * there too, and every response any of them held is reached from the old generation:
 * each scavenge kept and promoted every request answered since the one before, until the
 * next full collection (bench/README.md#a-set-that-requests-enter-and-leave). A list whose
 * links are cleared when an element leaves keeps nothing that has left.
 * @module
 */

/** What an element carries: its neighbours while it is in a list, nothing after. */
export interface Linked<T> {
  prev: T | undefined
  next: T | undefined
}

export class InFlight<T extends Linked<T>> {
  #first: T | undefined
  #size = 0

  get size (): number { return this.#size }

  /** Adds an element that is in no list. */
  add (x: T): void {
    x.prev = undefined
    x.next = this.#first
    if (this.#first !== undefined) this.#first.prev = x
    this.#first = x
    this.#size++
  }

  /** Removes an element, and clears its links; an element not in the list is left as it is. */
  delete (x: T): void {
    if (x.prev === undefined && this.#first !== x) return
    if (x.prev !== undefined) x.prev.next = x.next
    else this.#first = x.next
    if (x.next !== undefined) x.next.prev = x.prev
    x.prev = undefined
    x.next = undefined
    this.#size--
  }

  /** The elements now, newest first: the list may change while the caller goes through them. */
  now (): T[] {
    const out: T[] = []
    for (let x = this.#first; x !== undefined; x = x.next) out.push(x)
    return out
  }
}
