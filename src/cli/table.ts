/**
 * Plain-text tables for list commands: left-aligned columns, two spaces apart, a header
 * row in capitals. Easy to read and to `awk`.
 * @module
 */

/** Lines of a table; the first row is the header. */
export function formatTable (rows: ReadonlyArray<readonly string[]>): string[] {
  const widths: number[] = []
  for (const row of rows) row.forEach((cell, i) => { widths[i] = Math.max(widths[i] ?? 0, cell.length) })
  return rows.map(row => row.map((cell, i) => i === row.length - 1 ? cell : cell.padEnd(widths[i]!)).join('  ').trimEnd())
}

/**
 * A list command's output, one rule for all of them: `--json` prints the records (an
 * empty list too, for scripts), otherwise a table, or, when there is nothing, a
 * sentence that says so (and what to do, where there is something to do).
 */
export function printList<T> (
  out: (line: string) => void, json: boolean, records: readonly T[],
  view: { readonly empty: string; readonly header: readonly string[]; readonly row: (r: T) => readonly string[] },
): void {
  if (json) {
    out(JSON.stringify(records, null, 2))
    return
  }
  if (records.length === 0) {
    out(view.empty)
    return
  }
  for (const line of formatTable([view.header, ...records.map(view.row)])) out(line)
}
