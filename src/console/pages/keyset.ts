/**
 * Keyset pagination for the console's lists: rows in one total order (a text key per row,
 * unique), a page of at most `PAGE_SIZE` after or before a key carried in the URL (`after`,
 * `before`). A page is found by its key, not by an offset: rows that arrive between two
 * clicks land before or after the cursor, never shift a row onto the next page twice or
 * off it unseen.
 * @module
 */
export const PAGE_SIZE = 100

/** The longest cursor a URL may carry: a key is a few ids and an instant. */
const CURSOR_MAX = 300

export interface Cursor {
  readonly after?: string
  readonly before?: string
}

export interface KeysetPage<T> {
  readonly rows: readonly T[]
  /** The key to ask `before` for the previous page; undefined on the first. */
  readonly previous?: string
  /** The key to ask `after` for the next page; undefined on the last. */
  readonly next?: string
}

/** The cursor of a query, or what to fix. */
export function cursorOf (after: string | undefined, before: string | undefined): Cursor | { error: string } {
  if ((after?.length ?? 0) > CURSOR_MAX || (before?.length ?? 0) > CURSOR_MAX) return { error: `after et before : une clé de ${CURSOR_MAX} caractères au plus (celle d'un lien « page suivante » ou « page précédente »)` }
  if (after && before) return { error: 'after ou before, pas les deux : un lien de page porte l\'un des deux' }
  return { ...(after ? { after } : {}), ...(before ? { before } : {}) }
}

/** `rows` in key order (descending with `descending`), the page `at` names. */
export function keysetPage<T> (rows: readonly T[], keyOf: (row: T) => string, descending: boolean, at: Cursor, size = PAGE_SIZE): KeysetPage<T> {
  const keyed = rows.map(row => ({ row, key: keyOf(row) }))
  keyed.sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
  if (descending) keyed.reverse()
  // Rows strictly beyond `cursor` in the list's order.
  const beyond = (key: string, cursor: string) => descending ? key < cursor : key > cursor
  let from: number
  let to: number
  if (at.after !== undefined) {
    from = firstIndex(keyed, k => beyond(k.key, at.after!))
    to = Math.min(keyed.length, from + size)
  } else if (at.before !== undefined) {
    to = firstIndex(keyed, k => k.key === at.before || beyond(k.key, at.before!))
    from = Math.max(0, to - size)
  } else {
    from = 0
    to = Math.min(keyed.length, size)
  }
  const page = keyed.slice(from, to)
  return {
    rows: page.map(k => k.row),
    ...(from > 0 && page.length ? { previous: page[0]!.key } : {}),
    ...(to < keyed.length && page.length ? { next: page.at(-1)!.key } : {}),
  }
}

/** The first index whose entry passes `test` (entries in order, so a binary search); the length when none does. */
function firstIndex<T> (sorted: readonly T[], test: (entry: T) => boolean): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (test(sorted[mid]!)) hi = mid
    else lo = mid + 1
  }
  return lo
}
