/**
 * Which instance runs what must run once for all of them (the publication schedule and
 * retention), when several epx instances share one store (docs/operating.md, "Several
 * instances on one database"). The store decides: an LMDB store has one instance, always
 * the leader; a PostgreSQL store holds the leadership through the database
 * (postgres/leader.ts).
 *
 * Leading work is fenced: the store writes a `fenced` run makes commit only while this
 * instance still leads, checked by the database in the write's own transaction, so a
 * run started by a leader that was deposed meanwhile (frozen past its lease, cut off)
 * commits nothing, whatever it believed (docs/operating.md, "Several instances on one
 * database").
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { EpxError } from '../errors.ts'

export interface Leadership {
  /** True while this instance leads. Sync: asked before each scheduled run. */
  isLeader(): boolean
  /**
   * Told each change, at once: `true` when this instance has taken the leadership,
   * `false` when it has lost it (it must stop leading work now). Returns the unsubscribe.
   */
  onChange(listener: (leading: boolean) => void): () => void
  /**
   * Runs `run` fenced: every `writeDurable` it makes (in its own async continuation,
   * not in timers that outlive it) commits only if this instance still leads when the
   * write's transaction runs, and is otherwise refused with NO_STORE (`notLeading`),
   * writing nothing. A no-op for the sole instance.
   */
  fenced<T>(run: () => Promise<T>): Promise<T>
}

/**
 * What a fenced write asks of the leadership: the token the database checks (the
 * PostgreSQL backend pid of the leadership's session), or undefined when this instance
 * does not lead now.
 */
export interface Fence {
  token(): number | undefined
}

const fences = new AsyncLocalStorage<Fence>()

/** Runs `run` with its store writes fenced by `fence` (a Leadership's `fenced`). */
export function runFenced<T> (fence: Fence, run: () => Promise<T>): Promise<T> {
  return fences.run(fence, run)
}

/** The fence of the run this write belongs to, if it is fenced (open-store.ts). */
export function currentFence (): Fence | undefined {
  return fences.getStore()
}

/** Runs `fn` outside any fence: for work a fenced run starts that is not its own (a shared write buffer's timer). */
export function unfenced<T> (fn: () => T): T {
  return fences.exit(fn)
}

/** The refusal of a fenced write: NO_STORE (the write is not made; the new leader's does it). */
export function notLeading (): EpxError {
  return new EpxError('NO_STORE', [], { cause: new Error('this instance no longer leads: a fenced write (publication, retention) is refused') })
}

/** The leadership of a store only one instance opens (LMDB): always this one, never changing. */
export const soleInstance: Leadership = Object.freeze({
  isLeader: () => true,
  onChange: () => () => {},
  fenced: <T>(run: () => Promise<T>) => run(),
})

/**
 * Runs `whenLeading` each time this instance takes the leadership (at once if it leads
 * already). What it starts must itself ask `isLeader()` before each step: the
 * leadership can go at any moment. Returns the unsubscribe.
 */
export function eachTakeover (leadership: Leadership, whenLeading: () => void): () => void {
  const off = leadership.onChange(leading => { if (leading) whenLeading() })
  if (leadership.isLeader()) whenLeading()
  return off
}
