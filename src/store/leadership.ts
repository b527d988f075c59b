/**
 * Which instance runs what must run once for all of them (the publication schedule and
 * retention), when several epx instances share one store (docs/operating.md, "Several
 * instances on one database"). The store decides: an LMDB store has one instance, always
 * the leader; a PostgreSQL store holds the leadership through the database
 * (postgres/leader.ts).
 * @module
 */

export interface Leadership {
  /** True while this instance leads. Sync: asked before each scheduled run. */
  isLeader(): boolean
  /**
   * Told each change, at once: `true` when this instance has taken the leadership,
   * `false` when it has lost it (it must stop leading work now). Returns the unsubscribe.
   */
  onChange(listener: (leading: boolean) => void): () => void
}

/** The leadership of a store only one instance opens (LMDB): always this one, never changing. */
export const soleInstance: Leadership = Object.freeze({
  isLeader: () => true,
  onChange: () => () => {},
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
